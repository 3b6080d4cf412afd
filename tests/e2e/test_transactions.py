"""confluent-kafka's transactional producer against our standalone broker (KIP-98): commit and abort across
three partitions, read_committed vs read_uncommitted, fencing by a second producer with the same
transactional.id, an expired transaction aborted by the coordinator (those bodies are shared with the interop
suite: tests/scenarios/transactions.py), send_offsets_to_transaction visible only on commit, and a kill -9 in the
middle of a transaction leaving nothing half visible after the restart."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from common.polling import wait_until
from kafkascope.local.broker_process import BrokerProcess
from tests.scenarios import transactions
from tests.scenarios.transactions import TXN_PROPS, consume_all, create_topic, producer


@pytest.fixture
def txn_broker(tmp_path):
    b = BrokerProcess(tmp_path, **TXN_PROPS).start()
    yield b
    b.stop()


def test_commit_and_abort_across_partitions(txn_broker, topic_name):
    transactions.commit_and_abort_across_partitions(txn_broker, topic_name)


def test_second_producer_fences_the_first(txn_broker, topic_name):
    transactions.second_producer_fences_the_first(txn_broker, topic_name)


def test_expired_transaction_is_aborted_and_the_lso_moves_on(txn_broker, topic_name):
    transactions.expired_transaction_is_aborted(txn_broker, topic_name)


def test_send_offsets_to_transaction_visible_only_on_commit(txn_broker, topic_name):
    bs = txn_broker.bootstrap
    create_topic(bs, topic_name)
    group = f"eos-{uuid.uuid4().hex[:6]}"
    # read_uncommitted: librdkafka then asks OffsetFetch without require_stable; under its default read_committed
    # the pending offsets answer UNSTABLE_OFFSET_COMMIT and committed() retries until the commit (KIP-447), as on
    # Kafka (tests/scenarios/transactions.py: pending_offsets_are_unstable).
    admin_consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                               "isolation.level": "read_uncommitted"})
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


def test_pending_transactional_offsets_are_unstable(txn_broker, topic_name):
    transactions.pending_offsets_are_unstable(txn_broker, topic_name)
