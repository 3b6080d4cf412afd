"""ACL model, AclAuthorizer decisions, filters and Kafka's ZooKeeper formats."""

import json

import pytest

from broker.security import acl_zk
from broker.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    host_address,
    parse_super_users,
    unsupported_operation,
    validate_new_acl,
)
from broker.security.authorizer import AclAuthorizer, AclStore

Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
ALICE, BOB, ADMIN = KafkaPrincipal.user("alice"), KafkaPrincipal.user("bob"), KafkaPrincipal.user("admin")


def acl(name, principal, op, perm=Perm.ALLOW, rt=RT.TOPIC, pt=PT.LITERAL, host="*"):
    return AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(principal, host, op, perm))


def test_wire_codes_are_kafkas():
    assert [t.code for t in (RT.UNKNOWN, RT.ANY, RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID,
                             RT.DELEGATION_TOKEN, RT.USER)] == list(range(8))
    assert (PT.ANY.code, PT.MATCH.code, PT.LITERAL.code, PT.PREFIXED.code) == (1, 2, 3, 4)
    assert (Op.ALL.code, Op.READ.code, Op.DESCRIBE.code, Op.CLUSTER_ACTION.code, Op.IDEMPOTENT_WRITE.code,
            Op.DESCRIBE_TOKENS.code) == (2, 3, 8, 9, 12, 14)
    assert (Perm.DENY.code, Perm.ALLOW.code) == (2, 3)
    assert Op.from_code(99) is Op.UNKNOWN and RT.from_code(5) is RT.TRANSACTIONAL_ID
    assert RT.TRANSACTIONAL_ID.pascal_name == "TransactionalId"
    assert Op.from_pascal("IdempotentWrite") is Op.IDEMPOTENT_WRITE
    with pytest.raises(ValueError):
        Op.from_pascal("Any")


def test_principals_and_super_users():
    assert KafkaPrincipal.parse("User:CN=a,O=b") == KafkaPrincipal("User", "CN=a,O=b")
    with pytest.raises(ValueError):
        KafkaPrincipal.parse("alice")
    assert parse_super_users("User:admin; User:CN=x,O=y") == {ADMIN, KafkaPrincipal("User", "CN=x,O=y")}


def test_host_address_is_javas_spelling():
    assert host_address("10.1.2.3") == "10.1.2.3"
    assert host_address("::1") == "0:0:0:0:0:0:0:1"
    assert host_address("::ffff:127.0.0.1") == "127.0.0.1"
    assert host_address("fe80::1%eth0") == "fe80:0:0:0:0:0:0:1"


def _authz(*bindings, allow_everyone=False):
    return AclAuthorizer(AclStore(bindings), frozenset({ADMIN}), allow_everyone)


def test_no_acl_follows_allow_everyone_and_any_acl_on_resource_counts():
    assert not _authz().authorize(ALICE, "1.2.3.4", Op.READ, RT.TOPIC, "t")
    assert _authz(allow_everyone=True).authorize(ALICE, "1.2.3.4", Op.READ, RT.TOPIC, "t")
    # An ACL for bob on the topic means the default no longer applies to alice.
    a = _authz(acl("t", "User:bob", Op.READ), allow_everyone=True)
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")
    assert a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "other")
    # ... and a prefixed ACL covering the name counts too; another resource type does not.
    a = _authz(acl("t", "User:bob", Op.READ, pt=PT.PREFIXED), acl("t", "User:bob", Op.READ, rt=RT.GROUP),
               allow_everyone=True)
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "tx")
    assert a.authorize(ALICE, "h", Op.READ, RT.TRANSACTIONAL_ID, "t")


def test_super_user_passes_even_a_deny():
    a = _authz(acl("t", "User:*", Op.ALL, Perm.DENY))
    assert a.authorize(ADMIN, "h", Op.WRITE, RT.TOPIC, "t")
    assert not a.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "t")


