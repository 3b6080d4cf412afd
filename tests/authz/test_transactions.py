"""The transaction APIs with an authorizer (Kafka's KafkaApis checks): TRANSACTIONAL_ID WRITE for
InitProducerId / AddPartitionsToTxn / EndTxn / transactional Produce, TOPIC WRITE per partition added, GROUP READ
for AddOffsetsToTxn, TRANSACTIONAL_ID DESCRIBE for DescribeTransactions (ListTransactions filters silently),
CLUSTER_ACTION for WriteTxnMarkers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.authz.test_data_path import create
from tests.broker.harness import Client

FIND_COORDINATOR, INIT_PID, ADD_PARTITIONS, ADD_OFFSETS, WRITE_MARKERS, DESCRIBE, LIST = 10, 22, 24, 25, 27, 65, 66
T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID


def init_pid(c: Client, tid: str):
    return c.request(INIT_PID, 4, {"transactional_id": tid, "transaction_timeout": 60000, "producer_id": -1,
                                   "producer_epoch": -1})


def add(c: Client, tid: str, pid: int, topic: str) -> ErrorCode:
    resp = c.request(ADD_PARTITIONS, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                         "v3_and_below_producer_epoch": 0,
                                         "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
    return resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def test_transactional_id_and_topic_checks(ah: AuthzHarness) -> None:
    create(ah, "t")
    ah.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["app"]})  # as admin: the state topic
    alice = ah.as_user("alice")
    [c] = alice.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["app"]}).coordinators
    assert c.error_code == ErrorCode.transactional_id_authorization_failed
    assert init_pid(alice, "app").error_code == ErrorCode.transactional_id_authorization_failed
    ah.allow("User:alice", AclOperation.WRITE, X, "app")
    init = init_pid(alice, "app")
    assert init.error_code == ErrorCode.none
    assert add(alice, "app", init.producer_id, "t") == ErrorCode.topic_authorization_failed
    ah.allow("User:alice", AclOperation.WRITE, T, "t")
    assert add(alice, "app", init.producer_id, "t") == ErrorCode.none
    offsets = alice.request(ADD_OFFSETS, 3, {"transactional_id": "app", "producer_id": init.producer_id,
                                             "producer_epoch": 0, "group_id": "g"})
    assert offsets.error_code == ErrorCode.group_authorization_failed
    bob = ah.as_user("bob")
    [d] = bob.request(DESCRIBE, 0, {"transactional_ids": ["app"]}).transaction_states
    assert d.error_code == ErrorCode.transactional_id_authorization_failed
    assert bob.request(LIST, 1, {"state_filters": [], "producer_id_filters": [],
                                 "duration_filter": -1}).transaction_states == ()
    ah.allow("User:bob", AclOperation.DESCRIBE, X, "app")
    [d] = bob.request(DESCRIBE, 0, {"transactional_ids": ["app"]}).transaction_states
    assert (d.error_code, d.transaction_state) == (ErrorCode.none, "Ongoing")
    assert [s.transactional_id for s in bob.request(LIST, 1, {
        "state_filters": [], "producer_id_filters": [], "duration_filter": -1}).transaction_states] == ["app"]
    markers = bob.request(WRITE_MARKERS, 1, {"markers": [{"producer_id": 1, "producer_epoch": 0,
                                                          "transaction_result": True, "coordinator_epoch": 0,
                                                          "topics": [{"name": "t", "partition_indexes": [0]}]}]})
    assert markers.markers[0].topics[0].partitions[0].error_code == ErrorCode.cluster_authorization_failed
