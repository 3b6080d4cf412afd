"""Shared helpers for the end-to-end client tests: raw-wire inspection and bounded waiting."""

from __future__ import annotations

from broker.log.records import BatchHeader, decode_records, iter_batches
from common.polling import wait_until as wait_until  # re-exported: many client tests import it from here
from kafkascope.local.wire import WireClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS, INIT_PRODUCER_ID = 0, 1, 2, 3, 19, 22
EARLIEST, LATEST = -2, -1


def create_topic(port: int, name: str, partitions: int = 1, **configs: str) -> None:
    with WireClient(port) as w:
        resp = w.call(CREATE_TOPICS, 7, {"topics": [{"name": name, "num_partitions": partitions,
                                                     "replication_factor": 1, "assignments": [],
                                                     "configs": [{"name": k.replace("_", "."), "value": str(v)}
                                                                 for k, v in configs.items()]}],
                                         "timeout": 5000, "validate_only": False})
        assert resp.topics[0].error_code == 0, resp.topics[0]


def list_offset(port: int, topic: str, partition: int = 0, ts: int = LATEST) -> int:
    with WireClient(port) as w:
        resp = w.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": ts}]}]})
        p = resp.topics[0].partitions[0]
        assert p.error_code == 0, p
        return p.offset


def fetch_raw(port: int, topic: str, partition: int = 0, offset: int = 0, max_bytes: int = 8 << 20) -> bytes:
    """One Fetch v11 (no wait) of a partition from `offset`; the raw record-batch bytes."""
    with WireClient(port) as w:
        resp = w.call(FETCH, 11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
                                  "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                      {"topic": topic, "partitions": [
                                          {"partition": partition, "current_leader_epoch": -1,
                                           "fetch_offset": offset, "log_start_offset": -1,
                                           "partition_max_bytes": max_bytes}]}],
                                  "forgotten_topics_data": [], "rack_id": ""})
        p = resp.responses[0].partitions[0]
        assert p.error_code == 0, p
        return bytes(p.records or b"")


def batches(port: int, topic: str, partition: int = 0) -> list[tuple[BatchHeader, bytes]]:
    """Every complete batch of a partition (following the log until the high watermark)."""
    out: list[tuple[BatchHeader, bytes]] = []
    offset = list_offset(port, topic, partition, EARLIEST)
    end = list_offset(port, topic, partition, LATEST)
    for _ in range(10_000):
        if offset >= end:
            break
        buf = fetch_raw(port, topic, partition, offset)
        got = False
        for pos, h in iter_batches(buf):
            if h.next_offset <= offset:
                continue
            out.append((h, buf[pos:pos + h.size]))
            offset = h.next_offset
            got = True
        if not got:
            break
    return out


def records(port: int, topic: str, partition: int = 0):
    return [r for _, b in batches(port, topic, partition) for r in decode_records(b)]


def topic_id(port: int, topic: str):
    """The topic's id from Metadata v12 (None if unknown), without auto-creating it."""
    with WireClient(port) as w:
        resp = w.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                     "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
        return resp.topics[0].topic_id if resp.topics[0].error_code == 0 else None


def topic_error(port: int, topic: str) -> int:
    """Metadata v12 error code for one topic, without auto-creating it (0 = exists, 3 = unknown)."""
    with WireClient(port) as w:
        resp = w.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                     "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
        return resp.topics[0].error_code
