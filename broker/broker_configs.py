"""Dynamic broker configs (KIP-226): what `kafka-configs.sh --entity-type brokers` sets, per broker or as the
cluster default, and which keys this broker takes without a restart.

Stored as Kafka 3.9's ZooKeeper mode keeps them: `/config/brokers/<id>` and `/config/brokers/<default>`, each
{"version":1,"config":{...}}, every change announced as `brokers/<id>` on /config/changes; standalone, in the
metadata file ("broker_configs"). The keys served dynamically are the replication throttles
(broker/quota/replication.py) and the log config defaults (`log.retention.ms`, `unclean.leader.election.enable`,
... : the broker synonyms of the topic configs, Kafka's DynamicLogConfig), which topics without their own value
take at once, `max.connection.creation.rate`, and per broker the TLS listeners' key stores
(`listener.name.<l>.ssl.keystore.location`, ...: broker/network/listener_reconfig.py); Kafka's other dynamic keys
(thread pools, log cleaner, ...) are refused by name, with server.properties as the place to set them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from broker.config import TOPIC_CONFIGS, ConfigError, TopicConfigSpec
from broker.config_entity import ConfigChangeListener, Subscribers, entity_config_path, write_entity_config
from broker.controller.zk_paths import decode_entity_config
from broker.network.listener_tls import RECONFIGURABLE as SSL_RECONFIGURABLE
from broker.network.listener_tls import split_listener_key
from broker.quota.connection_limits import (
    INT_MAX,
    LISTENER_KEYS,
    MAX_CONNECTIONS,
    MAX_PER_IP,
    MAX_PER_IP_OVERRIDES,
    layered,
    parse_overrides,
)
from broker.quota.connection_limits import MAX_CREATION_RATE as MAX_CONNECTION_CREATION_RATE
from broker.quota.replication import ALTER_LOG_DIRS_RATE, FOLLOWER_RATE, LEADER_RATE

DEFAULT = "<default>"          # ZooKeeperInternals.DEFAULT_STRING: the cluster-wide entity
# The quota keys served: LONG, at least 0 (QuotaConfigs.brokerQuotaConfigs).
QUOTA_KEYS = (LEADER_RATE, FOLLOWER_RATE, ALTER_LOG_DIRS_RATE)
# The log config defaults (DynamicLogConfig): each broker synonym of a topic config, e.g. log.retention.ms.
LOG_KEYS: dict[str, TopicConfigSpec] = {spec.broker_key: spec for spec in TOPIC_CONFIGS.values() if spec.broker_key}
# SocketServer's and DynamicConnectionQuota's: how many connections, per broker, per address (INT, at least 0).
CONNECTION_KEYS = (MAX_CONNECTIONS, MAX_PER_IP, MAX_CONNECTION_CREATION_RATE)
PRODUCER_ID_EXPIRATION = "producer.id.expiration.ms"   # DynamicProducerStateManagerConfig's (INT, at least 1)
DYNAMIC_KEYS = (*QUOTA_KEYS, *LOG_KEYS, *CONNECTION_KEYS, MAX_PER_IP_OVERRIDES, PRODUCER_ID_EXPIRATION)
# DynamicBrokerConfig.AllDynamicConfigs among them (not read-only when described); the quota keys are not.
RECONFIGURABLE = frozenset({*LOG_KEYS, *CONNECTION_KEYS, MAX_PER_IP_OVERRIDES, PRODUCER_ID_EXPIRATION})
UNCLEAN = "unclean.leader.election.enable"
Subscriber = Callable[[str], None]


def listener_connection_key(key: str) -> str | None:
    """`listener.name.<l>.max.connections` / `.max.connection.creation.rate`: the base key, else None."""
    parts = split_listener_key(key)
    return parts[1] if parts is not None and parts[1] in LISTENER_KEYS else None


def listener_ssl_key(key: str) -> bool:
    """`listener.name.<l>.ssl.keystore.location` and the other keys a TLS listener reloads (per broker only)."""
    parts = split_listener_key(key)
    return parts is not None and parts[1] in SSL_RECONFIGURABLE


def _names(keys: list[str], kind: str = "Set") -> str:
    """A Scala set as Kafka's messages print it."""
    return f"{kind}({', '.join(sorted(keys))})"


def validate_dynamic(configs: Mapping[str, str | None], per_broker: bool = True) -> dict[str, str]:
    """The values to store for a broker entity (per broker, or the cluster default); raises ValueError naming the
    first key not served or not valid, in DynamicBrokerConfig.validateConfigs' order."""
    unknown = [k for k in configs if k not in DYNAMIC_KEYS and k not in SSL_RECONFIGURABLE and not listener_ssl_key(k)
               and not listener_connection_key(k)]
    if unknown:   # Kafka's message, then why: Kafka also takes its other dynamic keys (and unknown ones) here
        raise ValueError(f"Cannot update these configs dynamically: {_names(unknown)} (this broker changes only "
                         "the replication throttle rates, the log config defaults, the connection limits and rates "
                         "and the listeners' SSL key stores at run time; set the others in server.properties)")
    if bare := [k for k in configs if k in SSL_RECONFIGURABLE]:
        raise ValueError("These security configs can be dynamically updated only per-listener using the listener "
                         f"prefix: {_names(bare, 'HashSet')}")
    if not per_broker and (listener := [k for k in configs if listener_ssl_key(k)]):
        raise ValueError(f"Cannot update these configs at default cluster level, broker id must be specified: "
                         f"{_names(listener)}")
    out = {}
    for key, value in configs.items():
        if listener_ssl_key(key):   # checked by loading them (broker/network/listener_tls.py)
            out[key] = value or ""
            continue
        text = (value or "").strip()
        if key == MAX_PER_IP_OVERRIDES:
            parse_overrides(text)
            out[key] = text
            continue
        if key in LOG_KEYS:
            try:
                LOG_KEYS[key].parse(text)
            except ValueError as e:
                raise ValueError(f"Invalid value {text} for configuration {key}: {e}") from None
            out[key] = text
            continue
        # A listener's key is checked as its base key, and named so (DynamicBrokerConfig.validateConfigTypes); a
        # listener's max.connections only when the listener's quota is rebuilt, so Kafka's message is wrapped
        # (ConfigError: the caller's "Invalid dynamic configuration").
        name = listener_connection_key(key) or key
        error = ConfigError if name == MAX_CONNECTIONS and name != key else ValueError
        kind = "INT" if name in CONNECTION_KEYS or name == PRODUCER_ID_EXPIRATION else "LONG"
        try:
            number = int(text)
        except ValueError:
            raise error(f"Invalid value {text} for configuration {name}: Not a number of type {kind}") from None
        if kind == "INT" and number > INT_MAX:
            raise error(f"Invalid value {text} for configuration {name}: Not a number of type INT")
        least = 1 if name == PRODUCER_ID_EXPIRATION else 0
        if number < least:
            raise error(f"Invalid value {number} for configuration {name}: Value must be at least {least}")
        out[key] = str(number)
    return out


