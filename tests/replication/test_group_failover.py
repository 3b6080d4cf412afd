"""A consumer group keeps consuming when the broker coordinating it (the leader of its __consumer_offsets
partition) is killed; offsets committed before are kept by the new coordinator."""

from __future__ import annotations

import uuid

from broker.coordinator.group_metadata_manager import coordinator_partition
from broker.coordinator.offsets_schema import OffsetCommitKey, decode_key, decode_offset_commit_value
from kafkascope.local.cluster import wait_for
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import records as visible_records
from tests.replication.helpers import FIND_COORDINATOR, create_topic, metadata, produce_to_leader, topic_name

SESSION_MS = 6000
OFFSETS_PARTITIONS = 10  # the launcher's offsets.topic.num.partitions
PARTS = 3
PER_PART = 100


def _coordinator(port: int, group: str) -> int:
    with WireClient(port) as w:
        resp = w.call(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    assert resp.error_code == 0, resp
    return resp.node_id


def _offsets_partition(group: str) -> int:
    return coordinator_partition(group, OFFSETS_PARTITIONS)


def _replicated_commits(port: int, group: str, p: int) -> dict[tuple[str, int], int]:
    """Latest committed offsets of `group` among the records of its offsets partition below the high
    watermark, i.e. the commits every ISR member has."""
    out = {}
    for r in visible_records(port, "__consumer_offsets", p):
        k = decode_key(r.key)
        if isinstance(k, OffsetCommitKey) and k.group == group and r.value is not None:
            out[(k.topic, k.partition)] = decode_offset_commit_value(r.value).offset
    return out


def kill_coordinator_once_replicated(c, coord: int, group: str, op: int, committed: dict, wait_s: float) -> int:
    """Wait until `committed` is on every ISR member of the group's offsets partition `op` (OffsetCommit is
    answered once replicated, but the client's commits may still be in flight), kill -9 the coordinator, and
    return the new coordinator a surviving broker names within `wait_s`."""
    port = c.broker(coord).port
    wait_for(lambda: _replicated_commits(port, group, op) == committed, 10, what="commit replicated")
    c.broker(coord).kill()
    survivor = next(b.port for b in c.brokers if b.broker_id != coord)
    return wait_for(lambda: (n := _coordinator(survivor, group)) != coord and (n,), wait_s,
                    what="a new coordinator")[0]


def test_group_keeps_consuming_when_its_coordinator_dies(cluster_factory):
    from confluent_kafka import Consumer, TopicPartition

    c = cluster_factory(brokers=3, **{"min.insync.replicas": 2, "zookeeper.session.timeout.ms": SESSION_MS})
    topic = topic_name("grp")
    create_topic(c, topic, PARTS)
    for p in range(PARTS):
        produce_to_leader(c, topic, p, [f"{p}-{i}".encode() for i in range(PER_PART)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    conf = {"bootstrap.servers": c.bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000}
    consumer = Consumer(conf)
    seen: set[bytes] = set()
    try:
        consumer.subscribe([topic])
        # consume about half, commit synchronously
        while len(seen) < PARTS * PER_PART // 2:
            msgs = consumer.consume(50, 1.0)
            seen.update(m.value() for m in msgs if not m.error())
        # (partitions not consumed yet are listed with an invalid offset, -1001, and are not committed)
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.commit(asynchronous=False)
                     if tp.offset >= 0}
        assert sum(committed.values()) >= PARTS * PER_PART // 2

        coord = _coordinator(c.brokers[0].port, group)
        op = _offsets_partition(group)
        assert metadata(c, ["__consumer_offsets"]).part("__consumer_offsets", op).leader == coord
        # a new coordinator, on a surviving broker, which knows the committed offsets
        new = kill_coordinator_once_replicated(c, coord, group, op, committed, SESSION_MS / 1000 + 15)
        assert new != coord
        probe = Consumer({**conf, "group.id": group})
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTS)]
            kept = wait_for(lambda: {(tp.topic, tp.partition): tp.offset for tp in probe.committed(tps, 10)
                                     if tp.offset >= 0}, 20, what="committed offsets from the new coordinator")
        finally:
            probe.close()
        assert kept == committed

        # the original member keeps consuming to the end (after rejoining if its session ran out while the
        # coordinator was away) and commits again
        def at_end():
            seen.update(m.value() for m in consumer.consume(100, 0.5) if not m.error())
            return len(seen) == PARTS * PER_PART and len(consumer.assignment()) == PARTS
        wait_for(at_end, 45, what="all records consumed with every partition assigned")
        # (librdkafka's position() stays unset for a partition that resumed at its end: commit explicitly)
        ends = [TopicPartition(topic, p, PER_PART) for p in range(PARTS)]

        def commit():
            consumer.consume(10, 0.2)  # polling serves a pending rejoin (e.g. after UNKNOWN_MEMBER_ID)
            return consumer.commit(offsets=ends, asynchronous=False)
        wait_for(commit, 30, what="commit after the failover")
        probe = Consumer({**conf, "group.id": group})
        try:
            final = {(tp.topic, tp.partition): tp.offset for tp in probe.committed(tps, 10)}
        finally:
            probe.close()
        assert final == {(topic, p): PER_PART for p in range(PARTS)}
    finally:
        consumer.close()
    assert seen == {f"{p}-{i}".encode() for p in range(PARTS) for i in range(PER_PART)}
