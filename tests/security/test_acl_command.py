"""kafka-acls flags → bindings and filters (AclCommand), checked against the authorizer they feed."""

import pytest

from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.security.acl_command import AclCommandError, AclCommandOptions, bindings_to_add, filters_for
from broker.security.authorizer import AclAuthorizer, AclStore

Op, RT = AclOperation, ResourceType
ALLOW = AclPermissionType.ALLOW


def _set(bindings):
    return {(b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type, b.entry.principal, b.entry.host,
             b.entry.operation, b.entry.permission_type) for b in bindings}


def test_explicit_operations_and_default_host():
    opts = AclCommandOptions(topics=["t"], allow_principals=["User:alice"], operations=["Read", "describe-configs"])
    assert _set(bindings_to_add(opts)) == {
        (RT.TOPIC, "t", PatternType.LITERAL, "User:alice", "*", Op.READ, ALLOW),
        (RT.TOPIC, "t", PatternType.LITERAL, "User:alice", "*", Op.DESCRIBE_CONFIGS, ALLOW)}
    opts = AclCommandOptions(cluster=True, deny_principals=["User:bob"], deny_hosts=["10.0.0.1"])
    assert _set(bindings_to_add(opts)) == {
        (RT.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:bob", "10.0.0.1", Op.ALL, AclPermissionType.DENY)}


def test_producer_and_consumer_convenience():
    opts = AclCommandOptions(topics=["orders-"], transactional_ids=["tx"], resource_pattern_type="prefixed",
                             allow_principals=["User:app"], producer=True, idempotent=True)
    got = _set(bindings_to_add(opts))
    assert {(rt, name, op) for rt, name, _, _, _, op, _ in got} == {
        (RT.TOPIC, "orders-", Op.WRITE), (RT.TOPIC, "orders-", Op.DESCRIBE), (RT.TOPIC, "orders-", Op.CREATE),
        (RT.TRANSACTIONAL_ID, "tx", Op.WRITE), (RT.TRANSACTIONAL_ID, "tx", Op.DESCRIBE),
        (RT.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE)}
    opts = AclCommandOptions(topics=["t"], groups=["g"], allow_principals=["User:c"], consumer=True)
    store = AclStore(bindings_to_add(opts))
    authz = AclAuthorizer(store)
    c = KafkaPrincipal.user("c")
    assert authz.authorize(c, "1.1.1.1", Op.READ, RT.TOPIC, "t")
    assert authz.authorize(c, "1.1.1.1", Op.READ, RT.GROUP, "g")
    assert not authz.authorize(c, "1.1.1.1", Op.WRITE, RT.TOPIC, "t")


@pytest.mark.parametrize("opts,message", [
    (AclCommandOptions(groups=["g"], allow_principals=["User:a"], operations=["Write"]),
     "ResourceType Group only supports operations"),
    (AclCommandOptions(topics=["t"], operations=["Read"]), "--allow-principal, --deny-principal"),
    (AclCommandOptions(allow_principals=["User:a"]), "at least one resource"),
    (AclCommandOptions(topics=["t"], allow_principals=["User:a"], resource_pattern_type="match"), "not valid"),
    (AclCommandOptions(topics=["t"], allow_principals=["User:a"], consumer=True), "--group"),
    (AclCommandOptions(groups=["g"], allow_principals=["User:a"], producer=True), "--topic"),
    (AclCommandOptions(topics=["t"], allow_principals=["User:a"], operations=["Any"]), "Invalid operation"),
    (AclCommandOptions(topics=["t"], allow_principals=["User:a"], idempotent=True), "--idempotent"),
])
def test_refused_options(opts, message):
    with pytest.raises(AclCommandError, match=message):
        bindings_to_add(opts)


def test_list_and_remove_filters():
    store = AclStore([
        AclBinding(ResourcePattern(RT.TOPIC, "t"), AccessControlEntry("User:a", "*", Op.READ, ALLOW)),
        AclBinding(ResourcePattern(RT.TOPIC, "t"), AccessControlEntry("User:b", "*", Op.READ, ALLOW)),
        AclBinding(ResourcePattern(RT.TOPIC, "t-", PatternType.PREFIXED),
                   AccessControlEntry("User:a", "*", Op.WRITE, ALLOW)),
    ])
    everything = filters_for(AclCommandOptions(), listing=True)
    assert sum(len(store.acls(f)) for f in everything) == 3
    by_principal = filters_for(AclCommandOptions(principals=["User:a"]), listing=True)
    assert sum(len(store.acls(f)) for f in by_principal) == 2
    matching = filters_for(AclCommandOptions(topics=["t-1"], resource_pattern_type="match"), listing=True)
    assert [b.pattern.name for f in matching for b in store.acls(f)] == ["t-"]
    # --remove with a principal and operation removes exactly that entry
    [f] = filters_for(AclCommandOptions(topics=["t"], allow_principals=["User:b"], operations=["Read"]),
                      listing=False)
    assert len(store.remove(f)) == 1 and len(store) == 2
    [f] = filters_for(AclCommandOptions(topics=["t"]), listing=False)   # all ACLs on literal t
    assert len(store.remove(f)) == 1 and len(store) == 1
