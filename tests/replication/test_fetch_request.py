"""The follower's hand-written FetchRequest v12 is byte for byte what kio writes (and kio reads it back)."""

import io
import struct

import pytest
from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build, request_class
from broker.replication.fetch_request import encode_follower_fetch


def _kio(correlation_id, client_id, replica_id, max_wait, min_bytes, max_bytes, topics, session_id=0,
         session_epoch=-1, forgotten=()) -> bytes:
    cls = request_class(1, 12)
    header_cls = cls.__header_schema__
    out = io.BytesIO()
    entity_writer(header_cls)(out, build(header_cls, {"request_api_key": 1, "request_api_version": 12,
                                                      "correlation_id": correlation_id, "client_id": client_id}))
    entity_writer(cls)(out, build(cls, {
        "replica_id": replica_id, "max_wait": max_wait, "min_bytes": min_bytes, "max_bytes": max_bytes,
        "isolation_level": 0, "session_id": session_id, "session_epoch": session_epoch, "rack_id": "",
        "forgotten_topics_data": [{"topic": name, "partitions": list(ps)} for name, ps in forgotten],
        "topics": [{"topic": name, "partitions": [
            {"partition": p, "current_leader_epoch": e, "fetch_offset": o, "last_fetched_epoch": -1,
             "log_start_offset": s, "partition_max_bytes": m} for p, e, o, s, m in parts]} for name, parts in topics]}))
    body = out.getvalue()
    return struct.pack(">i", len(body)) + body


CASES = [
    (1, "replica-fetcher-2", 2, 500, 1, 10 << 20, [("t", [(0, 3, 1234, 0, 1 << 20)])]),
    (2**31 - 1, "replica-fetcher-0", 0, 0, 1, 1, [
        ("hops", [(0, 0, 2**40, 17, 1 << 20)]),
        ("__consumer_offsets", [(i, 7, 0, -1, 1 << 20) for i in (1, 4, 7)]),
        ("ünïcode-topic", [(2**31 - 1, -1, 0, 0, 0)])]),
    (5, "", 1, 500, 1, 1, []),
    (6, "replica-fetcher-1", 1, 500, 1, 10 << 20, [("t", [(0, 3, 99, 0, 1 << 20)])], 123456789, 0),
    (7, "replica-fetcher-1", 1, 500, 1, 10 << 20, [], 123456789, 2**31 - 1,
     [("t", [1, 2]), ("__consumer_offsets", [7])]),
]


@pytest.mark.parametrize("case", CASES)
def test_follower_fetch_is_kio_byte_for_byte(case):
    assert encode_follower_fetch(*case) == _kio(*case)


def test_kio_reads_it_back():
    frame = encode_follower_fetch(*CASES[1])
    cls = request_class(1, 12)
    header, n = entity_reader(cls.__header_schema__)(frame[4:], 0)
    body, _ = entity_reader(cls)(frame[4:], n)
    assert header.client_id == "replica-fetcher-0" and body.replica_id == 0
    assert [(t.topic, [p.fetch_offset for p in t.partitions]) for t in body.topics] == \
        [("hops", [2**40]), ("__consumer_offsets", [0, 0, 0]), ("ünïcode-topic", [0])]
