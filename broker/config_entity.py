"""Kafka's dynamic config entities in ZooKeeper, shared by SCRAM credentials, client quotas and broker configs.

An entity config is a znode `/config/<type>/<sanitized name>` (users/alice, clients/c1, users/alice/clients/c1)
holding {"version":1,"config":{...}}; every change is announced by a sequential `/config/changes/config_change_`
node {"version":2,"entity_path":"users/alice"}. `ConfigChangeListener` is Kafka's ZkNodeChangeNotificationListener
with DynamicConfigManager's dispatch: one watch on /config/changes, each new entity path handed to the subscribers
of its root type ("users", "clients", "brokers").
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote

from broker.controller.zk_paths import decode_entity_config, encode_entity_config

log = logging.getLogger(__name__)

CONFIG = "/config"
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
QUOTA_ROOTS = ("users", "clients", "ips")
CHANGE_EXPIRATION_MS = 15 * 60 * 1000   # ZkNodeChangeNotificationListener's changeExpirationMs   # the entity types whose empty znodes Kafka removes


def sanitize(name: str) -> str:
    """org.apache.kafka.common.utils.Sanitizer.sanitize: Java's URLEncoder, then `*`→%2A and `+`→%20.
    Java leaves only letters, digits and `.-_*` as they are; Python's quote also keeps `~`."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote(name)


def entity_config_path(entity_path: str) -> str:
    """The znode of an entity path such as "users/alice/clients/c1" (already sanitized)."""
    return f"{CONFIG}/{entity_path}"


def change_notification(entity_path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode("utf-8")


def notification_entity_path(data: bytes) -> str | None:
    """The entity path a change notification names: version 2's entity_path, or version 1's type and name."""
    note = json.loads(data.decode("utf-8"))
    if not isinstance(note, dict):
        return None
    if note.get("version") == 1 and isinstance(note.get("entity_type"), str) and isinstance(note.get("entity_name"),
                                                                                             str):
        return f"{note['entity_type']}/{note['entity_name']}"
    path = note.get("entity_path")
    return path if isinstance(path, str) else None


def announce(zk: Any, entity_path: str) -> None:
    """Create the sequential change notification every broker's listener picks up (zk: a connected KazooClient)."""
    zk.create(f"{CHANGES}/{CHANGE_PREFIX}", change_notification(entity_path), sequence=True, makepath=True)


def write_entity_config(zk: Any, entity_path: str, config: Mapping[str, str]) -> None:
    """AdminZkClient.changeEntityConfig as Kafka 3.9 does it (blocking): set or create the entity's znode; for a
    quota entity (users, clients) an empty config removes it instead, and with it the parents left empty
    (users/alice/clients above a last client-id, then users/alice when it holds no config), when nothing else is
    below; a broker's empty config stays as an empty znode. Then the change is announced."""
    from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError

    path = entity_config_path(entity_path)
    if config or entity_path.partition("/")[0] not in QUOTA_ROOTS:
        data = encode_entity_config(config)
        try:
            zk.set(path, data)
        except NoNodeError:
            try:
                zk.create(path, data, makepath=True)
            except NodeExistsError:
                zk.set(path, data)
    else:
        root, own = f"{CONFIG}/{entity_path.partition('/')[0]}", path
        while path != root:
            try:
                if path != own and decode_entity_config(zk.get(path)[0]):
                    break   # a parent that still holds a config of its own
                zk.delete(path)
            except NoNodeError:
                pass
            except NotEmptyError:
                break
            path = path.rpartition("/")[0]
    announce(zk, entity_path)


class Subscribers:
    """The callbacks told of a stored entity config's change. One's failure neither stops the others nor undoes
    the change. A change seen on kazoo's thread (`loop` given) is told on that event loop."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._callbacks: list[Callable[..., None]] = []

    def add(self, callback: Callable[..., None]) -> None:
        self._callbacks.append(callback)

    def notify(self, entity: Any, *more: Any) -> None:
        for callback in self._callbacks:
            try:
                callback(entity, *more)
            except Exception:   # a subscriber's bug must not undo a stored change
                log.exception("%s subscriber failed on %s", self._what, entity)

    def notify_on(self, loop: asyncio.AbstractEventLoop | None, entity: Any, *more: Any) -> None:
        if loop is None:
            self.notify(entity, *more)
        else:
            loop.call_soon_threadsafe(self.notify, entity, *more)


class ConfigChangeListener:
    """One watch on /config/changes for every dynamic config kind. Subscribers get the sanitized entity path after
    their root type ("alice" or "alice/clients/c1" for "users"); they run on kazoo's thread and must not block long.

    `start` remembers the notifications already there before the subscribers load their state, so a change made
    while they load is still delivered (as a refresh of something already current). After each round of changes
    the notifications older than 15 minutes are deleted, as Kafka's ZkNodeChangeNotificationListener purges them
    (every broker does; a node already gone is skipped), so /config/changes does not grow without end."""

    def __init__(self, zk: Any, now_ms: Callable[[], float] = lambda: time.time() * 1000) -> None:
        self._zk = zk
        self._now_ms = now_ms
        self._subscribers: dict[str, list[Callable[[str], None]]] = {}
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._started = False

    def subscribe(self, root_type: str, on_change: Callable[[str], None]) -> None:
        self._subscribers.setdefault(root_type, []).append(on_change)

    def snapshot(self) -> None:
        """Take the notifications present now as seen (blocking); call before loading, then `watch`."""
        self._zk.ensure_path(CHANGES)
        self._seen = set(self._zk.get_children(CHANGES))

    def watch(self) -> None:
        """Deliver every notification created since `snapshot` (blocking; once)."""
        if not self._started:
            self._started = True
            self._zk.ChildrenWatch(CHANGES, self._on_changes)

    def _on_changes(self, children: list[str]) -> None:
        with self._lock:
            new = sorted(set(children) - self._seen)
            self._seen = set(children)
        for child in new:
            try:
                data, _ = self._zk.get(f"{CHANGES}/{child}")
                entity_path = notification_entity_path(data)
            except Exception:   # purged meanwhile, or not a notification we can read
                continue
            if entity_path:
                self.dispatch(entity_path)
        self._purge(children)

    def _purge(self, children: list[str]) -> None:
        from kazoo.exceptions import NoNodeError

        oldest = self._now_ms() - CHANGE_EXPIRATION_MS
        for child in sorted(children):
            path = f"{CHANGES}/{child}"
            stat = self._zk.exists(path)
            if stat is not None and stat.ctime < oldest:
                try:
                    self._zk.delete(path)
                except NoNodeError:   # purged by another broker meanwhile
                    pass

    def dispatch(self, entity_path: str) -> None:
        root, _, rest = entity_path.partition("/")
        for on_change in self._subscribers.get(root, ()):
            try:
                on_change(rest)
            except Exception:   # one subscriber's failure must not stop the others or the watch
                log.exception("config change of %s", entity_path)
