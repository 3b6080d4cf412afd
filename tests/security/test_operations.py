"""The API → ACL table: cases we know from Kafka's KafkaApis, api keys checked against kio's schemas."""

import importlib
import pkgutil
import re

import pytest

from broker.security import operations as ops
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    ResourcePattern,
    ResourceType,
)
from broker.security.authorizer import AclAuthorizer, AclStore

Op, RT = AclOperation, ResourceType
ALICE = KafkaPrincipal.user("alice")


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# ZooKeeper-era controller APIs: Kafka 4 dropped them, and kio with it; their keys are 4..7.
ZK_ONLY = {"LeaderAndIsr": 4, "StopReplica": 5, "UpdateMetadata": 6, "ControlledShutdown": 7}


def test_zk_only_api_keys():
    assert {name: ops.BY_NAME[name].api_key for name in ZK_ONLY} == ZK_ONLY


@pytest.mark.parametrize("entry", [e for e in ops.BY_KEY.values() if e.name not in ZK_ONLY], ids=lambda e: e.name)
def test_api_keys_match_kio_schemas(entry):
    module = importlib.import_module(f"kio.schema.{_snake(entry.name)}")
    versions = sorted(int(m.name[1:]) for m in pkgutil.iter_modules(module.__path__) if re.fullmatch(r"v\d+", m.name))
    request = importlib.import_module(f"kio.schema.{_snake(entry.name)}.v{versions[-1]}.request")
    classes = [c for c in vars(request).values() if getattr(c, "__api_key__", None) is not None]
    assert classes and int(classes[0].__api_key__) == entry.api_key


def _first(api, conditions=()):
    return ops.checks_for(api, set(conditions))


def test_known_cases():
    [produce_topic] = _first("Produce")
    assert (produce_topic.resource_type, produce_topic.operation, produce_topic.error) == (RT.TOPIC, Op.WRITE, 29)
    assert produce_topic.scope is ops.Scope.PER_RESOURCE
    txn, _ = _first(0, [ops.TRANSACTIONAL])
    assert (txn.resource_type, txn.operation, txn.error) == (RT.TRANSACTIONAL_ID, Op.WRITE, 53)
    [fetch] = _first("Fetch", [ops.CONSUMER])
    assert (fetch.operation, fetch.error) == (Op.READ, 29)
    [follower] = _first("Fetch", [ops.FOLLOWER])
    assert (follower.resource_type, follower.operation) == (RT.CLUSTER, Op.CLUSTER_ACTION)
    [join] = _first("JoinGroup")
    assert (join.resource_type, join.operation, join.error, join.scope) == (RT.GROUP, Op.READ, 30, ops.Scope.REQUEST)
    group, topic = _first("OffsetCommit")
    assert (group.operation, group.error, topic.operation, topic.error) == (Op.READ, 30, Op.READ, 29)
    [meta_all] = _first("Metadata", [ops.ALL_TOPICS])
    assert meta_all.scope is ops.Scope.FILTER and meta_all.operation is Op.DESCRIBE
    [acls] = _first(30)
    assert (acls.resource_type, acls.operation, acls.error) == (RT.CLUSTER, Op.ALTER, 31)
    [scram] = _first("AlterUserScramCredentials")
    assert (scram.resource_type, scram.operation) == (RT.CLUSTER, Op.ALTER)
    assert _first("SaslHandshake") == [] and _first("ApiVersions") == []
    [broker_cfg] = _first("DescribeConfigs", [ops.BROKER_RESOURCE])
    assert (broker_cfg.resource_type, broker_cfg.operation, broker_cfg.error) == (RT.CLUSTER, Op.DESCRIBE_CONFIGS, 31)
    [topic_cfg] = _first("IncrementalAlterConfigs", [ops.TOPIC_RESOURCE])
    assert (topic_cfg.resource_type, topic_cfg.operation, topic_cfg.error) == (RT.TOPIC, Op.ALTER_CONFIGS, 29)


def _authz(*bindings):
    return AclAuthorizer(AclStore(AclBinding(ResourcePattern(rt, name), AccessControlEntry(
        "User:alice", "*", op, AclPermissionType.ALLOW)) for rt, name, op in bindings))


def test_create_topics_cluster_or_topic():
    [create, _] = _first("CreateTopics")
    assert ops.denial_error(_authz(), ALICE, "h", create, "t") == 29
    assert ops.denial_error(_authz((RT.CLUSTER, "kafka-cluster", Op.CREATE)), ALICE, "h", create, "t") == 0
    assert ops.denial_error(_authz((RT.TOPIC, "t", Op.CREATE)), ALICE, "h", create, "t") == 0
    assert ops.denial_error(_authz((RT.TOPIC, "t", Op.CREATE)), ALICE, "h", create, "u") == 29


def test_init_producer_id_idempotent_by_cluster_or_any_topic_write():
    [check] = _first("InitProducerId", [ops.IDEMPOTENT])
    assert ops.denial_error(_authz(), ALICE, "h", check) == 31
    assert ops.allowed(_authz((RT.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE)), ALICE, "h", check)
    assert ops.allowed(_authz((RT.TOPIC, "any", Op.WRITE)), ALICE, "h", check)
    [txn] = _first("InitProducerId", [ops.TRANSACTIONAL])
    assert ops.denial_error(_authz((RT.TOPIC, "any", Op.WRITE)), ALICE, "h", txn, "tx") == 53
    assert ops.allowed(_authz((RT.TRANSACTIONAL_ID, "tx", Op.WRITE)), ALICE, "h", txn, "tx")


def test_list_groups_never_errors_and_named_checks_need_names():
    [check] = _first("ListGroups")
    assert not ops.allowed(_authz(), ALICE, "h", check, "g")           # left out of the list ...
    assert ops.denial_error(_authz(), ALICE, "h", check, "g") == 0      # ... but no error code
    assert check.otherwise.scope is ops.Scope.FILTER
    assert ops.allowed(_authz((RT.CLUSTER, "kafka-cluster", Op.DESCRIBE)), ALICE, "h", check, "g")
    assert ops.allowed(_authz((RT.GROUP, "g", Op.DESCRIBE)), ALICE, "h", check, "g")
    assert not ops.allowed(_authz((RT.GROUP, "g", Op.DESCRIBE)), ALICE, "h", check, "h")
    [topic] = _first("DeleteTopics")
    with pytest.raises(ValueError):
        ops.allowed(_authz(), ALICE, "h", topic)


def test_every_error_is_a_kafka_authorization_code():
    codes = {0, 29, 30, 31, 53}
    for entry in ops.BY_KEY.values():
        for check in entry.checks:
            chain = [check] + ([check.otherwise] if check.otherwise else [])
            assert all(c.error in codes for c in chain), entry.name
            if check.resource_type is RT.GROUP and check.scope is not ops.Scope.FILTER:
                assert check.error == 30, entry.name
            if check.resource_type is RT.TRANSACTIONAL_ID and check.scope is not ops.Scope.FILTER:
                assert check.error == 53, entry.name
