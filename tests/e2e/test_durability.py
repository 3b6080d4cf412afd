"""Durability against the real broker subprocess: restarts, crashes, retention, compaction, LogAppendTime,
idempotent retries over the raw wire, and committed group offsets in __consumer_offsets."""

from __future__ import annotations

import time
import uuid

import pytest

from broker.coordinator import offsets_schema
from broker.log.records import Record, build_batch
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import (
    EARLIEST,
    INIT_PRODUCER_ID,
    LATEST,
    PRODUCE,
    create_topic,
    list_offset,
    records,
    wait_until,
)
from tests.scenarios import durability
from tests.scenarios.clients import consume, produce
from tests.scenarios.durability import numbered, partition_dir, produce_batches

DESCRIBE_CONFIGS = 32


def _topic_config(port: int, topic: str) -> dict[str, str]:
    with WireClient(port) as w:
        resp = w.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                           "configuration_keys": None}],
                                            "include_synonyms": False, "include_documentation": False})
        r = resp.results[0]
        assert r.error_code == 0, r
        return {c.name: c.value for c in r.configs}


def _commit(bootstrap: str, topic: str, group: str, offset: int) -> None:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def _committed(bootstrap: str, topic: str, group: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        c.close()


def _check_all(bootstrap: str, topic: str, recs) -> None:
    got = consume("confluent", bootstrap, topic, len(recs))
    assert [r[1] for r in got] == list(range(len(recs)))
    assert [(k, v, [(hk, bytes(hv)) for hk, hv in h]) for _, _, k, v, h, _, _ in got] == recs


# ---------------------------------------------------------------- restart persistence

def test_restart_keeps_records_offsets_and_configs(broker, topic_name):
    broker.start()
    create_topic(broker.port, topic_name, retention_ms="123456789", cleanup_policy="compact,delete",
                 max_message_bytes="500000")
    recs = numbered(60)
    produce_batches(broker.bootstrap, topic_name, recs)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(broker.bootstrap, topic_name, group, 42)
    assert broker.stop() == 0
    broker.start()
    _check_all(broker.bootstrap, topic_name, recs)
    assert list_offset(broker.port, topic_name, 0, LATEST) == 60
    assert _committed(broker.bootstrap, topic_name, group) == 42
    cfg = _topic_config(broker.port, topic_name)
    assert (cfg["retention.ms"], cfg["cleanup.policy"], cfg["max.message.bytes"]) == (
        "123456789", "compact,delete", "500000")
    # and the log keeps growing at the right offset
    produce("confluent", broker.bootstrap, topic_name, [(b"after", b"restart", [])], partition=0)
    assert list_offset(broker.port, topic_name, 0, LATEST) == 61


# ---------------------------------------------------------------- crash recovery

def test_kill9_keeps_every_acked_record(broker, topic_name):
    broker.start()
    create_topic(broker.port, topic_name)
    recs = numbered(100)
    produce_batches(broker.bootstrap, topic_name, recs)   # each batch acked (acks=1) before the kill
    broker.kill()
    broker.start()
    _check_all(broker.bootstrap, topic_name, recs)
    assert list_offset(broker.port, topic_name, 0, LATEST) == 100


def test_kill9_then_torn_tail_and_lost_index(broker, topic_name):
    broker.props["log.index.interval.bytes"] = 64   # index entries for (almost) every batch
    broker.start()
    create_topic(broker.port, topic_name, segment_bytes="2048")
    recs = numbered(120)
    produce_batches(broker.bootstrap, topic_name, recs)
    broker.kill()
    d = partition_dir(broker, topic_name)
    logs = sorted(d.glob("*.log"))
    assert len(logs) > 1, "expected several segments"
    with open(logs[-1], "ab") as f:              # a torn write at the end of the active segment
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x78\x00\x00\x01\x00garbage-garbage" + b"\xab" * 50)
    idx = sorted(d.glob("*.index"))
    assert idx
    idx[0].unlink()                              # a lost index of an old segment
    idx[-1].unlink()                             # and of the active one
    broker.start()
    _check_all(broker.bootstrap, topic_name, recs)
    assert list_offset(broker.port, topic_name, 0, LATEST) == 120
    # fetching from the middle (index lookups) still lands on the right record
    got = {r.offset: r.value for r in records(broker.port, topic_name)}
    assert got == {i: f"v{i}".encode() for i in range(120)}
    produce("confluent", broker.bootstrap, topic_name, [(b"k", b"next", [])], partition=0)
    assert list_offset(broker.port, topic_name, 0, LATEST) == 121
    got = consume("kafka-python", broker.bootstrap, topic_name, 121)
    assert [r[1] for r in got] == list(range(121)) and got[-1][3] == b"next"


# ---------------------------------------------------------------- retention

def test_retention_by_time(broker, topic_name):
    broker.props["log.retention.check.interval.ms"] = 200
    broker.start()
    create_topic(broker.port, topic_name, segment_bytes="1024", retention_ms="1500")
    recs = numbered(80)
    produce_batches(broker.bootstrap, topic_name, recs)
    assert list_offset(broker.port, topic_name, 0, EARLIEST) == 0
    # every segment, the active one too, becomes older than retention.ms: as in Kafka the log rolls and empties
    wait_until(lambda: list_offset(broker.port, topic_name, 0, EARLIEST) == 80, 30, what="log start reaching the end")
    wait_until(lambda: len(list(partition_dir(broker, topic_name).glob("*.log"))) == 1, 30,
               what="only the new empty segment left")
    assert list_offset(broker.port, topic_name, 0, LATEST) == 80
    produce_batches(broker.bootstrap, topic_name, [(b"k", b"after", [])])  # the log continues at 80
    got = consume("confluent", broker.bootstrap, topic_name, 1)
    assert got and got[-1][1] == 80 and got[-1][3] == b"after"


def test_retention_by_size(broker, topic_name):
    broker.props["log.retention.check.interval.ms"] = 200
    broker.start()
    durability.retention_by_size(broker, topic_name)


# ---------------------------------------------------------------- compaction

def test_compaction_keeps_latest_per_key_and_drops_tombstones(broker, topic_name):
    broker.props["log.cleaner.backoff.ms"] = 100
    broker.start()
    create_topic(broker.port, topic_name, cleanup_policy="compact", segment_bytes="1024",
                 min_cleanable_dirty_ratio="0.01", delete_retention_ms="1000")
    keys = [f"key-{i}".encode() for i in range(8)]
    recs = [(k, f"{k.decode()}-v{n}".encode(), []) for n in range(12) for k in keys]
    recs += [(keys[0], None, []), (keys[1], None, [])]          # tombstones
    produce_batches(broker.bootstrap, topic_name, recs, per_batch=8)
    # roll the active segment past everything above with big records of another key (under segment.bytes)
    produce("confluent", broker.bootstrap, topic_name, [(b"filler", b"x" * 800, [])], partition=0)
    produce("confluent", broker.bootstrap, topic_name, [(b"filler", b"y" * 800, [])], partition=0)
    expected = {k: f"{k.decode()}-v11".encode() for k in keys[2:]}

    def compacted():
        rs = [r for r in records(broker.port, topic_name) if r.key != b"filler"]
        latest = {r.key: r.value for r in rs}
        if len(rs) == len(expected) and latest == expected:
            return rs
        # A tombstone goes in a later pass, once it is older than delete.retention.ms; as in Kafka, a pass
        # needs new dirty data, so keep rolling segments with filler records.
        produce("confluent", broker.bootstrap, topic_name, [(b"filler", b"z" * 800, [])], partition=0)
        return None

    rs = wait_until(compacted, 40, interval_s=0.5, what="compacted log without tombstones")
    end = list_offset(broker.port, topic_name, 0, LATEST)
    offs = [r.offset for r in rs]
    assert offs == sorted(offs) and len(set(offs)) == len(offs)
    # offsets are kept: each survivor sits where it was produced
    assert all(recs[r.offset][0] == r.key and recs[r.offset][1] == r.value for r in rs)
    assert list_offset(broker.port, topic_name, 0, LATEST) == end
    # and a real client reading from the beginning sees the same
    fillers = sum(1 for r in records(broker.port, topic_name) if r.key == b"filler")
    got = consume("aiokafka", broker.bootstrap, topic_name, len(expected) + fillers)
    assert {k: v for _, _, k, v, *_ in got if k != b"filler"} == expected
    assert [r[1] for r in got] == sorted(r[1] for r in got)


# ---------------------------------------------------------------- LogAppendTime

@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_log_append_time(shared_broker, topic_name, client):
    durability.log_append_time(shared_broker, topic_name, client)


# ---------------------------------------------------------------- idempotent retries on the raw wire

def _init_pid(port: int) -> tuple[int, int]:
    with WireClient(port) as w:
        r = w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                         "producer_id": -1, "producer_epoch": -1})
        assert r.error_code == 0, r
        return r.producer_id, r.producer_epoch


