"""Helpers for replication tests against a real ZooKeeper-coordinated cluster: raw-wire Metadata and
ListOffsets, topic creation, a continuous idempotent producer and an independent assign()-based reader."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from broker.log.records import Record, build_batch
from kafkascope.local.cluster import Cluster, wait_for
from kafkascope.local.wire import WireClient

PRODUCE, LIST_OFFSETS, METADATA, CREATE_TOPICS, FIND_COORDINATOR = 0, 2, 3, 19, 10
EARLIEST, LATEST = -2, -1
NOT_ENOUGH_REPLICAS = 19


def topic_name(prefix: str = "r") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class PartInfo:
    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True)
class Meta:
    controller_id: int
    brokers: dict[int, int]                     # node id -> port
    partitions: dict[tuple[str, int], PartInfo]

    def part(self, topic: str, p: int) -> PartInfo:
        return self.partitions[(topic, p)]


def running_ports(cluster: Cluster, exclude: tuple[int, ...] = ()) -> list[int]:
    return [b.port for b in cluster.brokers if b.state == "running" and b.broker_id not in exclude]


def metadata_from(port: int, topics: list[str] | None = None, timeout_s: float = 5.0) -> Meta:
    with WireClient(port, timeout_s) as w:
        resp = w.call(METADATA, 12, {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    parts = {}
    for t in resp.topics:
        for p in t.partitions:
            parts[(t.name, p.partition_index)] = PartInfo(p.error_code, p.leader_id, p.leader_epoch,
                                                          tuple(p.replica_nodes), tuple(p.isr_nodes),
                                                          tuple(p.offline_replicas))
    return Meta(resp.controller_id, {b.node_id: b.port for b in resp.brokers}, parts)


def metadata(cluster: Cluster, topics: list[str] | None = None, exclude: tuple[int, ...] = ()) -> Meta:
    """Metadata from the first running broker that answers."""
    last: Exception | None = None
    for port in running_ports(cluster, exclude):
        try:
            return metadata_from(port, topics, timeout_s=3.0)
        except OSError as e:
            last = e
    raise ConnectionError(f"no broker answered Metadata ({last!r})")


def create_topic(cluster: Cluster, name: str, partitions: int = 1, rf: int = 3, timeout_s: float = 30.0,
                 assignment: dict[int, list[int]] | None = None, **configs: object) -> None:
    """CreateTopics, then wait until every partition has a leader and a full ISR, seen by every running broker."""
    with WireClient(running_ports(cluster)[0], 15) as w:
        resp = w.call(CREATE_TOPICS, 7, {"topics": [{
            "name": name, "num_partitions": -1 if assignment else partitions,
            "replication_factor": -1 if assignment else rf,
            "assignments": [{"partition_index": p, "broker_ids": r} for p, r in (assignment or {}).items()],
            "configs": [{"name": k.replace("_", "."), "value": str(v)} for k, v in configs.items()]}],
            "timeout": 15000, "validate_only": False})
        assert resp.topics[0].error_code == 0, resp.topics[0]
    wait_healthy(cluster, name, partitions, timeout_s)


def wait_healthy(cluster: Cluster, topic: str, partitions: int, timeout_s: float = 30.0) -> Meta:
    """Every partition led, ISR == replicas, as every running broker sees it."""
    def ok():
        metas = [metadata_from(port, [topic]) for port in running_ports(cluster)]
        for m in metas:
            for p in range(partitions):
                info = m.partitions.get((topic, p))
                if info is None or info.leader < 0 or set(info.isr) != set(info.replicas):
                    return None
        return metas[0]
    return wait_for(ok, timeout_s, 0.1, what=f"{topic}: all {partitions} partitions led with full ISR")


def leader(cluster: Cluster, topic: str, p: int, exclude: tuple[int, ...] = ()) -> int:
    return metadata(cluster, [topic], exclude).part(topic, p).leader


def list_offset(port: int, topic: str, p: int, ts: int = LATEST) -> tuple[int, int]:
    """(error_code, offset) of a consumer's ListOffsets v7 (latest = the high watermark)."""
    with WireClient(port) as w:
        resp = w.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": ts}]}]})
    part = resp.topics[0].partitions[0]
    return part.error_code, part.offset