def test_deny_wins_and_is_exact_on_operation():
    a = _authz(acl("t", "User:alice", Op.ALL), acl("t", "User:alice", Op.WRITE, Perm.DENY))
    assert a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")
    assert not a.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "t")
    a = _authz(acl("t", "User:alice", Op.READ), acl("t", "User:alice", Op.READ, Perm.DENY))
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")
    # A DENY applies to its own operation only: no DESCRIBE deny exists, and the READ allow implies
    # DESCRIBE, so Kafka (AclAuthorizer and StandardAuthorizer alike) allows DESCRIBE here.
    assert a.authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")
    assert not _authz(acl("t", "User:alice", Op.READ), acl("t", "User:*", Op.DESCRIBE, Perm.DENY)) \
        .authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")


def test_implied_operations():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert _authz(acl("t", "User:alice", op)).authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")
    assert not _authz(acl("t", "User:alice", Op.CREATE)).authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")
    assert _authz(acl("t", "User:alice", Op.ALTER_CONFIGS)).authorize(
        ALICE, "h", Op.DESCRIBE_CONFIGS, RT.TOPIC, "t")
    assert not _authz(acl("t", "User:alice", Op.DESCRIBE)).authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")
    assert not _authz(acl("t", "User:alice", Op.ALTER)).authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, RT.TOPIC, "t")


def test_patterns_wildcards_principals_and_hosts():
    a = _authz(acl("fin-", "User:alice", Op.READ, pt=PT.PREFIXED), acl("*", "User:*", Op.DESCRIBE),
               acl("t", "User:bob", Op.WRITE, host="10.0.0.1"))
    assert a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "fin-payments")
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "fi")
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "*x")          # `*` is no prefix wildcard
    assert a.authorize(BOB, "h", Op.DESCRIBE, RT.TOPIC, "anything")       # literal `*`, principal User:*
    assert a.authorize(BOB, "10.0.0.1", Op.WRITE, RT.TOPIC, "t")
    assert not a.authorize(BOB, "10.0.0.2", Op.WRITE, RT.TOPIC, "t")
    assert not a.authorize(KafkaPrincipal("Group", "alice"), "h", Op.READ, RT.TOPIC, "fin-x")


def test_prefixed_deny_overrides_literal_allow():
    a = _authz(acl("secret-x", "User:alice", Op.READ), acl("secret-", "User:*", Op.READ, Perm.DENY, pt=PT.PREFIXED))
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "secret-x")


def test_authorize_by_resource_type():
    a = _authz(acl("t", "User:alice", Op.WRITE))
    assert a.authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)
    assert not a.authorize_by_resource_type(BOB, "h", Op.WRITE, RT.TOPIC)
    assert a.authorize_by_resource_type(ADMIN, "h", Op.WRITE, RT.TOPIC)
    # a literal allow shadowed by a literal deny of the same name, or a prefixed deny covering it
    assert not _authz(acl("t", "User:alice", Op.WRITE), acl("t", "User:alice", Op.WRITE, Perm.DENY)) \
        .authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)
    assert not _authz(acl("tx", "User:alice", Op.WRITE), acl("t", "User:*", Op.ALL, Perm.DENY, pt=PT.PREFIXED)) \
        .authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)
    # a wildcard deny wins over a wildcard allow whatever the order
    assert not _authz(acl("*", "User:alice", Op.WRITE), acl("*", "User:alice", Op.WRITE, Perm.DENY)) \
        .authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)
    assert _authz(allow_everyone=True).authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)


def test_authorized_operations_bitfield():
    a = _authz(acl("t", "User:alice", Op.READ))
    bits = a.authorized_operations(ALICE, "h", RT.TOPIC, "t", [Op.READ, Op.WRITE, Op.DESCRIBE])
    assert bits == (1 << 3) | (1 << 8)


