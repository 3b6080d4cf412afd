"""kafka_exporter's cluster and topic series, from a metadata snapshot (pure; the poller is in collector.py).

Names, labels, help texts and meaning are those of danielqsj/kafka_exporter's kafka_exporter.go (`collect`):
brokers and broker_info from the brokers the Metadata response lists (the live ones); per topic its partition
count; per partition the leader's id (none when the leader is -1 or not a listed broker, where sarama's
Leader() fails), the replica and in-sync replica counts (none when the partition says REPLICA_NOT_AVAILABLE,
where sarama's Replicas()/InSyncReplicas() fail), whether the leader is the first replica, whether the ISR is
smaller than the replica set, and the oldest (ListOffsets earliest) and current (log-end) offsets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

LEADER_NOT_AVAILABLE = 5    # Kafka error codes (also librdkafka's codes for broker errors)
REPLICA_NOT_AVAILABLE = 9

HELP = {   # kafka_exporter's own help texts
    "kafka_brokers": "Number of Brokers in the Kafka Cluster.",
    "kafka_broker_info": "Information about the Kafka Broker.",
    "kafka_topic_partitions": "Number of partitions for this Topic",
    "kafka_topic_partition_current_offset": "Current Offset of a Broker at Topic/Partition",
    "kafka_topic_partition_oldest_offset": "Oldest Offset of a Broker at Topic/Partition",
    "kafka_topic_partition_leader": "Leader Broker ID of this Topic/Partition",
    "kafka_topic_partition_replicas": "Number of Replicas for this Topic/Partition",
    "kafka_topic_partition_in_sync_replica": "Number of In-Sync Replicas for this Topic/Partition",
    "kafka_topic_partition_leader_is_preferred": "1 if Topic/Partition is using the Preferred Broker",
    "kafka_topic_partition_under_replicated_partition": "1 if Topic/Partition is under Replicated",
}


@dataclass(frozen=True)
class PartitionMeta:
    leader: int                 # -1: none
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: int = 0              # the partition's error code in the Metadata response


@dataclass(frozen=True)
class ClusterMeta:
    """One Metadata response (and the oldest offsets read after it), taken at `taken_ms`."""

    taken_ms: int
    brokers: dict[int, str]                          # id → "host:port"
    topics: dict[str, dict[int, PartitionMeta]]
    oldest: dict[tuple[str, int], int] = field(default_factory=dict)

    def led(self) -> list[tuple[str, int]]:
        """Partitions whose leader is a listed broker: the ones a ListOffsets can be answered for."""
        return [(t, p) for t, parts in sorted(self.topics.items()) for p, m in sorted(parts.items())
                if m.leader in self.brokers]

    def with_oldest(self, oldest: dict[tuple[str, int], int]) -> ClusterMeta:
        """A copy with these oldest offsets, kept only for partitions this snapshot has."""
        keep = {k: v for k, v in oldest.items() if k[1] in self.topics.get(k[0], {})}
        return dataclasses.replace(self, oldest=keep)


def _code(error) -> int:
    return 0 if error is None else int(error.code())


def from_metadata(md, now_ms: int) -> ClusterMeta:
    """confluent-kafka's ClusterMetadata (or anything shaped like it) → ClusterMeta. A topic whose metadata
    carries an error other than LEADER_NOT_AVAILABLE is left out, as sarama leaves it out of its cache."""
    brokers = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
    topics = {}
    for name, t in md.topics.items():
        if _code(t.error) not in (0, LEADER_NOT_AVAILABLE):
            continue
        topics[name] = {p.id: PartitionMeta(p.leader, tuple(p.replicas), tuple(p.isrs), _code(p.error))
                        for p in t.partitions.values()}
    return ClusterMeta(now_ms, brokers, topics)


def render(add: Callable[..., None], meta: ClusterMeta | None,
           current: Iterable[tuple[str, int, int]]) -> None:
    """kafka_exporter's cluster and topic series through `add(name, value, **labels)`: the snapshot's (none
    before the first one) and the current offset of every (topic, partition, log-end offset) in `current`."""
    if meta is not None:
        add("kafka_brokers", len(meta.brokers))
        for bid in sorted(meta.brokers):
            add("kafka_broker_info", 1, id=bid, address=meta.brokers[bid])
        for topic in sorted(meta.topics):
            parts = meta.topics[topic]
            add("kafka_topic_partitions", len(parts), topic=topic)
            for p in sorted(parts):
                _partition(add, meta, topic, p, parts[p])
    for topic, p, offset in current:
        add("kafka_topic_partition_current_offset", offset, topic=topic, partition=p)


def _partition(add: Callable[..., None], meta: ClusterMeta, topic: str, p: int, m: PartitionMeta) -> None:
    tp = {"topic": topic, "partition": p}
    has_leader = m.leader in meta.brokers
    if has_leader:
        add("kafka_topic_partition_leader", m.leader, **tp)
    if (topic, p) in meta.oldest:
        add("kafka_topic_partition_oldest_offset", meta.oldest[(topic, p)], **tp)
    if m.error != REPLICA_NOT_AVAILABLE:
        add("kafka_topic_partition_replicas", len(m.replicas), **tp)
        add("kafka_topic_partition_in_sync_replica", len(m.isr), **tp)
    preferred = has_leader and bool(m.replicas) and m.replicas[0] == m.leader
    add("kafka_topic_partition_leader_is_preferred", int(preferred), **tp)
    add("kafka_topic_partition_under_replicated_partition", int(len(m.isr) < len(m.replicas)), **tp)
