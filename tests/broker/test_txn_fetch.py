"""read_committed Fetch and ListOffsets through the in-process harness (KIP-98): the LSO bounds what is read,
aborted transactions come with the records, a marker wakes a parked read_committed fetch."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch
from tests.broker.harness import Harness
from tests.broker.test_inproc_handlers import FETCH, LATEST, LIST_OFFSETS, create, fetch_body, values


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path) as harness:
        yield harness


def txn_append(h: Harness, topic: str, pid: int, seq: int, *vals: bytes) -> None:
    data = build_batch([Record(timestamp=1, value=v) for v in vals], producer_id=pid, producer_epoch=0,
                       base_sequence=seq, is_transactional=True)
    h.broker.replicas.append(topic, 0, data, 1)


def plain_append(h: Harness, topic: str, *vals: bytes) -> None:
    h.broker.replicas.append(topic, 0, build_batch([Record(timestamp=1, value=v) for v in vals]), 1)


def fetch(h: Harness, topic: str, offset: int, isolation: int, max_wait_ms: int = 0):
    body = fetch_body(topic, offset, max_wait_ms)
    body["isolation_level"] = isolation
    return h.request(FETCH, 12, body).responses[0].partitions[0]


def latest(h: Harness, topic: str, isolation: int) -> int:
    resp = h.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": LATEST}]}]})
    part = resp.topics[0].partitions[0]
    assert part.error_code == ErrorCode.none
    return part.offset


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(h):
    assert create(h, "tx").error_code == ErrorCode.none
    plain_append(h, "tx", b"p0")                      # 0
    txn_append(h, "tx", 7, 0, b"a1", b"a2")           # 1-2, to be aborted
    txn_append(h, "tx", 8, 0, b"c1")                  # 3, open
    committed = fetch(h, "tx", 0, isolation=1)
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 1)
    assert values(committed.records) == [(0, b"p0")]
    assert latest(h, "tx", 1) == 1 and latest(h, "tx", 0) == 4
    uncommitted = fetch(h, "tx", 0, isolation=0)
    assert [v for _, v in values(uncommitted.records)] == [b"p0", b"a1", b"a2", b"c1"]
    assert uncommitted.last_stable_offset == 1  # Kafka reports the LSO whatever the isolation level
    h.broker.replicas.append_marker("tx", 0, 7, 0, 0, commit=False)   # 4
    h.broker.replicas.append_marker("tx", 0, 8, 0, 0, commit=True)    # 5
    after = fetch(h, "tx", 0, isolation=1)
    assert after.last_stable_offset == after.high_watermark == 6
    assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [(7, 1)]
    # The consumer drops 1-2 itself (their producer is listed from offset 1 until its abort marker); the two
    # markers (4, 5) are control records it never hands to the application.
    assert [v for _, v in values(after.records)][:4] == [b"p0", b"a1", b"a2", b"c1"]
    assert [o for o, _ in values(after.records)] == [0, 1, 2, 3, 4, 5]
    assert fetch(h, "tx", 0, isolation=0).aborted_transactions is None
    assert latest(h, "tx", 1) == 6


def test_parked_read_committed_fetch_wakes_on_the_commit_marker(h):
    assert create(h, "wake").error_code == ErrorCode.none
    txn_append(h, "wake", 3, 0, b"x")
    consumer = h.connect()
    body = fetch_body("wake", 0, max_wait_ms=30_000)
    body["isolation_level"] = 1
    pending = consumer.send(FETCH, 12, body)
    h.settle()
    assert not pending.done()  # nothing below the LSO: parked
    h.broker.replicas.append_marker("wake", 0, 3, 0, 0, commit=True)
    h.settle()
    part = pending.result().responses[0].partitions[0]
    assert part.last_stable_offset == 2
    assert [o for o, _ in values(part.records)] == [0, 1]  # the record and its commit marker
