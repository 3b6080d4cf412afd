"""Where client and IP quota configs are kept: ZooKeeper in a cluster (Kafka 3.9's layout), the metadata file
standalone.

Both keep what Kafka's ZooKeeper mode keeps: an entity config per `users/<u>`, `clients/<c>`,
`users/<u>/clients/<c>` and `ips/<ip>` entity path (names sanitized, the default spelled "<default>"), the quota
keys written as Kafka writes them (LONG and INT keys as whole numbers, DOUBLE keys as Java's Double.toString). In ZooKeeper a user's znode
also holds its SCRAM credentials; those keys are never touched here, and such a user is an entity with no quota
values (Kafka's DynamicConfigManager hands every user config to the quota managers at start).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from broker.config_entity import ConfigChangeListener, Subscribers, entity_config_path, write_entity_config
from broker.controller.zk_paths import decode_entity_config
from broker.quota.entity import ALL_KEY_TYPES, QuotaEntity, config_string, path_part

log = logging.getLogger(__name__)

QuotaValues = dict[str, float]
Subscriber = Callable[[QuotaEntity, QuotaValues], None]


class ClientQuotaStore(Protocol):
    """The quota configs DescribeClientQuotas reads, AlterClientQuotas writes and the quota managers follow."""

    def all(self) -> dict[QuotaEntity, QuotaValues]:
        """Every entity known, with its quota values (a user with only SCRAM credentials has none)."""

    def set(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quota keys (other keys of its config stay); raises KafkaError when not stored."""

    def subscribe(self, callback: Subscriber) -> None:
        """Call `callback(entity, its full quota values)` on the event loop after every change of an entity, made
        here or (in a cluster) by another broker."""


def quota_values(config: Mapping[str, str]) -> QuotaValues:
    """The quota keys of an entity config as doubles (ZkAdminManager.fromProps); unreadable values are left out."""
    out: QuotaValues = {}
    for key, text in config.items():
        if key in ALL_KEY_TYPES:
            try:
                out[key] = float(text)
            except ValueError:
                log.warning("quota config %s=%r is not a number: ignored", key, text)
    return out


def with_values(config: Mapping[str, str], values: Mapping[str, float]) -> dict[str, str]:
    """The entity config with its quota keys replaced by `values`."""
    kept = {k: v for k, v in config.items() if k not in ALL_KEY_TYPES}
    return {**kept, **{k: config_string(k, v) for k, v in values.items()}}


