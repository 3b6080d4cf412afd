"""Topic throughput: ``kafka.server:type=BrokerTopicMetrics[,topic=T]`` meters, marked from produce and fetch."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.errors import ErrorCode
from exporter.registry import Meter, Registry

TOPIC_METERS = ("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec", "BytesRejectedPerSec",
                "TotalProduceRequestsPerSec", "FailedProduceRequestsPerSec", "TotalFetchRequestsPerSec",
                "FailedFetchRequestsPerSec")
# Kafka's ReplicaManager.appendToLocalLog marks no failed produce for these (nor for an append to an internal
# topic, refused before its try block: the only INVALID_TOPIC_EXCEPTION a Produce gets).
_NOT_FAILURES = frozenset({ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
                           ErrorCode.message_too_large, ErrorCode.record_list_too_large,
                           ErrorCode.corrupt_message, ErrorCode.kafka_storage_error,
                           ErrorCode.invalid_topic_exception})
_REJECTED = frozenset({ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.corrupt_message,
                       ErrorCode.invalid_record})


class TopicStats:
    """The meters of one topic (or of all topics, `topic` None)."""

    __slots__ = TOPIC_METERS_SLOTS = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "total_produce",
                                      "failed_produce", "total_fetch", "failed_fetch")
    # set in __init__ by name (one meter per slot), declared for the type checker
    messages_in: Meter
    bytes_in: Meter
    bytes_out: Meter
    bytes_rejected: Meter
    total_produce: Meter
    failed_produce: Meter
    total_fetch: Meter
    failed_fetch: Meter

    def __init__(self, reg: Registry, topic: str | None) -> None:
        for slot, name in zip(self.TOPIC_METERS_SLOTS, TOPIC_METERS, strict=True):
            setattr(self, slot, reg.meter("kafka.server", "BrokerTopicMetrics", name, topic=topic))


class TopicMetrics:
    """Kafka's BrokerTopicStats: the all-topics meters at once, a topic's on its first event."""

    def __init__(self, reg: Registry) -> None:
        self._reg = reg
        self._topics: dict[str, TopicStats] = {}
        self.all_topics = TopicStats(reg, None)
        # Kafka registers these for all topics at once and per topic on the first conversion; nothing is ever
        # converted on fetch (every stored batch is magic 2, and Fetch below v4 is not served).
        self.produce_conversions = reg.meter("kafka.server", "BrokerTopicMetrics", "ProduceMessageConversionsPerSec")
        self.fetch_conversions = reg.meter("kafka.server", "BrokerTopicMetrics", "FetchMessageConversionsPerSec")
        self._topic_conversions: dict[str, Meter] = {}
        self.replication_bytes_out = reg.meter("kafka.server", "BrokerTopicMetrics", "ReplicationBytesOutPerSec")
        self.replication_bytes_in = reg.meter("kafka.server", "BrokerTopicMetrics", "ReplicationBytesInPerSec")
        # Replication traffic of replicas a reassignment is adding (a part of the two above).
        self.reassignment_bytes_out = reg.meter("kafka.server", "BrokerTopicMetrics", "ReassignmentBytesOutPerSec")
        self.reassignment_bytes_in = reg.meter("kafka.server", "BrokerTopicMetrics", "ReassignmentBytesInPerSec")

    def topic(self, topic: str) -> TopicStats:
        s = self._topics.get(topic)
        if s is None:
            s = self._topics[topic] = TopicStats(self._reg, topic)
        return s

    def produced(self, topic: str, nbytes: int, nrecords: int, converted: int = 0) -> None:
        """An append as leader; `converted` records were rebuilt to the topic's compression.type."""
        t, a = self.topic(topic), self.all_topics
        t.total_produce.mark()
        a.total_produce.mark()
        t.bytes_in.mark(nbytes)
        a.bytes_in.mark(nbytes)
        t.messages_in.mark(nrecords)
        a.messages_in.mark(nrecords)
        if converted:
            m = self._topic_conversions.get(topic)
            if m is None:
                m = self._topic_conversions[topic] = self._reg.meter(
                    "kafka.server", "BrokerTopicMetrics", "ProduceMessageConversionsPerSec", topic=topic)
            m.mark(converted)
            self.produce_conversions.mark(converted)

    def produce_failed(self, topic: str, code: int, nbytes: int) -> None:
        known = code != ErrorCode.unknown_topic_or_partition
        stats = (self.topic(topic), self.all_topics) if known else (self.all_topics,)
        for s in stats:
            s.total_produce.mark()
            if code not in _NOT_FAILURES:
                s.failed_produce.mark()
            if code in _REJECTED:
                s.bytes_rejected.mark(nbytes)

    def fetched_unchanged(self, partitions_per_topic: Mapping[str, int]) -> None:
        """Partitions read without error or data (TotalFetchRequestsPerSec counts each, as `fetched` does)."""
        a = self.all_topics
        for name, n in partitions_per_topic.items():
            self.topic(name).total_fetch.mark(n)
            a.total_fetch.mark(n)

    def fetched(self, topics: list[dict], follower: bool,
                adding: Callable[[str, int], bool] | None = None) -> None:
        """Per partition of a Fetch response body (kio field names, as the fetch handler builds it); `adding`
        tells whether a follower's partition is one a reassignment adds it to (ReassignmentBytesOutPerSec)."""
        a = self.all_topics
        for t in topics:
            name = t["topic"]
            ts = None
            for p in t["partitions"]:
                code = p["error_code"]
                if code == ErrorCode.unknown_topic_or_partition:
                    a.total_fetch.mark()
                    continue
                if ts is None:
                    ts = self.topic(name)
                ts.total_fetch.mark()
                a.total_fetch.mark()
                if code:
                    if code not in _NOT_FAILURES:
                        ts.failed_fetch.mark()
                        a.failed_fetch.mark()
                    continue
                n = len(p["records"] or b"")
                if follower:
                    self.replication_bytes_out.mark(n)
                    if n and adding is not None and adding(name, p["partition_index"]):
                        self.reassignment_bytes_out.mark(n)
                else:
                    ts.bytes_out.mark(n)
                    a.bytes_out.mark(n)
