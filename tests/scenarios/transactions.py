"""Transactions through confluent-kafka's transactional API (KIP-98), one body for every backend: our broker
(tests/e2e/test_transactions.py) and Apache Kafka 3.9 / 4.1 KRaft (tests/interop/test_transactions_scenarios.py).

Commit and abort across several partitions, read_committed (only committed, in order) vs read_uncommitted (all),
fencing by a second producer with the same transactional.id, and a transaction that outlives its
transaction.timeout.ms: the coordinator aborts it (TransactionCoordinator.abortTimedOutTransactions) and the Last
Stable Offset moves on.  The broker needs the transaction state log settings of TXN_PROPS (a single broker cannot
host Kafka's default replication factor 3 for `__transaction_state`).
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from common.polling import wait_until
from kafkascope.local.wire import WireClient
from tests.scenarios import Broker

# Kafka's own keys, accepted by both brokers; the cleanup interval (Kafka's default 10 s) keeps expiry quick.
TXN_PROPS = {"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
             "transaction.state.log.num.partitions": 5,
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}

LIST_OFFSETS = 2
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
PARTITION_EOF = -191  # librdkafka's _PARTITION_EOF


def create_topic(bootstrap: str, name: str, partitions: int = 3, rf: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(15)


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
            elif m.error().code() == PARTITION_EOF:
                eof.add(m.partition())
        return len(eof) == partitions and (expect is None or len(out) >= expect)

    try:
        wait_until(step, timeout_s, interval_s=0, what=f"{isolation} read of {topic}")
    finally:
        c.close()
    return out


def end_offset(port: int, topic: str, partition: int, isolation: int) -> int:
    """ListOffsets LATEST: the high watermark (read_uncommitted) or the Last Stable Offset (read_committed)."""
    with WireClient(port) as w:
        resp = w.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": -1}]}]})
    p = resp.topics[0].partitions[0]
    assert p.error_code == 0, p
    return int(p.offset)


def transaction(p, topic: str, prefix: str, n: int, commit: bool, partitions: int = 3,
                timeout_s: float = 30) -> None:
    """One transaction of `n` records `<prefix><i>`, record i to partition i % partitions; committed or aborted
    (after a flush, so the aborted records are in the log)."""
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, f"{prefix}{i}".encode(), partition=i % partitions)
    if commit:
        p.commit_transaction(timeout_s)
    else:
        p.flush(10)
        p.abort_transaction(timeout_s)


def commit_and_abort_across_partitions(broker: Broker, topic: str) -> None:
    """A committed, an aborted and a committed transaction over three partitions: read_committed sees the two
    committed ones, in produce order per partition; read_uncommitted sees every record."""
    bs = broker.bootstrap
    create_topic(bs, topic)
    p = producer(bs, f"tx-commit-abort-{topic}")
    p.init_transactions(30)
    transaction(p, topic, "c", 9, commit=True)
    transaction(p, topic, "a", 6, commit=False)
    transaction(p, topic, "d", 3, commit=True)

    committed = consume_all(bs, topic, "read_committed", expect=12)
    assert len(committed) == 12, committed
    for part in range(3):  # exactly the committed ones, in order within each partition
        mine = [v for p_, _, v in committed if p_ == part]
        assert mine == [f"c{i}".encode() for i in range(9) if i % 3 == part] + [f"d{part}".encode()]
    uncommitted = consume_all(bs, topic, "read_uncommitted", expect=18)
    for part in range(3):  # the aborted records too, where they were written; markers are never returned
        mine = [v for p_, _, v in uncommitted if p_ == part]
        assert mine == ([f"c{i}".encode() for i in range(9) if i % 3 == part] +
                        [f"a{i}".encode() for i in range(6) if i % 3 == part] + [f"d{part}".encode()])
    # Each partition holds 3 markers (commit, abort, commit) between the records: the log end counts them.
    assert [end_offset(broker.port, topic, i, READ_UNCOMMITTED) for i in range(3)] == [3 + 2 + 1 + 3] * 3
    assert [end_offset(broker.port, topic, i, READ_COMMITTED) for i in range(3)] == [9] * 3


def second_producer_fences_the_first(broker: Broker, topic: str) -> None:
    """InitProducerId with the same transactional.id aborts the older producer's open transaction and bumps the
    epoch: the older producer is fenced (PRODUCER_FENCED, fatal in librdkafka)."""
    bs = broker.bootstrap
    create_topic(bs, topic)
    txn_id = f"tx-fence-{topic}"
    first = producer(bs, txn_id)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    first.flush(10)
    second = producer(bs, txn_id)
    second.init_transactions(30)
    second.begin_transaction()
    second.produce(topic, b"winner", partition=1)
    second.commit_transaction(30)
    try:
        first.produce(topic, b"late", partition=2)
        first.commit_transaction(10)
    except KafkaException as e:
        err = e.args[0]
        assert err.fatal() or "fenced" in str(err).lower(), err
    else:
        raise AssertionError("the fenced producer committed")
    committed = [v for _, _, v in consume_all(bs, topic, "read_committed", expect=1)]
    assert committed == [b"winner"]
    uncommitted = sorted(v for _, _, v in consume_all(bs, topic, "read_uncommitted", expect=2))
    assert uncommitted == [b"winner", b"zombie"]  # the zombie's record stays in the log, aborted


def expired_transaction_is_aborted(broker: Broker, topic: str, timeout_ms: int = 4000) -> None:
    """A transaction left open past its transaction.timeout.ms holds the LSO at its first record, so a
    read_committed reader cannot pass it even to records committed after it; the coordinator then aborts it
    and the LSO reaches the high watermark, and the later committed records are read."""
    bs = broker.bootstrap
    create_topic(bs, topic)
    stale = producer(bs, f"tx-expire-{topic}", timeout_ms=timeout_ms)
    stale.init_transactions(30)
    stale.begin_transaction()
    for i in range(3):
        stale.produce(topic, f"open{i}".encode(), partition=i)
    stale.flush(10)  # written, then the producer goes quiet with the transaction open
    other = producer(bs, f"tx-after-{topic}")
    other.init_transactions(30)
    other.begin_transaction()
    for i in range(3):
        other.produce(topic, f"after{i}".encode(), partition=i)
    other.commit_transaction(30)
    # Kafka answers EndTxn once PREPARE_COMMIT is logged and writes the markers afterwards
    # (TransactionMarkerChannelManager), so the commit marker may land just after commit_transaction returns.
    def markers_written() -> bool:
        return [end_offset(broker.port, topic, i, READ_UNCOMMITTED) for i in range(3)] == [3, 3, 3]
    wait_until(markers_written, 2.0, what="the commit markers (open_i, after_i, after's marker)")
    lso = [end_offset(broker.port, topic, i, READ_COMMITTED) for i in range(3)]
    # Read within the timeout (4 s; the cleanup runs every 0.5 s): the open transaction still pins the LSO.
    assert lso == [0, 0, 0], lso

    def lso_at_end() -> bool:
        return all(end_offset(broker.port, topic, i, READ_COMMITTED) ==
                   end_offset(broker.port, topic, i, READ_UNCOMMITTED) >= 4 for i in range(3))
    wait_until(lso_at_end, timeout_ms / 1000 + 30, what="the coordinator to abort the expired transaction")
    committed = [v for _, _, v in consume_all(bs, topic, "read_committed", expect=3, timeout_s=30)]
    assert sorted(committed) == [b"after0", b"after1", b"after2"]
    # The stale producer's epoch was bumped by the abort: it can no longer commit.
    try:
        stale.commit_transaction(10)
    except KafkaException:
        pass
    else:
        raise AssertionError("the expired transaction committed")


OFFSET_FETCH, UNSTABLE_OFFSET_COMMIT = 9, 88


def _offset_fetch_stable(port: int, group: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(error_code, committed_offset) per partition of OffsetFetch v7 with require_stable (KIP-447), asked of the
    group's coordinator (FindCoordinator first)."""
    with WireClient(port) as w:
        found = w.call(10, 3, {"key": group, "key_type": 0})
    assert found.error_code == 0, found
    with WireClient(int(found.port)) as w:
        resp = w.call(OFFSET_FETCH, 7, {"group_id": group, "require_stable": True, "topics": [
            {"name": topic, "partition_indexes": list(range(partitions))}]})
    assert resp.error_code == 0, resp
    return [(int(p.error_code), int(p.committed_offset)) for p in resp.topics[0].partitions]


def pending_offsets_are_unstable(broker: Broker, topic: str) -> None:
    """Between TxnOffsetCommit and the transaction's COMMIT marker, OffsetFetch with require_stable answers
    UNSTABLE_OFFSET_COMMIT for the partitions the transaction commits offsets of (Kafka's
    GroupMetadataManager.getOffsets); librdkafka asks so with read_committed and retries, so a consumer that
    (re)joins mid-transaction does not resume from the older offset and read the batch twice."""
    bs = broker.bootstrap
    create_topic(bs, topic)
    group = f"stable-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        p = producer(bs, f"tx-stable-{topic}")
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, b"x", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 5)], c.consumer_group_metadata(), 30)
        p.flush(10)
        pending = _offset_fetch_stable(broker.port, group, topic, 3)
        assert pending == [(UNSTABLE_OFFSET_COMMIT, -1), (0, -1), (0, -1)], pending
        p.commit_transaction(30)
        wait_until(lambda: _offset_fetch_stable(broker.port, group, topic, 3) == [(0, 5), (0, -1), (0, -1)], 10,
                   what="the committed offset, stable")
    finally:
        c.close()