class LocalClientQuotas:
    """A standalone broker's quota configs: entity path -> config in the metadata file (its "client_quotas" key),
    written through `persist`, which raises KafkaError(KAFKA_STORAGE_ERROR) and keeps the old state when the disk
    cannot take it. `scram_users` names the users with SCRAM credentials: entities too, as their znodes would be."""

    def __init__(self, configs: Mapping[str, Mapping[str, str]],
                 persist: Callable[[dict[str, dict[str, str]]], None],
                 scram_users: Callable[[], Iterable[str]] = lambda: ()) -> None:
        self._configs = {path: dict(c) for path, c in configs.items()}
        self._persist = persist
        self._scram_users = scram_users
        self._subscribers = Subscribers("quota")

    def configs(self) -> dict[str, dict[str, str]]:
        """Entity path -> config, as the metadata file keeps them."""
        return {path: dict(c) for path, c in self._configs.items()}

    def all(self) -> dict[QuotaEntity, QuotaValues]:
        out: dict[QuotaEntity, QuotaValues] = {QuotaEntity(user=u): {} for u in self._scram_users()}
        for path, config in self._configs.items():
            entity = QuotaEntity.from_entity_path(path)
            if entity is not None:
                out[entity] = quota_values(config)
        return out

    def set(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        path = entity.entity_path()
        config = with_values(self._configs.get(path, {}), values)
        configs = {p: c for p, c in self._configs.items() if p != path}
        if config:
            configs[path] = config
        self._persist(configs)   # raises, changing nothing, when not written
        self._configs = configs
        self._subscribers.notify(entity, quota_values(config))

    def user_changed(self, user: str) -> None:
        """A user's SCRAM credentials changed (it may have become or stopped being an entity)."""
        entity = QuotaEntity(user=user)
        self._subscribers.notify(entity, quota_values(self._configs.get(entity.entity_path(), {})))

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.add(callback)


class ZkClientQuotas:
    """Quota configs in ZooKeeper, cached: `load` reads every entity znode (blocking, at start), the metadata's
    ConfigChangeListener delivers later changes (on kazoo's thread: each entity's entry is replaced whole, which
    readers on the event loop see atomically). Requests read the cache, never ZooKeeper; `set` writes through
    (a short blocking write, as the other ZooKeeper writes of the metadata store)."""

    USERS, CLIENTS, IPS = "/config/users", "/config/clients", "/config/ips"

    def __init__(self, zk: Any, changes: ConfigChangeListener) -> None:
        self._zk = zk
        self._cache: dict[QuotaEntity, QuotaValues] = {}
        self._lock = threading.Lock()   # one refresh at a time: a notification and a local write may race
        self._subscribers = Subscribers("quota")
        self._loop: asyncio.AbstractEventLoop | None = None
        changes.subscribe("users", lambda rest: self._refresh_path(f"users/{rest}"))
        changes.subscribe("clients", lambda rest: self._refresh_path(f"clients/{rest}"))
        changes.subscribe("ips", lambda rest: self._refresh_path(f"ips/{rest}"))

    def load(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Read every entity (blocking); subscribers are then called on `loop` (directly without one)."""
        self._loop = loop
        cache: dict[QuotaEntity, QuotaValues] = {}
        for user in self._children(self.USERS):
            cache[QuotaEntity(user=path_part(user))] = self._read(f"users/{user}") or {}
            for client in self._children(f"{self.USERS}/{user}/clients"):
                values = self._read(f"users/{user}/clients/{client}")
                if values is not None:
                    cache[QuotaEntity(user=path_part(user), client_id=path_part(client))] = values
        for client in self._children(self.CLIENTS):
            values = self._read(f"clients/{client}")
            if values is not None:
                cache[QuotaEntity(client_id=path_part(client))] = values
        for ip in self._children(self.IPS):
            values = self._read(f"ips/{ip}")
            if values is not None:
                cache[QuotaEntity(ip=path_part(ip))] = values
        self._cache = cache

    def _children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return list(self._zk.get_children(path))
        except NoNodeError:
            return []

    def _config(self, entity_path: str) -> dict[str, str] | None:
        """The entity's whole config; None when its znode does not exist."""
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._zk.get(entity_config_path(entity_path))
        except NoNodeError:
            return None
        return decode_entity_config(data)

    def _read(self, entity_path: str) -> QuotaValues | None:
        config = self._config(entity_path)
        return None if config is None else quota_values(config)

    def _refresh_path(self, entity_path: str) -> None:
        entity = QuotaEntity.from_entity_path(entity_path)
        if entity is not None:
            self._refresh(entity, remote=True)

    def _refresh(self, entity: QuotaEntity, remote: bool) -> None:
        with self._lock:
            values = self._read(entity.entity_path())
            before = self._cache.get(entity)
            if values is None:
                self._cache.pop(entity, None)
            else:
                self._cache[entity] = values
        if values != before:   # our own change comes back as a notification: told once
            self._subscribers.notify_on(self._loop if remote else None, entity, dict(values or {}))


    def all(self) -> dict[QuotaEntity, QuotaValues]:
        return {entity: dict(values) for entity, values in list(self._cache.items())}

    def set(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        path = entity.entity_path()
        write_entity_config(self._zk, path, with_values(self._config(path) or {}, values))
        self._refresh(entity, remote=False)   # this broker at once; the others on the notification

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.add(callback)
