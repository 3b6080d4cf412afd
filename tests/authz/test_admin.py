"""Topic, config and cluster administration with an authorizer."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, PatternType, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.authz.test_data_path import create
from tests.broker.harness import Client

DELETE_TOPICS, DESCRIBE_CONFIGS, CREATE_PARTITIONS, ELECT_LEADERS, LIST_REASSIGNMENTS = 20, 32, 37, 43, 46
DESCRIBE_CLUSTER = 60
T, C = ResourceType.TOPIC, ResourceType.CLUSTER


def describe_configs(c: Client, resource_type: int, name: str) -> int:
    resp = c.request(DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    return resp.results[0].error_code


def test_create_topics_needs_create_on_cluster_or_topic(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    assert create(alice, "a1") == ErrorCode.topic_authorization_failed
    ah.allow("User:alice", AclOperation.CREATE, T, "a", PatternType.PREFIXED)
    assert create(alice, "a1") == ErrorCode.none
    assert create(alice, "b1") == ErrorCode.topic_authorization_failed
    ah.allow("User:alice", AclOperation.CREATE, C, "kafka-cluster")
    assert create(alice, "b1") == ErrorCode.none


def test_create_topics_hides_configs_without_describe_configs(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    ah.allow("User:alice", AclOperation.CREATE, T, "x")
    resp = alice.request(19, 7, {"topics": [{"name": "x", "num_partitions": 1, "replication_factor": 1,
                                             "assignments": [], "configs": []}], "timeout": 5000,
                                 "validate_only": False})
    [t] = resp.topics
    assert t.error_code == ErrorCode.none and t.topic_config_error_code == ErrorCode.topic_authorization_failed
    assert t.configs is None


def test_delete_topics_and_create_partitions(ah: AuthzHarness) -> None:
    create(ah, "t")
    alice = ah.as_user("alice")
    [r] = alice.request(DELETE_TOPICS, 6, {"topics": [{"name": "t", "topic_id": None}], "timeout_ms": 5000}
                        ).responses
    assert r.error_code == ErrorCode.topic_authorization_failed
    [r] = alice.request(CREATE_PARTITIONS, 3, {"topics": [{"name": "t", "count": 2, "assignments": None}],
                                               "timeout": 5000, "validate_only": False}).results
    assert r.error_code == ErrorCode.topic_authorization_failed
    ah.allow("User:alice", AclOperation.ALTER, T, "t")
    [r] = alice.request(CREATE_PARTITIONS, 3, {"topics": [{"name": "t", "count": 2, "assignments": None}],
                                               "timeout": 5000, "validate_only": False}).results
    assert r.error_code == ErrorCode.none
    ah.allow("User:alice", AclOperation.DELETE, T, "t")
    [r] = alice.request(DELETE_TOPICS, 6, {"topics": [{"name": "t", "topic_id": None}], "timeout_ms": 5000}
                        ).responses
    assert r.error_code == ErrorCode.none


def test_describe_configs(ah: AuthzHarness) -> None:
    create(ah, "t")
    alice = ah.as_user("alice")
    assert describe_configs(alice, 2, "t") == ErrorCode.topic_authorization_failed
    assert describe_configs(alice, 4, "0") == ErrorCode.cluster_authorization_failed
    ah.allow("User:alice", AclOperation.ALTER_CONFIGS, T, "t")   # implies DESCRIBE_CONFIGS
    assert describe_configs(alice, 2, "t") == ErrorCode.none


def test_cluster_apis(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    resp = alice.request(LIST_REASSIGNMENTS, 0, {"timeout": 1000, "topics": None})
    assert resp.error_code == ErrorCode.cluster_authorization_failed
    resp = alice.request(ELECT_LEADERS, 2, {"election_type": 0, "topic_partitions": None, "timeout": 1000})
    assert resp.error_code == ErrorCode.cluster_authorization_failed
    assert ah.client.request(LIST_REASSIGNMENTS, 0, {"timeout": 1000, "topics": None}).error_code == ErrorCode.none
    resp = alice.request(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
    assert resp.error_code == ErrorCode.none and resp.cluster_authorized_operations == 0
    ah.allow("User:alice", AclOperation.DESCRIBE, C, "kafka-cluster")
    resp = alice.request(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
    assert resp.cluster_authorized_operations == 1 << AclOperation.DESCRIBE.code


def test_init_producer_id_needs_idempotent_write_or_write_on_a_topic(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    body = {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
    assert alice.request(22, 4, body).error_code == ErrorCode.cluster_authorization_failed
    ah.allow("User:alice", AclOperation.WRITE, T, "any", PatternType.PREFIXED)   # KIP-679: WRITE on any topic
    resp = alice.request(22, 4, body)
    assert resp.error_code == ErrorCode.none and resp.producer_id >= 0
    bob = ah.as_user("bob")
    ah.allow("User:bob", AclOperation.IDEMPOTENT_WRITE, C, "kafka-cluster")
    assert bob.request(22, 4, body).error_code == ErrorCode.none


def test_describe_log_dirs_needs_describe_on_the_cluster(ah: AuthzHarness) -> None:
    """Kafka's handleDescribeLogDirsRequest: without DESCRIBE on the cluster, CLUSTER_AUTHORIZATION_FAILED and no
    log dirs (v3+ has the top-level error)."""
    alice = ah.as_user("alice")
    resp = alice.request(35, 4, {"topics": None})
    assert resp.error_code == ErrorCode.cluster_authorization_failed and resp.results == ()
    ah.allow("User:alice", AclOperation.DESCRIBE, C, "kafka-cluster")
    resp = alice.request(35, 4, {"topics": None})
    assert resp.error_code == ErrorCode.none and len(resp.results) == 1


def test_group_configs_need_describe_or_alter_configs_on_the_group(ah: AuthzHarness) -> None:
    """KIP-848 group configs: DESCRIBE_CONFIGS / ALTER_CONFIGS on the GROUP, else GROUP_AUTHORIZATION_FAILED."""
    alice = ah.as_user("alice")
    describe = {"include_synonyms": False, "include_documentation": False,
                "resources": [{"resource_type": 32, "resource_name": "g", "configuration_keys": None}]}
    alter = {"validate_only": False, "resources": [{"resource_type": 32, "resource_name": "g", "configs": [
        {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}]}
    assert alice.request(32, 4, describe).results[0].error_code == ErrorCode.group_authorization_failed
    assert alice.request(44, 1, alter).responses[0].error_code == ErrorCode.group_authorization_failed
    assert alice.request(74, 1, {"resource_types": [32]}).error_code == ErrorCode.cluster_authorization_failed
    ah.allow("User:alice", AclOperation.ALTER_CONFIGS, ResourceType.GROUP, "g")
    ah.allow("User:alice", AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP, "g")
    assert alice.request(44, 1, alter).responses[0].error_code == ErrorCode.none
    assert alice.request(32, 4, describe).results[0].error_code == ErrorCode.none
