"""Log behaviour seen through the clients: LogAppendTime, retention by size, compaction; with the helpers that
fill a log with many separately acknowledged batches."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.helpers import EARLIEST, LATEST, batches, create_topic, list_offset, records, wait_until
from tests.scenarios import Broker
from tests.scenarios.clients import consume, produce


def numbered(n: int, prefix: str = "v") -> list[tuple[bytes | None, bytes, list]]:
    """`n` records k0.., `prefix`0.., each with header i."""
    return [(f"k{i}".encode(), f"{prefix}{i}".encode(), [("i", str(i).encode())]) for i in range(n)]


def produce_batches(bootstrap: str, topic: str, recs, per_batch: int = 10, **extra) -> None:
    """Produce in several separately-acknowledged batches (acks=1) so the log holds many batches."""
    for i in range(0, len(recs), per_batch):
        produce("confluent", bootstrap, topic, recs[i:i + per_batch], partition=0, acks=1, **extra)


def partition_dir(broker, topic: str, partition: int = 0) -> Path:
    """The partition's directory under the broker's log.dirs."""
    return Path(broker.props["log.dirs"]) / f"{topic}-{partition}"


def log_append_time(broker: Broker, topic: str, client: str) -> None:
    """A LogAppendTime topic: the client reads the broker's append time, not the producer's timestamp."""
    create_topic(broker.port, topic, message_timestamp_type="LogAppendTime")
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap})
    before = int(time.time() * 1000)
    for i in range(5):
        p.produce(topic, key=b"k", value=f"v{i}".encode(), partition=0, timestamp=1_000_000 + i)
    assert p.flush(15) == 0
    after = int(time.time() * 1000)
    got = consume(client, broker.bootstrap, topic, 5)
    assert len(got) == 5
    log_append = {"confluent": 2, "kafka-python": 1, "aiokafka": 1}[client]   # TIMESTAMP_LOG_APPEND_TIME
    for *_, ts, ts_type in got:
        assert ts_type == log_append
        assert before - 5 <= ts <= after + 5
    assert all(h.timestamp_type == 1 for h, _ in batches(broker.port, topic))


def retention_by_size(broker, topic: str) -> None:
    """retention.bytes deletes whole old segments, no more than needed (the broker's log.dirs must be local)."""
    create_topic(broker.port, topic, segment_bytes="1024", retention_bytes="3000")
    recs = numbered(300)   # ~7.5 KB in ~1 KB segments
    produce_batches(broker.bootstrap, topic, recs)

    def log_bytes() -> int:
        return sum(p.stat().st_size for p in partition_dir(broker, topic).glob("*.log"))

    wait_until(lambda: list_offset(broker.port, topic, 0, EARLIEST) > 0, 30, what="size retention")
    # Kafka deletes whole segments while the log minus that segment is still over retention.bytes
    wait_until(lambda: log_bytes() <= 3000 + 1024 + 200, 30, what=f"log shrinking (now {log_bytes()} bytes)")
    assert list_offset(broker.port, topic, 0, LATEST) == 300
    first = list_offset(broker.port, topic, 0, EARLIEST)
    got = [r.offset for r in records(broker.port, topic)]
    assert got == list(range(first, 300))
    assert log_bytes() > 3000 - 1024   # and no more than needed was deleted
