"""Transactions on a 3-broker ZooKeeper cluster of ours (KIP-98): markers reach partition leaders on other
brokers over WriteTxnMarkers, `__transaction_state` is replicated (RF 3, min.isr 2), and a kill -9 of the
transaction coordinator's broker in the middle of a transaction hands it to the new leader of its state
partition, where the producer commits it."""

from __future__ import annotations

from broker.coordinator.group_metadata_manager import coordinator_partition
from broker.log.records import Record, build_batch
from kafkascope.local.cluster import wait_for
from kafkascope.local.wire import WireClient
from tests.replication.helpers import create_topic, leader, metadata, topic_name, wait_healthy
from tests.scenarios.transactions import consume_all, producer, transaction

SESSION_MS = 6000
INVALID_TXN_STATE = 48
STATE_PARTITIONS = 3
PROPS = {"transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
         "transaction.state.log.num.partitions": STATE_PARTITIONS,
         "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
         "zookeeper.session.timeout.ms": SESSION_MS, "min.insync.replicas": 2}


def stray_transactional_produce(c, topic: str, partition: int, txn_id: str) -> int:
    batch = build_batch([Record(timestamp=1, value=b"stray")], producer_id=999_999, producer_epoch=0,
                        base_sequence=0, is_transactional=True)
    with WireClient(c.broker(leader(c, topic, partition)).port) as w:
        resp = w.call(0, 9, {"transactional_id": txn_id, "acks": -1, "timeout": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return resp.responses[0].partition_responses[0].error_code


def state_partition(txn_id: str) -> int:
    return coordinator_partition(txn_id, STATE_PARTITIONS)


def test_transactions_survive_the_coordinators_broker(cluster_factory):
    c = cluster_factory(3, **PROPS)
    topic = topic_name("tx")
    create_topic(c, topic, partitions=3, rf=3)
    wait_healthy(c, topic, 3)
    txn_id = "cluster-app"
    p = producer(c.bootstrap, txn_id)
    p.init_transactions(60)
    transaction(p, topic, "c", 9, commit=True, timeout_s=60)
    transaction(p, topic, "a", 3, commit=False, timeout_s=60)
    leaders = {leader(c, topic, i) for i in range(3)}
    coordinator = leader(c, "__transaction_state", state_partition(txn_id))
    assert leaders - {coordinator}, "every partition led by the coordinator: no WriteTxnMarkers was sent"
    committed = consume_all(c.bootstrap, topic, "read_committed", expect=9, timeout_s=30)
    assert sorted(v for _, _, v in committed) == sorted(f"c{i}".encode() for i in range(9))
    # KIP-890 part 1 across brokers: a leader that is not the coordinator asks it (AddPartitionsToTxn v4) and
    # refuses a transactional batch of a transaction that never added the partition.
    other = next(i for i in range(3) if leader(c, topic, i) != coordinator)
    assert stray_transactional_produce(c, topic, other, txn_id) == INVALID_TXN_STATE

    p.begin_transaction()
    for i in range(3):
        p.produce(topic, f"k{i}".encode(), partition=i)
    p.flush(10)
    c.broker(coordinator).kill()  # kill -9 with the transaction open
    wait_for(lambda: metadata(c, ["__transaction_state"], exclude=(coordinator,))
             .part("__transaction_state", state_partition(txn_id)).leader not in (coordinator, -1),
             SESSION_MS / 1000 + 20, what="a new transaction coordinator")
    p.commit_transaction(60)  # the producer finds the new coordinator, which loaded the Ongoing state
    committed = consume_all(c.bootstrap, topic, "read_committed", expect=12, timeout_s=60)
    assert sorted(v for _, _, v in committed) == sorted([f"c{i}".encode() for i in range(9)] +
                                                        [f"k{i}".encode() for i in range(3)])