def test_store_add_remove_and_filters():
    store = AclStore()
    b1 = acl("t", "User:alice", Op.READ)
    b2 = acl("t-", "User:bob", Op.WRITE, pt=PT.PREFIXED)
    b3 = acl("*", "User:carol", Op.DESCRIBE, Perm.DENY)
    b4 = acl("g", "User:alice", Op.READ, rt=RT.GROUP)
    assert store.add([b1, b2, b3, b4, b1]) == {b.pattern for b in (b1, b2, b3, b4)}
    assert store.add([b1]) == set() and len(store) == 4
    match_t1 = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "t-1", PT.MATCH))
    assert set(store.acls(match_t1)) == {b2, b3}
    match_t = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "t", PT.MATCH))
    assert set(store.acls(match_t)) == {b1, b3}
    assert set(store.acls(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "t-1", PT.ANY)))) == set()
    assert set(store.acls(AclBindingFilter(ResourcePatternFilter(RT.ANY, "t-", PT.PREFIXED)))) == {b2}
    assert set(store.acls(AclBindingFilter(entry_filter=AccessControlEntryFilter(principal="User:alice")))) == \
        {b1, b4}
    # entry filters are exact: User:* in a filter is not a wildcard
    assert store.acls(AclBindingFilter(entry_filter=AccessControlEntryFilter(principal="User:*"))) == []
    deny_filter = AclBindingFilter(entry_filter=AccessControlEntryFilter(permission_type=Perm.DENY))
    assert store.remove(deny_filter) == [b3]
    assert len(store) == 3 and store.entries(b3.pattern) == set()
    assert store.remove(AclBindingFilter()) and len(store) == 0


def test_filter_unknown():
    assert AclBindingFilter(ResourcePatternFilter(pattern_type=PT.UNKNOWN)).is_unknown()
    assert AclBindingFilter(entry_filter=AccessControlEntryFilter(operation=Op.UNKNOWN)).is_unknown()
    assert not AclBindingFilter().is_unknown()


def test_create_validation():
    assert validate_new_acl(acl("t", "User:alice", Op.READ)) is None
    assert validate_new_acl(acl("t", "User:alice", Op.READ, pt=PT.MATCH)) == "Invalid patternType MATCH"
    assert validate_new_acl(acl("t", "User:alice", Op.ANY)) == "Invalid operation ANY"
    assert validate_new_acl(acl("t", "User:alice", Op.READ, Perm.ANY)) == "Invalid permissionType ANY"
    assert validate_new_acl(acl("t", "User:alice", Op.READ, rt=RT.ANY)) == "Invalid resourceType ANY"
    assert validate_new_acl(acl("", "User:alice", Op.READ)) == "Resource name should not be empty"
    assert "kafka-cluster" in validate_new_acl(acl("c", "User:alice", Op.ALTER, rt=RT.CLUSTER))
    assert "no colon" in validate_new_acl(acl("t", "alice", Op.READ))
    assert unsupported_operation(acl("g", "User:a", Op.WRITE, rt=RT.GROUP)) == \
        "ResourceType Group only supports operations Delete, Describe, Read"
    assert unsupported_operation(acl("g", "User:a", Op.ALL, rt=RT.GROUP)) is None


