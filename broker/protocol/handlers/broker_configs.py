"""BROKER resources of DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44), as Kafka 3.9's
ZooKeeper mode answers them (ConfigHelper, ZkAdminManager): a broker id names that broker (the request must reach
it), an empty name the cluster default. broker/broker_configs.py says which keys change at run time."""

from __future__ import annotations

from typing import Any

from broker.broker_configs import (
    DEFAULT,
    LOG_KEYS,
    QUOTA_KEYS,
    RECONFIGURABLE,
    listener_connection_key,
    listener_ssl_key,
    validate_dynamic,
)
from broker.config import ConfigError, default_synonym
from broker.config_defaults import broker_defaults
from broker.errors import ErrorCode, KafkaError
from broker.network.listener_reconfig import ResourceConfigError
from broker.network.listener_tls import is_password, split_listener_key
from broker.protocol.api import RequestContext
from broker.protocol.handlers.config_values import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    altered,
)
from broker.quota.connection_limits import validate_limits

TYPE_STRING, TYPE_LONG = 2, 5   # DescribeConfigsResponse.ConfigType


def _entity(ctx: RequestContext, name: str, describing: bool) -> str:
    """The stored entity a resource name means: this broker's id, or DEFAULT for the empty name."""
    if not name:
        return DEFAULT
    try:
        broker_id = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker.node_id:
        also = " or empty string" if describing else ""
        raise KafkaError(ErrorCode.invalid_request,
                         f"Unexpected broker id, expected {ctx.broker.node_id}{also}, but received {name}")
    return str(broker_id)


def _entry(name: str, value: str | None, source: int, config_type: int, synonyms: list[dict]) -> dict[str, Any]:
    """One described config. Kafka marks read-only every key outside DynamicBrokerConfig.AllDynamicConfigs: the
    log config defaults, max.connection.creation.rate and the listeners' SSL stores are in it, the replication
    throttle rates are not (they are quota configs). A password is never shown, nor are its synonyms."""
    sensitive = is_password(name)
    if sensitive:
        value, synonyms = None, [{**s, "value": None} for s in synonyms]
    dynamic = name in RECONFIGURABLE or listener_ssl_key(name) or listener_connection_key(name) is not None
    return {"name": name, "value": value, "read_only": not dynamic,
            "config_source": source, "is_sensitive": sensitive, "synonyms": synonyms, "config_type": config_type,
            "documentation": None}


def _synonym_names(key: str) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms: a listener's key has its key without the prefix as a synonym."""
    parts = split_listener_key(key)
    return [key, parts[1]] if parts is not None else [key]


def _default(name: str) -> tuple[str, str] | None:
    """The (name, value) of a key's KafkaConfig default synonym, if it has one that is not null."""
    if name in LOG_KEYS:
        return default_synonym(LOG_KEYS[name])
    value = broker_defaults().get(name)
    return (name, value) if value is not None else None


def describe(ctx: RequestContext, name: str, keys: set[str] | None, with_synonyms: bool) -> list[dict]:
    """A broker's configs (server.properties and the dynamic values stored, with where each value comes from), or
    for the empty name the cluster default's dynamic configs only (ConfigHelper.describeConfigs). A throttle rate
    set nowhere is not listed, as Kafka lists no quota key without a value. Synonyms come source by source, each
    with the key then its base key (Kafka's order)."""
    entity = _entity(ctx, name, describing=True)
    store = ctx.broker.metadata.broker_configs()
    default = store.get(DEFAULT)
    wanted = (lambda key: True) if not keys else (lambda key: key in keys)
    if entity == DEFAULT:
        layers = [(default, DYNAMIC_DEFAULT_BROKER_CONFIG)]
        candidates = set(default)
    else:
        own, static = store.get(entity), ctx.broker.config.static
        layers = [(own, DYNAMIC_BROKER_CONFIG), (default, DYNAMIC_DEFAULT_BROKER_CONFIG), (static, STATIC_BROKER_CONFIG)]
        candidates = set(static) | set(own) | set(default) | set(broker_defaults())
    out = []
    for key in sorted(candidates):
        if not wanted(key):
            continue
        names = _synonym_names(key)
        found = [(n, where[n], source) for where, source in layers for n in names if n in where]
        if entity != DEFAULT and found:   # a KafkaConfig key has its default as the last synonym
            found += [(*d, DEFAULT_CONFIG) for n in names if (d := _default(n)) is not None]
        elif entity != DEFAULT and (value := broker_defaults().get(key)) is not None:   # set nowhere
            found = [(key, value, DEFAULT_CONFIG)]
        if not found and key in QUOTA_KEYS:   # a quota key set nowhere is not listed
            continue
        synonyms = [{"name": n, "value": value, "source": source} for n, value, source in found]
        value, source = (found[0][1], found[0][2]) if found else (None, DEFAULT_CONFIG)   # null, as Kafka's
        out.append(_entry(key, value, source, TYPE_LONG if key in QUOTA_KEYS else TYPE_STRING,
                          synonyms if with_synonyms else []))
    return out


def alter(ctx: RequestContext, name: str, configs, incremental: bool, validate_only: bool) -> None:
    """Set a broker's (or the default's) dynamic configs: incrementally from what is stored, or replacing it
    whole (AlterConfigs). Every broker applies the change on its notification (ZkAdminManager.alterBrokerConfigs)."""
    entity = _entity(ctx, name, describing=False)
    store = ctx.broker.metadata.broker_configs()
    listeners = ctx.broker.listener_reconfig
    new = altered(listeners.decoded(store.get(entity)), configs, incremental)
    try:
        clean = validate_dynamic(new, per_broker=entity != DEFAULT)
        own, default, static = store.get(str(ctx.broker.node_id)), store.get(DEFAULT), ctx.broker.config.static
        validate_limits([own, clean, static] if entity == DEFAULT else [clean, default, static],
                        ctx.broker.listener_names())
        # Any alter of this broker reloads its listeners' store files rewritten in place
        # (DynamicBrokerConfig.reloadUpdatedFilesWithoutConfigChange), after Kafka's checks of the new stores.
        reloads = listeners.check(clean) if entity != DEFAULT else {}
        persistent = listeners.encoded(clean)
    except ResourceConfigError as e:
        raise KafkaError(ErrorCode.invalid_config,
                         f"Invalid config value for resource ConfigResource(type=BROKER, name='{name}'): {e}") from None
    except ConfigError as e:   # new key stores refused, in the words of a KafkaConfig rebuilt with them
        raise KafkaError(ErrorCode.invalid_request, f"Invalid value org.apache.kafka.common.config.ConfigException: "
                                                    f"{e} for configuration Invalid dynamic configuration") from None
    except ValueError as e:   # Kafka 3.9 answers these INVALID_REQUEST (DynamicBrokerConfig.validate)
        raise KafkaError(ErrorCode.invalid_request, str(e)) from None
    if not validate_only:
        # Reloaded before it is stored, as Kafka reloads: the store's change notification then finds the listeners
        # as they should be and loads nothing again.
        listeners.apply(clean, reloads)
        try:
            store.set(entity, persistent)
        except KafkaError:
            if reloads:   # not stored: back to the stores the stored configs name
                listeners.on_change(store.get(entity))
            raise