def produce_raw(port: int, topic: str, p: int, values: list[bytes], acks: int = -1, timeout_ms: int = 5000,
                version: int = 9) -> tuple[int, int]:
    """One Produce request (non-idempotent batch); (error_code, base_offset)."""
    batch = build_batch([Record(timestamp=int(time.time() * 1000), key=None, value=v) for v in values])
    with WireClient(port, timeout_ms / 1000 + 10) as w:
        resp = w.call(PRODUCE, version, {"transactional_id": None, "acks": acks, "timeout": timeout_ms,
                                         "topic_data": [{"name": topic, "partition_data": [
                                             {"index": p, "records": batch}]}]})
    r = resp.responses[0].partition_responses[0]
    return r.error_code, r.base_offset


class ContinuousProducer:
    """An idempotent acks=all confluent-kafka producer writing sequence numbers round-robin to explicit
    partitions from a thread; delivery callbacks record acknowledged (seq, offset) per partition."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate_per_s: float = 400.0,
                 **conf: object) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.rate = rate_per_s
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 60000,
                                  "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 100,
                                  "reconnect.backoff.max.ms": 500, **conf})
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        self.failed: list[tuple[int, str]] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="continuous-producer")

    def _on_delivery(self, err, msg) -> None:
        seq = int(msg.value())
        with self._lock:
            if err is None:
                self.acked[msg.partition()].append((seq, msg.offset()))
            else:
                self.failed.append((seq, str(err)))

    def _run(self) -> None:
        interval = 1.0 / self.rate
        nxt = time.monotonic()
        while not self._stop.is_set():
            seq = self.sent
            try:
                self.producer.produce(self.topic, value=str(seq).encode(), partition=seq % self.partitions,
                                      on_delivery=self._on_delivery)
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.sent += 1
            self.producer.poll(0)
            nxt += interval
            delay = nxt - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)

    def start(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def acked_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.acked.values())

    def acked_since(self, n: int) -> bool:
        return self.acked_count() > n

    def stop(self, flush_timeout_s: float = 45.0) -> None:
        self._stop.set()
        self._thread.join(10)
        left = self.producer.flush(flush_timeout_s)
        assert left == 0, f"{left} records still undelivered after {flush_timeout_s}s"


def read_partitions(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0
                    ) -> dict[int, list[tuple[int, bytes]]]:
    """An independent confluent-kafka consumer (no group): assign() every partition from earliest, read up to
    the high watermark. {partition: [(offset, value), ...]}."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "topic.metadata.refresh.interval.ms": 1000})
    try:
        ends = {}
        for p in range(partitions):
            _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            ends[p] = hi
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout_s

        def done() -> bool:
            return all((out[p][-1][0] + 1 if out[p] else 0) >= ends[p] for p in range(partitions))

        while not done():
            assert time.monotonic() < deadline, (
                f"read timed out: have {[len(v) for v in out.values()]} of {ends}")
            for m in c.consume(500, 1.0):
                if m.error():
                    continue
                out[m.partition()].append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def check_acked_exactly_once_in_order(acked: dict[int, list[tuple[int, int]]],
                                      read: dict[int, list[tuple[int, bytes]]]) -> int:
    """Every acknowledged record is in its partition exactly once, at the offset it was acknowledged with,
    in production order; no record appears twice (idempotence). Returns the number of acked records checked."""
    total = 0
    for p, acks in acked.items():
        got = read[p]
        offsets = [o for o, _ in got]
        assert offsets == sorted(set(offsets)), f"partition {p}: offsets not strictly increasing"
        seqs = [int(v) for _, v in got]
        assert len(seqs) == len(set(seqs)), (
            f"partition {p}: duplicates {sorted({s for s in seqs if seqs.count(s) > 1})[:10]}")
        assert seqs == sorted(seqs), f"partition {p}: records out of production order"
        by_offset = dict((o, int(v)) for o, v in got)
        for seq, off in acks:
            assert by_offset.get(off) == seq, (
                f"partition {p}: acked seq {seq} at offset {off}, log has {by_offset.get(off)!r}")
        total += len(acks)
    return total


RETRIABLE = {5, 6, 74, 75}  # LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH


def produce_to_leader(cluster: Cluster, topic: str, p: int, values: list[bytes], acks: int = -1,
                      timeout_s: float = 20.0) -> int:
    """Produce one batch to the partition's current leader, retrying (bounded) while leadership settles, as a
    client does: Metadata propagates to each broker from ZooKeeper on its own. Returns the base offset."""
    def attempt():
        port = metadata(cluster, [topic]).brokers.get(leader(cluster, topic, p))
        if port is None:
            return None
        err, base = produce_raw(port, topic, p, values, acks=acks)
        if err in RETRIABLE:
            return None
        assert err == 0, f"produce to {topic}-{p}: error {err}"
        return (base,)
    return wait_for(attempt, timeout_s, 0.1, what=f"produce to the leader of {topic}-{p}")[0]
