"""ACLs in a real ZooKeeper: Kafka's node layout, loading at start and change notifications between brokers."""

from __future__ import annotations

import itertools
import json

from kazoo.client import KazooClient

from broker.controller.acl_watch import ZkAclStorage
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from common.polling import wait_until
from tests.controller.conftest import zk_server  # noqa: F401  (the session's ZooKeeper)

_chroots = itertools.count()
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
SALES = ResourcePattern(ResourceType.TOPIC, "sales.", PatternType.PREFIXED)


def entry(principal: str, op: AclOperation) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)


def acl_nodes(zk: KazooClient, path: str) -> list[dict]:
    return json.loads(zk.get(path)[0])["acls"]


def storage(zk_server, chroot: str) -> tuple[KazooClient, ZkAclStorage]:  # noqa: F811
    zk = KazooClient(hosts=zk_server.connect(chroot))
    zk.start(timeout=10)
    s = ZkAclStorage(zk)
    s.start()
    return zk, s


def test_layout_load_and_notifications(zk_server) -> None:  # noqa: F811
    root = KazooClient(hosts=zk_server.connect())
    root.start(timeout=10)
    chroot = f"/authz-t{next(_chroots)}"
    root.ensure_path(chroot)
    zk_a, a = storage(zk_server, chroot)
    zk_b, b = storage(zk_server, chroot)
    try:
        assert a.add([AclBinding(ORDERS, entry("User:alice", AclOperation.WRITE)),
                      AclBinding(SALES, entry("User:bob", AclOperation.READ))]) == {ORDERS, SALES}
        data, _ = zk_a.get("/kafka-acl/Topic/orders")
        assert json.loads(data) == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
        assert zk_a.exists("/kafka-acl-extended/prefixed/Topic/sales.")
        assert zk_a.get_children("/kafka-acl-changes") and zk_a.get_children("/kafka-acl-extended-changes")
        wait_until(lambda: len(b.store) == 2, timeout_s=10)
        # b writes "orders" with a stale cache: the conditional read-modify-write keeps alice's entry
        b.store.set_entries(ORDERS, set())
        b.add([AclBinding(ORDERS, entry("User:carol", AclOperation.READ))])
        assert len(acl_nodes(zk_b, "/kafka-acl/Topic/orders")) == 2
        removed = b.remove(AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders")))
        assert len(removed) == 2
        assert not zk_b.exists("/kafka-acl/Topic/orders")
        wait_until(lambda: len(a.store) == 1, timeout_s=10)
        # a broker starting now loads what is there
        zk_c, c = storage(zk_server, chroot)
        assert [x.pattern for x in c.store.acls()] == [SALES]
        zk_c.stop()
    finally:
        for zk in (zk_a, zk_b, root):
            zk.stop()


def test_processed_change_nodes_are_purged_once_expired(zk_server) -> None:  # noqa: F811
    root = KazooClient(hosts=zk_server.connect())
    root.start(timeout=10)
    chroot = f"/authz-t{next(_chroots)}"
    root.ensure_path(chroot)
    zk_a, a = storage(zk_server, chroot)
    zk_b, b = storage(zk_server, chroot)
    try:
        b.change_expiration_s = 0
        a.add([AclBinding(ORDERS, entry("User:alice", AclOperation.WRITE))])
        wait_until(lambda: len(b.store) == 1, timeout_s=10)   # b applied it, then purged it
        wait_until(lambda: zk_a.get_children("/kafka-acl-changes") == [], timeout_s=10)
    finally:
        for zk in (zk_a, zk_b, root):
            zk.stop()
