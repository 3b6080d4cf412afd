"""BROKER resources of DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44), as Kafka 3.9's
ZooKeeper mode answers them (ConfigHelper, ZkAdminManager): a broker id names that broker (the request must reach
it), an empty name the cluster default. broker/broker_configs.py says which keys change at run time."""

from __future__ import annotations

from typing import Any

from broker.broker_configs import (
    DEFAULT,
    INT_MAX,
    LOG_KEYS,
    MAX_CONNECTION_CREATION_RATE,
    QUOTA_KEYS,
    RECONFIGURABLE,
    listener_ssl_key,
    validate_dynamic,
)
from broker.config import ConfigError, default_synonym
from broker.errors import ErrorCode, KafkaError
from broker.network.listener_reconfig import ResourceConfigError
from broker.network.listener_tls import is_password
from broker.protocol.api import RequestContext
from broker.protocol.handlers.config_values import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    altered,
)

TYPE_STRING, TYPE_LONG = 2, 5   # DescribeConfigsResponse.ConfigType
SSL_DEFAULTS = {"ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS"}   # SslConfigs' defaults that are not null


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
    return {"name": name, "value": value, "read_only": name not in RECONFIGURABLE and not listener_ssl_key(name),
            "config_source": source, "is_sensitive": sensitive, "synonyms": synonyms, "config_type": config_type,
            "documentation": None}


def describe(ctx: RequestContext, name: str, keys: set[str] | None, with_synonyms: bool) -> list[dict]:
    """A broker's configs (server.properties and the dynamic values stored, with where each value comes from), or
    for the empty name the cluster default's dynamic configs only (ConfigHelper.describeConfigs). A throttle rate
    set nowhere is not listed, as Kafka lists no quota key without a value."""
    entity = _entity(ctx, name, describing=True)
    store = ctx.broker.metadata.broker_configs()
    default = store.get(DEFAULT)
    wanted = (lambda key: True) if not keys else (lambda key: key in keys)
    if entity == DEFAULT:
        return [_entry(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG, TYPE_LONG if k in QUOTA_KEYS else TYPE_STRING,
                       [{"name": k, "value": v, "source": DYNAMIC_DEFAULT_BROKER_CONFIG}] if with_synonyms else [])
                for k, v in sorted(default.items()) if wanted(k)]
    own, static = store.get(entity), ctx.broker.config.static
    out = []
    for key in sorted(set(static) | set(own) | set(default)):
        if not wanted(key):
            continue
        layers = [(own, DYNAMIC_BROKER_CONFIG), (default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (static, STATIC_BROKER_CONFIG)]
        found = [(key, where[key], source) for where, source in layers if key in where]
        if listener_ssl_key(key):   # brokerConfigSynonyms: the key without its listener prefix follows
            base = key.split(".", 3)[3]
            found += [(base, static[base], STATIC_BROKER_CONFIG)] if base in static else []
            found += [(base, SSL_DEFAULTS[base], DEFAULT_CONFIG)] if base in SSL_DEFAULTS else []
        elif key in LOG_KEYS:   # a KafkaConfig key has its default as the last synonym
            found.append((*default_synonym(LOG_KEYS[key]), DEFAULT_CONFIG))
        elif key == MAX_CONNECTION_CREATION_RATE:
            found.append((key, str(INT_MAX), DEFAULT_CONFIG))
        synonyms = [{"name": name, "value": value, "source": source} for name, value, source in found]
        out.append(_entry(key, found[0][1], found[0][2], TYPE_LONG if key in QUOTA_KEYS else TYPE_STRING,
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
        store.set(entity, persistent)
        listeners.apply(clean, reloads)