def _produce_raw(port: int, topic: str, batch: bytes):
    with WireClient(port) as w:
        r = w.call(PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        return r.responses[0].partition_responses[0]


def _idem_batch(pid: int, epoch: int, seq: int, n: int, tag: str) -> bytes:
    return build_batch([Record(key=b"k", value=f"{tag}-{seq + i}".encode()) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.mark.parametrize("restart", ["sigterm", "kill9"])
def test_idempotent_retries_raw_wire(broker, topic_name, restart):
    broker.start()
    create_topic(broker.port, topic_name)
    pid, epoch = _init_pid(broker.port)
    b0 = _idem_batch(pid, epoch, 0, 5, "a")
    r1 = _produce_raw(broker.port, topic_name, b0)
    assert r1.error_code == 0 and r1.base_offset == 0
    r2 = _produce_raw(broker.port, topic_name, b0)            # the same batch again (a retry)
    assert r2.error_code == 0 and r2.base_offset == 0
    assert list_offset(broker.port, topic_name, 0, LATEST) == 5
    b1 = _idem_batch(pid, epoch, 5, 3, "a")
    assert _produce_raw(broker.port, topic_name, b1).base_offset == 5
    gap = _idem_batch(pid, epoch, 20, 2, "a")                 # sequence gap
    assert _produce_raw(broker.port, topic_name, gap).error_code == 45   # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert list_offset(broker.port, topic_name, 0, LATEST) == 8

    broker.stop() if restart == "sigterm" else broker.kill()
    broker.start()
    r3 = _produce_raw(broker.port, topic_name, b1)            # a retry that straddles the restart
    assert r3.error_code == 0 and r3.base_offset == 5
    r4 = _produce_raw(broker.port, topic_name, b0)
    assert r4.error_code == 0 and r4.base_offset == 0
    assert list_offset(broker.port, topic_name, 0, LATEST) == 8
    assert _produce_raw(broker.port, topic_name, gap).error_code == 45
    assert _produce_raw(broker.port, topic_name, _idem_batch(pid, epoch, 8, 2, "a")).base_offset == 8
    values = [r.value for r in records(broker.port, topic_name)]
    assert values == [f"a-{i}".encode() for i in range(10)]


# ---------------------------------------------------------------- __consumer_offsets

def _read_consumer_offsets(bootstrap: str, n_partitions: int) -> list[tuple[object, bytes | None]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition("__consumer_offsets", p, OFFSET_BEGINNING) for p in range(n_partitions)])
    out, eof = [], set()
    deadline = time.monotonic() + 30
    try:
        while len(eof) < n_partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            out.append((offsets_schema.decode_key(m.key()), m.value()))
    finally:
        c.close()
    assert len(eof) == n_partitions, "did not reach the end of __consumer_offsets"
    return out


@pytest.mark.parametrize("restart", ["sigterm", "kill9"])
def test_group_offsets_survive_restart_and_decode_from_consumer_offsets(broker, topic_name, restart):
    broker.start()
    create_topic(broker.port, topic_name)
    produce("confluent", broker.bootstrap, topic_name, numbered(10), partition=0)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(broker.bootstrap, topic_name, group, 3)
    _commit(broker.bootstrap, topic_name, group, 7)
    broker.stop() if restart == "sigterm" else broker.kill()
    broker.start()
    assert _committed(broker.bootstrap, topic_name, group) == 7
    entries = _read_consumer_offsets(broker.bootstrap, int(broker.props["offsets.topic.num.partitions"]))
    mine = [offsets_schema.decode_offset_commit_value(v).offset for k, v in entries
            if isinstance(k, offsets_schema.OffsetCommitKey) and v is not None
            and (k.group, k.topic, k.partition) == (group, topic_name, 0)]
    assert mine[-1] == 7 and 3 in mine[:-1]
    # a restart-surviving consumer resumes at 7
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    c.subscribe([topic_name])
    try:
        m = wait_until(lambda: (lambda x: x if x is not None and not x.error() else None)(c.poll(0.5)), 30,
                       interval_s=0, what="first record after resume")
        assert m.offset() == 7 and m.value() == b"v7"
    finally:
        c.close()


@pytest.mark.slow
def test_repeated_kill9_cycles_with_small_segments(broker, topic_name):
    """Soak variant: many crash/restart cycles with segment rolls and a torn tail each time."""
    broker.props["log.index.interval.bytes"] = 128
    broker.start()
    create_topic(broker.port, topic_name, segment_bytes="4096")
    acked: list = []
    for cycle in range(8):
        recs = numbered(150, prefix=f"c{cycle}-")
        produce_batches(broker.bootstrap, topic_name, recs, per_batch=15)
        acked += recs
        broker.kill()
        seg = sorted(partition_dir(broker, topic_name).glob("*.log"))[-1]
        with open(seg, "ab") as f:
            f.write(b"\x00" * 7 + b"torn" * cycle)
        broker.start()
        assert list_offset(broker.port, topic_name, 0, LATEST) == len(acked)
    _check_all(broker.bootstrap, topic_name, acked)


def test_retention_by_time_with_time_rolled_segments(broker, topic_name):
    """segment.ms rolls segments by age; retention.ms then deletes the old ones."""
    broker.props["log.retention.check.interval.ms"] = 200
    broker.start()
    create_topic(broker.port, topic_name, segment_ms="300", retention_ms="2000")
    sent: list = []

    def rolled() -> bool:
        recs = numbered(5, prefix=f"b{len(sent)}-")
        produce("confluent", broker.bootstrap, topic_name, recs, partition=0, acks=1)
        sent.extend(recs)
        return len(list(partition_dir(broker, topic_name).glob("*.log"))) >= 3

    wait_until(rolled, 20, interval_s=0.15, what="3 time-rolled segments")
    start = wait_until(lambda: list_offset(broker.port, topic_name, 0, EARLIEST) or None, 30,
                       what="log start offset moving")
    assert 0 < start <= len(sent)
    assert list_offset(broker.port, topic_name, 0, LATEST) == len(sent)
    got = [r.value for r in records(broker.port, topic_name)]
    first = list_offset(broker.port, topic_name, 0, EARLIEST)
    assert got == [v for _, v, _ in sent[first:]]
