"""Produce, Fetch, ListOffsets and Metadata with an authorizer: Kafka's checks and error codes."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch
from broker.security.acl import AclOperation, PatternType, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.broker.harness import Client, Harness

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS = 0, 1, 2, 3, 19
T, C = ResourceType.TOPIC, ResourceType.CLUSTER


def create(c: Client | Harness, name: str) -> int:
    resp = c.request(CREATE_TOPICS, 7, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                                                    "assignments": [], "configs": []}],
                                        "timeout": 5000, "validate_only": False})
    return resp.topics[0].error_code


def produce(c: Client | Harness, topic: str) -> int:
    batch = build_batch([Record(timestamp=1, value=b"v")])
    resp = c.request(PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    return resp.responses[0].partition_responses[0].error_code


def fetch(c: Client, topic: str) -> int:
    resp = c.request(FETCH, 12, {
        "cluster_id": None, "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})
    return resp.responses[0].partitions[0].error_code


def list_offsets(c: Client, topic: str) -> int:
    resp = c.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return resp.topics[0].partitions[0].error_code


def metadata(c: Client, names: list[str] | None, auto: bool = False, ops: bool = False):
    return c.request(METADATA, 10, {"topics": None if names is None else [{"name": n, "topic_id": None}
                                                                          for n in names],
                                    "allow_auto_topic_creation": auto, "include_cluster_authorized_operations": ops,
                                    "include_topic_authorized_operations": ops})


def test_super_user_may_do_anything(ah: AuthzHarness) -> None:
    assert create(ah, "orders") == ErrorCode.none
    assert produce(ah, "orders") == ErrorCode.none
    assert fetch(ah.client, "orders") == ErrorCode.none


def test_produce_denied_until_a_write_acl(ah: AuthzHarness) -> None:
    create(ah, "orders")
    alice = ah.as_user("alice")
    assert produce(alice, "orders") == ErrorCode.topic_authorization_failed
    assert produce(alice, "missing") == ErrorCode.topic_authorization_failed  # no leak: same answer
    ah.allow("User:alice", AclOperation.WRITE, T, "orders")
    assert produce(alice, "orders") == ErrorCode.none
    assert fetch(alice, "orders") == ErrorCode.topic_authorization_failed   # WRITE does not grant READ
    assert list_offsets(alice, "orders") == ErrorCode.none                  # WRITE implies DESCRIBE


def test_prefixed_acl_and_deny_wins(ah: AuthzHarness) -> None:
    for t in ("sales.eu", "sales.us", "hr"):
        create(ah, t)
    bob = ah.as_user("bob")
    ah.allow("User:bob", AclOperation.READ, T, "sales.", PatternType.PREFIXED)
    assert fetch(bob, "sales.eu") == ErrorCode.none
    assert fetch(bob, "hr") == ErrorCode.topic_authorization_failed
    ah.allow("User:*", AclOperation.READ, T, "sales.us", deny=True)
    assert fetch(bob, "sales.us") == ErrorCode.topic_authorization_failed
    assert fetch(bob, "sales.eu") == ErrorCode.none


def test_host_in_acl(ah: AuthzHarness) -> None:
    create(ah, "orders")
    ah.allow("User:carol", AclOperation.WRITE, T, "orders", host="10.9.9.9")
    assert produce(ah.as_user("carol", host="10.9.9.9"), "orders") == ErrorCode.none
    assert produce(ah.as_user("carol", host="10.9.9.8"), "orders") == ErrorCode.topic_authorization_failed


def test_allow_everyone_if_no_acl_found(tmp_path) -> None:
    with AuthzHarness(tmp_path, allow_everyone_if_no_acl_found="true") as ah:
        create(ah, "open")
        create(ah, "guarded")
        dave = ah.as_user("dave")
        assert produce(dave, "open") == ErrorCode.none   # no ACL on the topic: everyone
        ah.allow("User:erin", AclOperation.WRITE, T, "guarded")
        assert produce(dave, "guarded") == ErrorCode.topic_authorization_failed


def test_metadata_lists_only_describable_topics(ah: AuthzHarness) -> None:
    for t in ("a", "b", "secret"):
        create(ah, t)
    alice = ah.as_user("alice")
    ah.allow("User:alice", AclOperation.DESCRIBE, T, "a")
    ah.allow("User:alice", AclOperation.READ, T, "b")
    assert sorted(t.name for t in metadata(alice, None).topics) == ["a", "b"]
    listed = {t.name: t.error_code for t in metadata(alice, ["a", "secret", "nope"]).topics}
    assert listed == {"a": ErrorCode.none, "secret": ErrorCode.topic_authorization_failed,
                      "nope": ErrorCode.topic_authorization_failed}
    assert sorted(t.name for t in metadata(ah.client, None).topics) == ["__consumer_offsets", "a", "b", "secret"]


def test_metadata_auto_create_needs_create(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    ah.allow("User:alice", AclOperation.DESCRIBE, T, "new", PatternType.PREFIXED)
    [t] = metadata(alice, ["new1"], auto=True).topics
    assert t.error_code == ErrorCode.topic_authorization_failed
    assert ah.broker.metadata.topic("new1") is None
    ah.allow("User:alice", AclOperation.CREATE, C, "kafka-cluster")
    [t] = metadata(alice, ["new1"], auto=True).topics
    assert t.error_code in (ErrorCode.none, ErrorCode.leader_not_available)
    assert ah.broker.metadata.topic("new1") is not None


def test_metadata_authorized_operations(ah: AuthzHarness) -> None:
    create(ah, "a")
    alice = ah.as_user("alice")
    ah.allow("User:alice", AclOperation.READ, T, "a")
    resp = metadata(alice, ["a"], ops=True)
    bits = resp.topics[0].topic_authorized_operations
    assert bits == (1 << AclOperation.READ.code) | (1 << AclOperation.DESCRIBE.code)
    assert resp.cluster_authorized_operations == 0   # no DESCRIBE on the cluster


def test_no_authorizer_changes_nothing(tmp_path) -> None:
    with Harness(tmp_path) as h:
        assert create(h, "t") == ErrorCode.none
        assert produce(h, "t") == ErrorCode.none
        assert h.broker.authorizer is None
        resp = metadata(h.client, ["t"], ops=True)
        assert resp.topics[0].topic_authorized_operations == -2147483648


def test_authorizer_metrics(tmp_path) -> None:
    from tests.broker.inproc import metric

    with AuthzHarness(tmp_path, prometheus_listener="127.0.0.1:0") as ah:
        create(ah, "orders")
        alice = ah.as_user("alice")
        for _ in range(3):
            produce(alice, "orders")
        ah.allow("User:alice", AclOperation.WRITE, T, "orders")
        produce(alice, "orders")

        def read(name: str) -> float:
            m = metric(ah.broker, "kafka.server", "authorizer-metrics", name)
            assert m is not None, name
            return m.read()  # type: ignore[attr-defined]
        assert read("acls-total-count") == 1
        assert read("authorization-denied-rate-per-minute") > 0
        assert read("authorization-allowed-rate-per-minute") > 0
        assert read("authorization-request-rate-per-minute") == pytest.approx(
            read("authorization-denied-rate-per-minute") + read("authorization-allowed-rate-per-minute"))


def test_denials_are_logged_as_kafka_logs_them(ah: AuthzHarness, caplog: pytest.LogCaptureFixture) -> None:
    create(ah, "orders")
    alice = ah.as_user("alice", host="10.7.7.7")
    with caplog.at_level("INFO", logger="kafka.authorizer.logger"):
        produce(alice, "orders")
    assert ("Principal = User:alice is Denied Operation = Write from host = 10.7.7.7 on resource = "
            "Topic:LITERAL:orders for request = PRODUCE with resourceRefCount = 1") in caplog.messages
