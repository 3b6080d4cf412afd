"""ACLs in ZooKeeper, as Kafka's AclAuthorizer keeps them (broker/security/acl_zk.py has the layout).

`start` creates the ACL folders, loads every `/kafka-acl[-extended]` node into the AclStore and watches both
change paths; each new `acl_changes_N` node makes every broker re-read that one pattern's node. `persist`
writes the changed patterns' nodes (deleting an emptied one) and announces each change, as Kafka does.
Watch callbacks run on kazoo's thread; the store is updated on the event loop when there is one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from broker.security import acl_zk
from broker.security.acl import PatternType, ResourcePattern
from broker.security.authorizer import AclStore

log = logging.getLogger(__name__)


class ZkAclStorage:
    """The ACL cache of a cluster member, kept current from ZooKeeper."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        self.store = AclStore()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Load all ACLs and watch for changes (blocking; the client is connected)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        for path in acl_zk.acl_paths():
            self.zk.ensure_path(path)
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            root = acl_zk.acl_store_path(pattern_type)
            for rt in acl_zk.RESOURCE_TYPES:
                for name in self.zk.get_children(f"{root}/{rt.pascal_name}"):
                    self._reload(ResourcePattern(rt, name, pattern_type), apply_now=True)
        for change_path in (acl_zk.LITERAL_CHANGE_PATH, acl_zk.EXTENDED_CHANGE_PATH):
            self._seen[change_path] = set(self.zk.get_children(change_path))
            self.zk.ChildrenWatch(change_path, self._watcher(change_path))

    def _watcher(self, change_path: str) -> Callable[[list[str]], None]:
        def on_children(children: list[str]) -> None:
            with self._lock:
                new = sorted(set(children) - self._seen[change_path])
                self._seen[change_path] = set(children)
            for child in new:
                try:
                    data, _ = self.zk.get(f"{change_path}/{child}")
                    self._reload(acl_zk.parse_change_node(f"{change_path}/{child}", data))
                except NoNodeError:
                    continue   # purged meanwhile
                except Exception:
                    log.exception("ACL change notification %s/%s not applied", change_path, child)
        return on_children

    def _reload(self, pattern: ResourcePattern, apply_now: bool = False) -> None:
        """Re-read one pattern's node (kazoo's thread) and put its ACLs in the store (the loop's thread)."""
        try:
            data, _ = self.zk.get(acl_zk.acl_node_path(pattern))
        except NoNodeError:
            data = b""
        entries = acl_zk.parse_acl_node(data)
        if apply_now or self._loop is None or self._loop.is_closed():
            self.store.set_entries(pattern, entries)
        else:
            self._loop.call_soon_threadsafe(self.store.set_entries, pattern, entries)

    def persist(self, patterns: Iterable[ResourcePattern]) -> None:
        """Write each pattern's node (or delete it once empty), then its change notification."""
        for pattern in patterns:
            path = acl_zk.acl_node_path(pattern)
            entries = self.store.entries(pattern)
            if entries:
                data = acl_zk.acl_node_data(entries)
                try:
                    self.zk.create(path, data, makepath=True)
                except NodeExistsError:
                    self.zk.set(path, data)
            else:
                try:
                    self.zk.delete(path)
                except NoNodeError:
                    pass
            self.zk.create(acl_zk.change_path_prefix(pattern.pattern_type), acl_zk.change_node_data(pattern),
                           sequence=True, makepath=True)
