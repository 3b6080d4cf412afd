"""confluent-kafka's transactional producer against our standalone broker (KIP-98): commit and abort across
three partitions, read_committed vs read_uncommitted, fencing by a second producer with the same
transactional.id, send_offsets_to_transaction visible only on commit, and a kill -9 in the middle of a
transaction leaving nothing half visible after the restart."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from common.polling import wait_until
from kafkascope.local.broker_process import BrokerProcess

TXN_PROPS = {"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
             "transaction.state.log.num.partitions": 5,
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}


@pytest.fixture
def txn_broker(tmp_path):
    b = BrokerProcess(tmp_path, **TXN_PROPS).start()
    yield b
    b.stop()


def create_topic(bootstrap: str, name: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def producer(bootstrap: str, txn_id: str, timeout_ms: int = 60000) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "transaction.timeout.ms": timeout_ms, "linger.ms": 0})


def consume_all(bootstrap: str, topic: str, isolation: str, expect: int | None = None,
                timeout_s: float = 15.0, partitions: int = 3) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record up to the end, read with `isolation`."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    c.subscribe([topic])
    out: list[tuple[int, int, bytes]] = []
    eof: set[int] = set()

    def step() -> bool:
        m = c.poll(0.2)
        if m is not None:
            if m.error() is None:
                out.append((m.partition(), m.offset(), m.value()))
            elif m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
        done = len(eof) == partitions if expect is None else len(out) >= expect and len(eof) == partitions
        return done

    try:
        wait_until(step, timeout_s, interval_s=0, what=f"{isolation} read of {topic}")
    finally:
        c.close()
    return out


def test_commit_and_abort_across_partitions(txn_broker, topic_name):
    bs = txn_broker.bootstrap
    create_topic(bs, topic_name)
    p = producer(bs, "tx-commit-abort")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(9):
        p.produce(topic_name, f"c{i}".encode(), partition=i % 3)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic_name, f"a{i}".encode(), partition=i % 3)
    p.flush(10)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic_name, f"d{i}".encode(), partition=i % 3)
    p.commit_transaction(30)

    committed = consume_all(bs, topic_name, "read_committed", expect=12)
    values = [v for _, _, v in committed]
    assert sorted(values) == sorted([f"c{i}".encode() for i in range(9)] + [f"d{i}".encode() for i in range(3)])
    for part in range(3):  # in order within each partition
        mine = [v for p_, _, v in committed if p_ == part]
        assert mine == [f"c{i}".encode() for i in range(9) if i % 3 == part] + [f"d{part}".encode()]
    uncommitted = [v for _, _, v in consume_all(bs, topic_name, "read_uncommitted", expect=18)]
    assert sorted(uncommitted) == sorted(values + [f"a{i}".encode() for i in range(6)])


def test_second_producer_fences_the_first(txn_broker, topic_name):
    bs = txn_broker.bootstrap
    create_topic(bs, topic_name)
    first = producer(bs, "tx-fence")
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic_name, b"zombie", partition=0)
    first.flush(10)
    second = producer(bs, "tx-fence")
    second.init_transactions(30)  # aborts the first one's transaction and bumps the epoch
    second.begin_transaction()
    second.produce(topic_name, b"winner", partition=1)
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        first.produce(topic_name, b"late", partition=2)
        first.commit_transaction(10)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    committed = [v for _, _, v in consume_all(bs, topic_name, "read_committed", expect=1)]
    assert committed == [b"winner"]


def test_send_offsets_to_transaction_visible_only_on_commit(txn_broker, topic_name):
    bs = txn_broker.bootstrap
    create_topic(bs, topic_name)
    group = f"eos-{uuid.uuid4().hex[:6]}"
    admin_consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    meta = admin_consumer.list_topics(topic_name, 10)
    assert len(meta.topics[topic_name].partitions) == 3

    def committed_offsets() -> list[int]:
        tps = admin_consumer.committed([TopicPartition(topic_name, i) for i in range(3)], 10)
        return [tp.offset for tp in tps]

    p = producer(bs, "tx-offsets")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic_name, b"x", partition=0)
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 5), TopicPartition(topic_name, 1, 7)],
                                  admin_consumer.consumer_group_metadata(), 30)
    p.flush(10)
    assert committed_offsets() == [-1001, -1001, -1001]  # not visible before the commit
    p.commit_transaction(30)
    wait_until(lambda: committed_offsets()[:2] == [5, 7], 10, what="offsets visible after commit")
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 9)], admin_consumer.consumer_group_metadata(), 30)
    p.abort_transaction(30)
    assert committed_offsets()[:2] == [5, 7]  # aborted: never visible
    admin_consumer.close()


def test_kill_mid_transaction_leaves_nothing_half_visible(tmp_path, topic_name):
    b = BrokerProcess(tmp_path, **TXN_PROPS).start()
    try:
        bs = b.bootstrap
        create_topic(bs, topic_name)
        p = producer(bs, "tx-crash", timeout_ms=3000)
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(3):
            p.produce(topic_name, f"ok{i}".encode(), partition=i)
        p.commit_transaction(30)
        p.begin_transaction()
        for i in range(3):
            p.produce(topic_name, f"half{i}".encode(), partition=i)
        p.flush(10)
        b.kill()  # kill -9 with the transaction open on three partitions
        b.start()
        # The reloaded coordinator aborts it once transaction.timeout.ms (3 s) has passed; then the LSO moves on.
        committed = consume_all(bs, topic_name, "read_committed", expect=3, timeout_s=30)
        assert sorted(v for _, _, v in committed) == [b"ok0", b"ok1", b"ok2"]
        # Nothing more ever shows up: a new transaction commits and only it is added.
        q = producer(bs, "tx-crash-2")
        q.init_transactions(30)
        q.begin_transaction()
        q.produce(topic_name, b"after", partition=0)
        q.commit_transaction(30)
        again = [v for _, _, v in consume_all(bs, topic_name, "read_committed", expect=4, timeout_s=30)]
        assert sorted(again) == [b"after", b"ok0", b"ok1", b"ok2"]
    finally:
        b.stop()