def dynamic_topic_defaults(own: Mapping[str, str], default: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Topic config name -> (value, source) of the log config defaults set dynamically: this broker's value
    ("dynamic_broker"), else the cluster default's ("dynamic_default")."""
    out = {}
    for key, spec in LOG_KEYS.items():
        if key in own:
            out[spec.name] = (own[key], "dynamic_broker")
        elif key in default:
            out[spec.name] = (default[key], "dynamic_default")
    return out


def dynamic_value(store: BrokerConfigStore, broker_id: int, key: str) -> str | None:
    """A key's dynamic value for this broker: its own, else the cluster default's (None: set at neither)."""
    return layered([store.get(str(broker_id)), store.get(DEFAULT)], key)


def dynamic_unclean_default(store: BrokerConfigStore, broker_id: int, static: bool) -> bool:
    """unclean.leader.election.enable as the controller's broker default: dynamic if set, else static."""
    value = dynamic_value(store, broker_id, UNCLEAN)
    return static if value is None else value.strip().lower() == "true"


class BrokerConfigStore(Protocol):
    """The dynamic configs of every broker entity (a broker id, or DEFAULT)."""

    def get(self, entity: str) -> dict[str, str]:
        """The entity's stored configs (empty when none)."""

    def set(self, entity: str, configs: Mapping[str, str]) -> None:
        """Replace the entity's configs (empty: remove them); raises KafkaError when not stored."""

    def subscribe(self, callback: Subscriber) -> None:
        """Call `callback(entity)` on the event loop after every change, made here or by another broker."""


class LocalBrokerConfigs:
    """A standalone broker's dynamic configs, written through `persist` (which raises KafkaError and keeps the old
    state when the disk cannot take them)."""

    def __init__(self, configs: Mapping[str, Mapping[str, str]],
                 persist: Callable[[dict[str, dict[str, str]]], None]) -> None:
        self._configs = {entity: dict(c) for entity, c in configs.items()}
        self._persist = persist
        self._subscribers = Subscribers("broker config")

    def configs(self) -> dict[str, dict[str, str]]:
        return {entity: dict(c) for entity, c in self._configs.items()}

    def get(self, entity: str) -> dict[str, str]:
        return dict(self._configs.get(entity, {}))

    def set(self, entity: str, configs: Mapping[str, str]) -> None:
        new = {e: c for e, c in self._configs.items() if e != entity}
        if configs:
            new[entity] = dict(configs)
        self._persist(new)
        self._configs = new
        self._subscribers.notify(entity)

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.add(callback)


class ZkBrokerConfigs:
    """/config/brokers in ZooKeeper, cached: `load` reads every entity (blocking, at start), change notifications
    refresh one entity (on kazoo's thread; subscribers are then called on the event loop)."""

    ROOT = "/config/brokers"

    def __init__(self, zk: Any, changes: ConfigChangeListener) -> None:
        self._zk = zk
        self._cache: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._subscribers = Subscribers("broker config")
        self._loop: asyncio.AbstractEventLoop | None = None
        changes.subscribe("brokers", lambda entity: self._refresh(entity, remote=True))

    def load(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        from kazoo.exceptions import NoNodeError

        self._loop = loop
        try:
            entities = list(self._zk.get_children(self.ROOT))
        except NoNodeError:
            entities = []
        cache = {}
        for entity in entities:
            configs = self._read(entity)
            if configs:
                cache[entity] = configs
        self._cache = cache

    def _read(self, entity: str) -> dict[str, str]:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._zk.get(entity_config_path(f"brokers/{entity}"))
        except NoNodeError:
            return {}
        return decode_entity_config(data)

    def _refresh(self, entity: str, remote: bool) -> None:
        with self._lock:
            configs = self._read(entity)
            before = self._cache.get(entity, {})
            if configs:
                self._cache[entity] = configs
            else:
                self._cache.pop(entity, None)
        if configs != before:   # our own change comes back as a notification: told once
            self._subscribers.notify_on(self._loop if remote else None, entity)

    def get(self, entity: str) -> dict[str, str]:
        return dict(self._cache.get(entity, {}))

    def set(self, entity: str, configs: Mapping[str, str]) -> None:
        write_entity_config(self._zk, f"brokers/{entity}", dict(configs))
        self._refresh(entity, remote=False)

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.add(callback)
