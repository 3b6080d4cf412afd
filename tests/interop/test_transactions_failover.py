"""Exactly-once over broker failures (KIP-98), one body for a three-broker cluster of ours and of Apache Kafka 3.9
(slow: a cluster each).

A consume-transform-produce loop with confluent-kafka (read_committed input, transactional output,
send_offsets_to_transaction) runs while the broker hosting its transaction coordinator is killed (kill -9) with a
transaction open, then restarted, and then the leader of an output partition is killed the same way and
restarted.  The committed output is audited record by record: every input exactly once, in input order per
partition, and the group's committed offsets at the input's end.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from common.polling import wait_until
from kafkascope.local.cluster import Cluster
from kafkascope.local.wire import WireClient
from tests.interop.conftest import BACKENDS, apache_kafka_or_skip
from tests.replication.helpers import leader, running_ports, wait_healthy
from tests.scenarios.transactions import consume_all, create_topic

pytestmark = pytest.mark.slow

FIND_COORDINATOR, TXN_KEY = 10, 1
N, PARTS, BATCH = 300, 3, 10
TXN_ID = "eos-copier"
PROPS = {"transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
         "transaction.state.log.num.partitions": 3,
         "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
         "zookeeper.session.timeout.ms": 6000, "min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0}


def txn_coordinator(c: Cluster, txn_id: str) -> int:
    """The broker FindCoordinator (key_type TRANSACTION) names, asked of a running broker."""
    def ask() -> int | None:
        for port in running_ports(c):
            try:
                with WireClient(port, 5) as w:
                    resp = w.call(FIND_COORDINATOR, 3, {"key": txn_id, "key_type": TXN_KEY})
            except OSError:
                continue
            if resp.error_code == 0:
                return (int(resp.node_id),)  # type: ignore[return-value]  # a tuple: node 0 is found too
        return None
    (node,) = wait_until(ask, 60, what=f"the transaction coordinator of {txn_id}")
    return node


class Copier:
    """The application under test: each transaction reads up to BATCH input records, writes `out:<value>` to the
    same partition of the output topic and commits the consumer's positions with it.  An abortable error
    aborts and rewinds (a new consumer resumes from the committed offsets); a fatal one (fenced) starts a new
    producer, whose InitProducerId fences the old epoch."""

    def __init__(self, bootstrap: str, src: str, dst: str) -> None:
        self.bootstrap, self.src, self.dst = bootstrap, src, dst
        self.group = f"eos-{uuid.uuid4().hex[:6]}"
        self.commits = self.aborts = self.new_producers = self.assignments = 0
        self.done: dict[int, int] = {}
        self.consumer = self._consumer()
        self.producer = self._producer()

    def _consumer(self) -> Consumer:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "isolation.level": "read_committed", "log_level": 0})
        c.subscribe([self.src], on_assign=self._assigned)
        return c

    def _assigned(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self.assignments += 1  # more than one: the group rebalanced (its coordinator was killed)

    def _producer(self) -> Producer:
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": TXN_ID,
                      "transaction.timeout.ms": 20000, "linger.ms": 5, "log_level": 0})
        p.init_transactions(120)
        return p

    def step(self, before_commit: Callable[[], None]) -> None:
        """One transaction (or nothing when no record came)."""
        msgs = [m for m in self.consumer.consume(BATCH, 1.0) if m.error() is None]
        if not msgs:
            return
        try:
            self.producer.begin_transaction()
            for m in msgs:
                self.producer.produce(self.dst, b"out:" + m.value(), partition=m.partition())
            positions = [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 60)
            self.producer.flush(30)
            before_commit()
            self._commit()
            self.commits += 1
            # accumulated: after a rebalance a partition not yet read again has no position to send
            self.done.update({tp.partition: tp.offset for tp in positions})
        except KafkaException as e:
            self._recover(e.args[0])

    def _commit(self) -> None:
        for _ in range(10):  # a retriable commit is retried as it is: the outcome was not decided
            try:
                self.producer.commit_transaction(60)
                return
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
        raise AssertionError("commit_transaction stayed retriable 10 times")

    def _recover(self, err) -> None:
        if err.fatal():
            self.new_producers += 1
            self.producer = self._producer()
        else:
            assert err.txn_requires_abort(), err
            self.aborts += 1
            self.producer.abort_transaction(60)
        self.consumer.close()  # rewind: a new member resumes from the group's committed offsets
        self.consumer = self._consumer()

    def finished(self) -> bool:
        return self.done == {p: N // PARTS for p in range(PARTS)}


def run_until(copier: Copier, cond: Callable[[], bool], what: str, timeout_s: float = 120.0,
              before_commit: Callable[[], None] = lambda: None) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"{what}: {copier.commits} commits, done {copier.done}"
        copier.step(before_commit)


def audit(bootstrap: str, src: str, dst: str, group: str) -> None:
    inputs = consume_all(bootstrap, src, "read_committed", expect=N, timeout_s=60)
    outputs = consume_all(bootstrap, dst, "read_committed", expect=N, timeout_s=60)
    counts = Counter(v for _, _, v in outputs)
    assert {v: n for v, n in counts.items() if n != 1} == {}, "duplicates in the committed output"
    assert set(counts) == {b"out:" + v for _, _, v in inputs}, "missing or foreign records in the output"
    for p in range(PARTS):  # and in input order per partition
        assert [v for q, _, v in outputs if q == p] == [b"out:" + v for q, _, v in inputs if q == p]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = c.committed([TopicPartition(src, p) for p in range(PARTS)], 30)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == [N // PARTS] * PARTS


@pytest.mark.parametrize("impl", BACKENDS)
def test_exactly_once_over_coordinator_and_leader_kills(tmp_path, impl):
    if impl == "apache-kafka":
        apache_kafka_or_skip()
    t0 = time.monotonic()
    with Cluster(tmp_path, brokers=3, impl=impl, **PROPS) as c:  # started by __enter__
        src, dst = "eos-in", "eos-out"
        for t in (src, dst):
            create_topic(c.bootstrap, t, partitions=PARTS, rf=3)  # AdminClient: Kafka wants the controller
            wait_healthy(c, t, PARTS, 60)
        inp = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
        for i in range(N):
            inp.produce(src, f"in-{i}".encode(), partition=i % PARTS)
        assert inp.flush(30) == 0
        copier = Copier(c.bootstrap, src, dst)
        progress = lambda n: lambda: sum(copier.done.values()) >= n  # noqa: E731
        run_until(copier, progress(N // 5), "first fifth")

        # kill -9 of the transaction coordinator's broker, with a transaction open (records flushed, offsets sent)
        coordinator = txn_coordinator(c, TXN_ID)
        killed: list[int] = []

        def kill_coordinator() -> None:
            if not killed:
                killed.append(coordinator)
                c.broker(coordinator).kill()
        run_until(copier, lambda: bool(killed) and copier.commits > 0 and sum(copier.done.values()) >= 2 * N // 5,
                  "progress after the coordinator's kill", before_commit=kill_coordinator)
        assert txn_coordinator(c, TXN_ID) != coordinator
        c.broker(coordinator).start()
        for t in (src, dst):
            wait_healthy(c, t, PARTS, 90)

        # kill -9 of an output partition's leader, also mid-transaction
        victim = leader(c, dst, 0)
        killed.clear()

        def kill_leader() -> None:
            if not killed:
                killed.append(victim)
                c.broker(victim).kill()
        run_until(copier, lambda: bool(killed) and sum(copier.done.values()) >= 3 * N // 5,
                  "progress after the leader's kill", before_commit=kill_leader)
        c.broker(victim).start()
        run_until(copier, copier.finished, "the whole input")
        copier.consumer.close()
        audit(c.bootstrap, src, dst, copier.group)
        uncommitted = consume_all(c.bootstrap, dst, "read_uncommitted", expect=N, timeout_s=60)
    print(f"\n{impl}: {N} records exactly once in {copier.commits} transactions, {copier.aborts} aborted, "
          f"{copier.new_producers} new producers, {copier.assignments} assignments, "
          f"{len(uncommitted)} output records read_uncommitted, "
          f"{time.monotonic() - t0:.0f}s")
