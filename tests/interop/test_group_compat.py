"""Group behaviour Burrow (sarama) sees, the same on our broker and on Apache Kafka 3.9 (issue 14)."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lagmonitor.decode import GroupMetadata, GroupTombstone, OffsetTombstone, decode_record
from tests.e2e.helpers import wait_until
from tests.interop.conftest import KRAFT


def _produce(bootstrap: str, topic: str, n: int = 3) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0


def _offsets_topic_records(bootstrap: str, group: str) -> list:
    """Every decoded __consumer_offsets record of `group`, read to the end of every partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False})
    try:
        md = c.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
        ends = {p: c.get_watermark_offsets(TopicPartition("__consumer_offsets", p), timeout=10)[1]
                for p in md.partitions}
        c.assign([TopicPartition("__consumer_offsets", p, 0) for p in ends])
        seen: dict[int, int] = {p: 0 for p in ends}
        out = []
        for _ in range(2000):
            if all(seen[p] >= ends[p] for p in ends):
                break
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            seen[msg.partition()] = msg.offset() + 1
            rec = decode_record(msg.key(), msg.value())
            if getattr(rec, "group", None) == group:
                out.append(rec)
        return out
    finally:
        c.close()


def test_member_host_is_written_as_java_writes_it(backend, topic_name):
    _produce(backend.bootstrap, topic_name)
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = Consumer({"bootstrap.servers": backend.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic_name])
        wait_until(lambda: c.poll(0.5) is not None and c.assignment(), 60, what="group joined")
        admin = AdminClient({"bootstrap.servers": backend.bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result(30)
        assert [m.host for m in desc.members] == ["/127.0.0.1"]
    finally:
        c.close()
    metadata = [r for r in _offsets_topic_records(backend.bootstrap, group) if isinstance(r, GroupMetadata)]
    assert metadata and all(m.client_host == "/127.0.0.1" for r in metadata for m in r.members)


def test_deleting_a_group_that_never_rebalanced_writes_no_group_tombstone(backend, topic_name):
    """Offsets committed without joining (generation 0): Kafka 3.9 tombstones the offsets, not the group. Kafka 4's
    group coordinator (KIP-848's rewrite, GroupCoordinatorShard) keeps a classic group record for such a group too,
    so deleting it writes the GroupTombstone as well: asserted as such on the `kraft` backend."""
    _produce(backend.bootstrap, topic_name)
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = Consumer({"bootstrap.servers": backend.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic_name, 0, 2)], asynchronous=False)
    finally:
        c.close()
    admin = AdminClient({"bootstrap.servers": backend.bootstrap})
    admin.delete_consumer_groups([group])[group].result(30)
    records = _offsets_topic_records(backend.bootstrap, group)
    assert any(isinstance(r, OffsetTombstone) for r in records), records
    assert any(isinstance(r, GroupTombstone) for r in records) == (backend.name == KRAFT), records
