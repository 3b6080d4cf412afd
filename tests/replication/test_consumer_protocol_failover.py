"""A KIP-848 consumer group (librdkafka, group.protocol=consumer) when the broker coordinating it is killed: the
new coordinator rebuilds the group from the replicated records of its __consumer_offsets partition (the same
member, its epoch), keeps the committed offsets, and the member consumes to the end and commits again."""

from __future__ import annotations

import uuid

from kafkascope.local.cluster import wait_for
from kafkascope.local.wire import WireClient
from tests.replication.helpers import create_topic, metadata, produce_to_leader, topic_name
from tests.replication.test_group_failover import (
    _coordinator,
    _offsets_partition,
    kill_coordinator_once_replicated,
)

SESSION_MS = 6000
PARTS = 3
PER_PART = 100
CONSUMER_GROUP_DESCRIBE = 69


def _described(port: int, group: str):
    with WireClient(port) as w:
        return w.call(CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
                      ).groups[0]


def test_consumer_group_resumes_on_the_new_coordinator(cluster_factory):
    from confluent_kafka import Consumer, TopicPartition

    c = cluster_factory(brokers=3, **{"min.insync.replicas": 2, "zookeeper.session.timeout.ms": SESSION_MS,
                                      "group.consumer.session.timeout.ms": SESSION_MS,
                                      "group.consumer.min.session.timeout.ms": 1000,
                                      "group.consumer.heartbeat.interval.ms": 500,
                                      "group.consumer.min.heartbeat.interval.ms": 100})
    topic = topic_name("kip848")
    create_topic(c, topic, PARTS)
    for p in range(PARTS):
        produce_to_leader(c, topic, p, [f"{p}-{i}".encode() for i in range(PER_PART)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    conf = {"bootstrap.servers": c.bootstrap, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000}
    consumer = Consumer(conf)
    seen: set[bytes] = set()
    try:
        consumer.subscribe([topic])
        while len(seen) < PARTS * PER_PART // 2:
            seen.update(m.value() for m in consumer.consume(50, 1.0) if not m.error())
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.commit(asynchronous=False)
                     if tp.offset >= 0}
        coord = _coordinator(c.brokers[0].port, group)
        # A second member joins and leaves, so the group epoch is past what a rejoin would start from (1).
        other = Consumer(conf)

        def members(n: int, polling: list) -> bool:
            for x in polling:
                x.poll(0.1)   # what the second member reads is not committed: the first reads it again later
            seen.update(m.value() for m in consumer.consume(50, 0.1) if not m.error())
            return len(_described(c.broker(coord).port, group).members) == n
        other.subscribe([topic])
        wait_for(lambda: members(2, [other]), 30, what="a second member")
        other.close()
        wait_for(lambda: members(1, []), 30, what="the second member gone")
        op = _offsets_partition(group)
        assert metadata(c, ["__consumer_offsets"]).part("__consumer_offsets", op).leader == coord
        before = _described(c.broker(coord).port, group)
        assert before.error_code == 0 and len(before.members) == 1 and before.group_epoch >= 3
        new = kill_coordinator_once_replicated(c, coord, group, op, committed, SESSION_MS / 1000 + 15)
        after = wait_for(lambda: (d := _described(c.broker(new).port, group)).error_code == 0 and d, 20,
                         what="the group on the new coordinator")
        # Rebuilt from the records, not rejoined: the same member id, and no epoch older than before.
        assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
        assert after.group_epoch >= before.group_epoch

        def at_end():
            seen.update(m.value() for m in consumer.consume(100, 0.5) if not m.error())
            return len(seen) == PARTS * PER_PART and len(consumer.assignment()) == PARTS
        wait_for(at_end, 45, what="all records consumed with every partition assigned")
        ends = [TopicPartition(topic, p, PER_PART) for p in range(PARTS)]

        def commit():
            consumer.consume(10, 0.2)
            return consumer.commit(offsets=ends, asynchronous=False)
        wait_for(commit, 30, what="commit after the failover")
        tps = [TopicPartition(topic, p) for p in range(PARTS)]
        final = wait_for(lambda: {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(tps, 10)}, 20,
                         what="committed offsets")
        assert final == {(topic, p): PER_PART for p in range(PARTS)}
    finally:
        consumer.close()
    assert seen == {f"{p}-{i}".encode() for p in range(PARTS) for i in range(PER_PART)}