def test_zookeeper_paths_and_node_data():
    lit = ResourcePattern(RT.TOPIC, "orders")
    pre = ResourcePattern(RT.TRANSACTIONAL_ID, "app-", PT.PREFIXED)
    assert acl_zk.acl_node_path(lit) == "/kafka-acl/Topic/orders"
    assert acl_zk.acl_node_path(pre) == "/kafka-acl-extended/prefixed/TransactionalId/app-"
    assert acl_zk.pattern_from_path("/kafka-acl-extended/prefixed/TransactionalId/app-") == pre
    assert acl_zk.pattern_from_path("/kafka-acl/Cluster/kafka-cluster") == ResourcePattern(RT.CLUSTER, "kafka-cluster")
    with pytest.raises(ValueError):
        acl_zk.pattern_from_path("/kafka-acl/Topic")
    entries = {AccessControlEntry("User:alice", "*", Op.READ, Perm.ALLOW)}
    assert acl_zk.acl_node_data(entries) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}')
    data = b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny","operation":"ClusterAction",' \
           b'"host":"10.0.0.1"},{"principal":"User:alice","permissionType":"Allow","operation":"All","host":"*"}]}'
    assert acl_zk.parse_acl_node(data) == {AccessControlEntry("User:bob", "10.0.0.1", Op.CLUSTER_ACTION, Perm.DENY),
                                           AccessControlEntry("User:alice", "*", Op.ALL, Perm.ALLOW)}
    assert acl_zk.parse_acl_node(b"") == set()
    assert "/kafka-acl/DelegationToken" in acl_zk.acl_paths()
    assert "/kafka-acl-extended/prefixed/User" in acl_zk.acl_paths()


def test_zookeeper_change_notifications():
    lit = ResourcePattern(RT.GROUP, "g1")
    pre = ResourcePattern(RT.TOPIC, "fin-", PT.PREFIXED)
    assert acl_zk.change_path_prefix(PT.LITERAL) == "/kafka-acl-changes/acl_changes_"
    assert acl_zk.change_path_prefix(PT.PREFIXED) == "/kafka-acl-extended-changes/acl_changes_"
    assert acl_zk.sequential_node_name("acl_changes_", 7) == "acl_changes_0000000007"
    assert acl_zk.change_node_data(lit) == b"GROUP:g1"
    assert json.loads(acl_zk.change_node_data(pre)) == {
        "version": 1, "resourceType": "TOPIC", "name": "fin-", "patternType": "PREFIXED"}
    assert acl_zk.parse_change_node("/kafka-acl-changes/acl_changes_0000000001", b"GROUP:g1") == lit
    assert acl_zk.parse_change_node("/kafka-acl-changes/acl_changes_0000000001", b"Topic:a:b") == \
        ResourcePattern(RT.TOPIC, "a:b")
    assert acl_zk.parse_change_node("/kafka-acl-changes/x", b"TransactionalId:t") == \
        ResourcePattern(RT.TRANSACTIONAL_ID, "t")
    assert acl_zk.parse_change_node("/kafka-acl-extended-changes/acl_changes_0000000002",
                                    acl_zk.change_node_data(pre)) == pre
    with pytest.raises(ValueError):
        acl_zk.parse_change_node("/kafka-acl-changes/x", b"nocolon")


def test_change_applied_by_reloading_the_node():
    store = AclStore([acl("t", "User:alice", Op.READ)])
    pattern = ResourcePattern(RT.TOPIC, "t")
    node = acl_zk.acl_node_data({AccessControlEntry("User:bob", "*", Op.WRITE, Perm.ALLOW)})
    store.set_entries(pattern, acl_zk.parse_acl_node(node))
    assert store.entries(pattern) == {AccessControlEntry("User:bob", "*", Op.WRITE, Perm.ALLOW)}
    store.set_entries(pattern, acl_zk.parse_acl_node(None))
    assert len(store) == 0


def test_deny_all_denies_every_operation_and_a_prefix_may_be_the_whole_name():
    a = _authz(acl("t", "User:alice", Op.READ), acl("t", "User:alice", Op.ALL, Perm.DENY))
    assert not a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")
    a = _authz(acl("orders", "User:alice", Op.READ, pt=PT.PREFIXED))
    assert a.authorize(ALICE, "h", Op.READ, RT.TOPIC, "orders")
    assert not _authz(acl("orders", "User:alice", Op.WRITE),
                      acl("orders", "User:alice", Op.WRITE, Perm.DENY, pt=PT.PREFIXED)) \
        .authorize_by_resource_type(ALICE, "h", Op.WRITE, RT.TOPIC)
