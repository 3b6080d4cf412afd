"""Wire-level behaviour with raw sockets: ApiVersions quirks and bad input (Kafka protocol guide: ApiVersions handling; docs/hostile-input.md)."""

from __future__ import annotations

import struct
import time

import crc32c
import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch
from kafkascope.local.wire import WireClient

API_VERSIONS, METADATA, PRODUCE, LIST_OFFSETS, CREATE_TOPICS = 18, 3, 0, 2, 19


@pytest.fixture
def wire(shared_broker):
    with WireClient(shared_broker.port) as c:
        yield c


def _create(wire: WireClient, name: str, **configs: str) -> ErrorCode:
    resp = wire.call(CREATE_TOPICS, 7, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                                                    "assignments": [], "configs": [
                                                        {"name": k.replace("_", "."), "value": v}
                                                        for k, v in configs.items()]}],
                                        "timeout": 5000, "validate_only": False})
    return resp.topics[0].error_code


def _produce(wire: WireClient, topic: str, records: bytes, version: int = 9):
    resp = wire.call(PRODUCE, version, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
    return resp.responses[0].partition_responses[0]


def _latest(wire: WireClient, topic: str) -> int:
    resp = wire.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return resp.topics[0].partitions[0].offset


def test_api_versions_v3_lists_itself_and_hides_unimplemented(wire):
    resp = wire.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert resp.error_code == ErrorCode.none
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[18] == (0, 4)
    assert keys[0][0] == 0  # Produce v0 advertised for old librdkafka's compression check
    assert keys[1][1] == 12  # Fetch capped below topic ids
    for hidden in (17, 36, 67, 71, 72):  # 24 (transactions) and 68, 69 (KIP-848) are served now
        assert hidden not in keys


def test_api_versions_too_new_gets_v0_error_body(wire):
    wire.send_raw(struct.pack(">hhih", 18, 99, 77, -1))
    frame = wire.recv_frame()
    corr, error, count = struct.unpack_from(">ihi", frame, 0)
    assert (corr, error) == (77, ErrorCode.unsupported_version)
    entries = [struct.unpack_from(">hhh", frame, 10 + 6 * i) for i in range(count)]
    assert any(e[0] == 18 for e in entries)
    assert len(frame) == 10 + 6 * count  # no throttle time, no tagged fields


def test_oversized_frame_closes_only_that_connection(shared_broker, wire):
    wire.sock.sendall(struct.pack(">i", 200 * 1024 * 1024))
    assert wire.is_closed_by_peer()
    with WireClient(shared_broker.port) as other:
        assert other.call(API_VERSIONS, 3, {}).error_code == ErrorCode.none


def test_unparseable_request_closes_only_that_connection(shared_broker, wire):
    wire.send_raw(struct.pack(">hhih", METADATA, 12, 1, 5) + b"\xff" * 7)
    assert wire.is_closed_by_peer()
    with WireClient(shared_broker.port) as other:
        assert other.call(API_VERSIONS, 3, {}).error_code == ErrorCode.none


def test_produce_v2_is_advertised_but_rejected(wire):
    wire.send_raw(struct.pack(">hhih", PRODUCE, 2, 1, 1) + b"\0" * 10)
    assert wire.is_closed_by_peer()


def test_crc_mismatch_is_corrupt_message_and_appends_nothing(wire, topic_name):
    assert _create(wire, topic_name) == ErrorCode.none
    batch = bytearray(build_batch([Record(timestamp=1, key=b"k", value=b"v")]))
    batch[-1] ^= 0xFF
    before = _latest(wire, topic_name)
    assert _produce(wire, topic_name, bytes(batch)).error_code == ErrorCode.corrupt_message
    assert _latest(wire, topic_name) == before
    good = build_batch([Record(timestamp=1, key=b"k", value=b"v")])
    assert struct.unpack_from(">I", good, 17)[0] == crc32c.crc32c(good[21:])
    ok = _produce(wire, topic_name, good)
    assert ok.error_code == ErrorCode.none and ok.base_offset == before


def test_batch_over_max_message_bytes_is_rejected(wire, topic_name):
    assert _create(wire, topic_name, max_message_bytes="1000") == ErrorCode.none
    big = build_batch([Record(timestamp=1, key=b"k", value=b"x" * 2000)])
    assert _produce(wire, topic_name, big).error_code == ErrorCode.message_too_large
    assert _latest(wire, topic_name) == 0


@pytest.mark.parametrize("name", ["bad name", "a" * 250, "..", "ünï"])
def test_invalid_topic_name(wire, name):
    assert _create(wire, name) == ErrorCode.invalid_topic_exception
    resp = wire.call(METADATA, 12, {"topics": [{"name": name, "topic_id": None}],
                                    "allow_auto_topic_creation": True,
                                    "include_topic_authorized_operations": False})
    assert resp.topics[0].error_code == ErrorCode.invalid_topic_exception


def test_keyless_record_on_compacted_topic_is_invalid_record(wire, topic_name):
    assert _create(wire, topic_name, cleanup_policy="compact") == ErrorCode.none
    keyless = build_batch([Record(timestamp=1, key=None, value=b"v")])
    assert _produce(wire, topic_name, keyless).error_code == ErrorCode.invalid_record
    assert _latest(wire, topic_name) == 0


def test_produce_to_unknown_topic(wire, topic_name):
    resp = _produce(wire, topic_name + "-missing", build_batch([Record(timestamp=1, value=b"v")]))
    assert resp.error_code == ErrorCode.unknown_topic_or_partition


def test_acks_zero_gets_no_response(wire, topic_name):
    assert _create(wire, topic_name) == ErrorCode.none
    wire.send(PRODUCE, 9, {"transactional_id": None, "acks": 0, "timeout": 5000, "topic_data": [
        {"name": topic_name, "partition_data": [{"index": 0, "records": build_batch([Record(timestamp=1,
                                                                                          value=b"v")])}]}]})
    # The next response on this connection must be the ListOffsets one, not a Produce response.
    assert _latest(wire, topic_name) == 1


def _answered_connection(port: int) -> WireClient:
    """A connection the broker accepted; retries while the readiness probe's close is still in flight."""
    for _ in range(50):
        c = WireClient(port)
        try:
            c.call(API_VERSIONS, 3, {})
            return c
        except ConnectionError:
            c.close()
            time.sleep(0.1)
    raise AssertionError("broker never accepted a connection")


def test_max_connections_per_ip(tmp_path):
    from kafkascope.local.broker_process import BrokerProcess

    with BrokerProcess(tmp_path, max_connections_per_ip=2) as b:
        a1, a2 = _answered_connection(b.port), _answered_connection(b.port)
        a3 = WireClient(b.port)
        assert a3.is_closed_by_peer()
        a1.close()
        a3.close()
        a4 = _answered_connection(b.port)  # a slot freed up again
        a2.close()
        a4.close()
