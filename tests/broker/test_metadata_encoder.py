"""The hand-written Metadata response encoder writes what kio writes, for every version the broker serves."""

import uuid

import pytest

from broker.errors import ErrorCode
from broker.protocol.codec import encode_response, encode_with_kio
from broker.protocol.metadata_encoder import MAX_VERSION, MIN_VERSION, encode_metadata_response, topic_entry


def _partition(i: int, leader: int, replicas=(1, 2, 3), isr=(1, 2), offline=(), code=ErrorCode.none) -> dict:
    return {"error_code": code, "partition_index": i, "leader_id": leader, "leader_epoch": 7 + i,
            "replica_nodes": list(replicas), "isr_nodes": list(isr), "offline_replicas": list(offline)}


def _body(version: int) -> dict:
    """What the Metadata handler sets: brokers with and without a rack, a led topic, an internal one, partitions
    without a leader or with offline replicas, an error entry, an empty topic, a non-ASCII name, authorized
    operations; v12 a topic asked by id that does not exist (null name)."""
    topics = [
        {"error_code": ErrorCode.none, "name": "orders", "topic_id": uuid.UUID(int=12345), "is_internal": False,
         "topic_authorized_operations": -2147483648,
         "partitions": [_partition(0, 1), _partition(1, -1, isr=(3,), offline=(1, 2),
                                                      code=ErrorCode.leader_not_available),
                        {"error_code": ErrorCode.leader_not_available, "partition_index": 2, "leader_id": -1,
                         "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [], "offline_replicas": []}]},
        {"error_code": ErrorCode.none, "name": "__consumer_offsets", "topic_id": uuid.uuid4(), "is_internal": True,
         "topic_authorized_operations": 3576, "partitions": [_partition(i, 2) for i in range(5)]},
        {"error_code": ErrorCode.unknown_topic_or_partition, "name": "missing", "is_internal": False,
         "partitions": [], "topic_authorized_operations": -2147483648},
        {"error_code": ErrorCode.none, "name": "zahlungseingänge", "topic_id": uuid.uuid4(), "is_internal": False,
         "topic_authorized_operations": -2147483648, "partitions": []},
    ]
    if version >= 12:
        topics.append({"error_code": ErrorCode.unknown_topic_id, "name": None, "is_internal": False,
                       "partitions": [], "topic_authorized_operations": -2147483648, "topic_id": uuid.uuid4()})
    return {"throttle_time": 0, "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None},
                                            {"node_id": 2, "host": "broker-2.example", "port": 19092, "rack": "r1"}],
            "cluster_id": "Fx4m2rQqSgq2V9L1Fm3Sfw", "controller_id": 2, "topics": topics,
            "cluster_authorized_operations": 1234}


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_byte_identical_to_kio(version):
    body = _body(version)
    ours = encode_metadata_response(version, 42, body)
    assert ours == encode_with_kio(3, version, 42, body)
    assert encode_response(3, version, 42, body) == ours  # and it is the path responses take


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_topics_given_as_encoded_entries_give_the_same_frame(version):
    body = _body(version)
    entries = {**body, "topics": [topic_entry(version, t) for t in body["topics"]]}
    assert encode_metadata_response(version, 7, entries) == encode_with_kio(3, version, 7, body)


def test_no_brokers_no_topics_no_cluster_id():
    body = {"throttle_time": 0, "brokers": [], "cluster_id": None, "controller_id": -1, "topics": []}
    for version in range(MIN_VERSION, MAX_VERSION + 1):
        assert encode_metadata_response(version, 1, body) == encode_with_kio(3, version, 1, body)
