"""ACLs in ZooKeeper, as Kafka's AclAuthorizer keeps them (broker/security/acl_zk.py has the layout).

`start` creates the ACL folders, loads every `/kafka-acl[-extended]` node into the AclStore and watches both
change paths; each new `acl_changes_N` node makes every broker re-read that one pattern's node. `add` and
`remove` update a pattern's node conditionally on its version (retrying after a concurrent write, deleting
an emptied node) and announce the change, as Kafka's AclAuthorizer.updateResourceAcls does.
Watch callbacks run on kazoo's thread; the store is updated on the event loop when there is one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.security import acl_zk
from broker.security.acl import AccessControlEntry, AclBinding, AclBindingFilter, PatternType, ResourcePattern
from broker.security.authorizer import AclStore

log = logging.getLogger(__name__)
_MAX_UPDATE_RETRIES = 10   # AclAuthorizer's maxUpdateRetries
CHANGE_EXPIRATION_S = 15 * 60   # ZkNodeChangeNotificationListener's changeExpirationMs


class ZkAclStorage:
    """The ACL cache of a cluster member, kept current from ZooKeeper."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        self.store = AclStore()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self.change_expiration_s = CHANGE_EXPIRATION_S

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
            if new:
                self._purge(change_path, children)
        return on_children

    def _purge(self, change_path: str, children: list[str]) -> None:
        """ZkNodeChangeNotificationListener.purgeObsoleteNotifications: every broker deletes the change nodes
        older than `change_expiration_s` (Kafka: 15 minutes) once it has processed new ones."""
        horizon_ms = (time.time() - self.change_expiration_s) * 1000
        for child in children:
            path = f"{change_path}/{child}"
            try:
                stat = self.zk.exists(path)
                if stat is not None and stat.ctime <= horizon_ms:
                    self.zk.delete(path)
            except NoNodeError:
                pass   # another broker purged it

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

    def add(self, bindings: Iterable[AclBinding]) -> set[ResourcePattern]:
        """CreateAcls: each pattern's node gets the new entries; the patterns that changed."""
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        return {p for p, new in by_pattern.items() if self._update(p, new.union)}

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        """DeleteAcls: the patterns the cache says match, each node filtered in ZooKeeper."""
        removed: list[AclBinding] = []
        for pattern in dict.fromkeys(b.pattern for b in self.store.acls(flt)):
            gone: set[AccessControlEntry] = set()

            def keep(cur: set[AccessControlEntry], pattern: ResourcePattern = pattern,
                     gone: set[AccessControlEntry] = gone) -> set[AccessControlEntry]:
                gone.clear()
                gone.update(e for e in cur if flt.matches(AclBinding(pattern, e)))
                return cur - gone
            self._update(pattern, keep)
            removed += sorted((AclBinding(pattern, e) for e in gone), key=repr)
        return removed

    def _update(self, pattern: ResourcePattern,
                change: Callable[[set[AccessControlEntry]], set[AccessControlEntry]]) -> bool:
        """AclAuthorizer.updateResourceAcls: read, change, write conditionally on the node's version (again
        after a concurrent write), then announce the change. True if the pattern's ACLs changed."""
        path = acl_zk.acl_node_path(pattern)
        for _ in range(_MAX_UPDATE_RETRIES):
            try:
                data, stat = self.zk.get(path)
                current, version = acl_zk.parse_acl_node(data), stat.version
            except NoNodeError:
                current, version = set(), None
            new = change(set(current))
            try:
                if new != current and not new:
                    self.zk.delete(path, version=-1 if version is None else version)
                elif new != current and version is None:
                    self.zk.create(path, acl_zk.acl_node_data(new), makepath=True)
                elif new != current:
                    self.zk.set(path, acl_zk.acl_node_data(new), version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue   # another broker wrote it meanwhile: read again
            self.store.set_entries(pattern, new)
            if new != current:
                self.zk.create(acl_zk.change_path_prefix(pattern.pattern_type), acl_zk.change_node_data(pattern),
                               sequence=True, makepath=True)
            return new != current
        raise RuntimeError(f"Failed to update ACLs for {pattern} after {_MAX_UPDATE_RETRIES} tries")
