"""Kafka's Java client in transactions against our standalone broker (Apache Kafka 3.9.2 tools, run by main
class): TransactionalMessageCopier's consume-transform-produce loop with random aborts and
sendOffsetsToTransaction copies every input record exactly once (audited record by record), and
kafka-transactions.sh lists and describes the copier's transactional id."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkascope.local.broker_process import BrokerProcess
from tests.e2e.test_transactions import TXN_PROPS, consume_all, create_topic
from tests.interop.conftest import apache_kafka_or_skip

COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
N = 600


def run_tool(main_class: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    from kafkascope.local.apache_kafka import tool_command

    res = subprocess.run(tool_command(main_class, *args), capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{main_class} {' '.join(args)} -> {res.returncode}\n{res.stdout[-3000:]}\n" \
                                f"{res.stderr[-3000:]}"
    return res


@pytest.fixture
def txn_broker(tmp_path):
    apache_kafka_or_skip()
    b = BrokerProcess(tmp_path, **TXN_PROPS).start()
    yield b
    b.stop()


def test_transactional_message_copier_copies_exactly_once(txn_broker):
    bs = txn_broker.bootstrap
    src, dst, group, txn_id = (f"{p}-{uuid.uuid4().hex[:6]}" for p in ("in", "out", "cg", "copier"))
    create_topic(bs, src, 1)
    create_topic(bs, dst, 3)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(N):
        p.produce(src, f"m{i:04d}".encode(), key=f"k{i}".encode(), partition=0)
    assert p.flush(30) == 0
    run_tool(COPIER, "--input-topic", src, "--input-partition", "0", "--output-topic", dst, "--broker-list", bs,
             "--max-messages", str(N), "--transactional-id", txn_id, "--transaction-size", "50",
             "--consumer-group", group, "--enable-random-aborts", "--use-group-metadata")
    copied = [v for _, _, v in consume_all(bs, dst, "read_committed", expect=N, timeout_s=60)]
    assert sorted(copied) == sorted(f"m{i:04d}".encode() for i in range(N))  # every record once, none twice
    everything = consume_all(bs, dst, "read_uncommitted", expect=N, timeout_s=60)
    assert len(everything) >= N  # random aborts leave aborted copies that read_committed never saw
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    [tp] = c.committed([TopicPartition(src, 0)], 10)
    c.close()
    assert tp.offset == N  # the consumed offsets were committed in the same transactions

    listed = run_tool(TRANSACTIONS, "--bootstrap-server", bs, "list").stdout
    row = next(line.split() for line in listed.splitlines() if txn_id in line)
    assert row[-1] == "CompleteCommit", listed  # TransactionalId Coordinator ProducerId TransactionState
    described = run_tool(TRANSACTIONS, "--bootstrap-server", bs, "describe", "--transactional-id", txn_id).stdout
    assert txn_id in described and "CompleteCommit" in described, described


def test_kafka_transactions_finds_describes_and_aborts_a_hanging_transaction(txn_broker):
    """A transaction left open (its producer gone quiet) holds the LSO back; describe-producers shows it with its
    start offset, and `abort` (Admin.abortTransaction: WriteTxnMarkers straight to the leader) lets the LSO and
    read_committed consumers move on."""
    from tests.e2e.test_transactions import producer

    bs = txn_broker.bootstrap
    topic = f"hang-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    plain = Producer({"bootstrap.servers": bs})
    plain.produce(topic, b"before", partition=0)
    plain.flush(10)
    stuck = producer(bs, f"stuck-{uuid.uuid4().hex[:6]}", timeout_ms=900_000)
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.produce(topic, b"hanging", partition=0)
    stuck.flush(10)
    plain.produce(topic, b"after", partition=0)
    plain.flush(10)
    described = run_tool(TRANSACTIONS, "--bootstrap-server", bs, "describe-producers", "--topic", topic,
                         "--partition", "0").stdout
    rows = [line.split() for line in described.splitlines()[1:] if line.strip()]
    # ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
    assert [r[-1] for r in rows if r[-1] != "None"] == ["1"], described
    assert [v for _, _, v in consume_all(bs, topic, "read_committed", expect=1, partitions=1)] == [b"before"]
    run_tool(TRANSACTIONS, "--bootstrap-server", bs, "abort", "--topic", topic, "--partition", "0",
             "--start-offset", "1")
    committed = [v for _, _, v in consume_all(bs, topic, "read_committed", expect=2, partitions=1)]
    assert committed == [b"before", b"after"]
