"""kafka_exporter's cluster, topic and committed-offset series on the lag monitor's /metrics, from a metadata
snapshot shaped like confluent-kafka's (no server): names, labels and kafka_exporter.go's meaning."""

from __future__ import annotations

from types import SimpleNamespace as NS

from prometheus_client.parser import text_string_to_metric_families

from lagmonitor import topics
from lagmonitor.api import LagAPI
from lagmonitor.config import LagConfig
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.storage import StorageConfig
from tests.lagmonitor.test_lag_metrics import NOW, scrape, series


class Err:
    def __init__(self, code: int) -> None:
        self._code = code

    def code(self) -> int:
        return self._code


def part(pid: int, leader: int, replicas: list[int], isrs: list[int], error: int = 0) -> NS:
    return NS(id=pid, leader=leader, replicas=replicas, isrs=isrs, error=Err(error) if error else None)


def topic(name: str, parts: list[NS], error: int = 0) -> NS:
    return NS(topic=name, partitions={p.id: p for p in parts}, error=Err(error) if error else None)


def metadata() -> NS:
    """Brokers 1 and 2 listed (3 is down); one partition of each kind kafka_exporter tells apart."""
    return NS(brokers={1: NS(id=1, host="127.0.0.1", port=9092), 2: NS(id=2, host="127.0.0.1", port=9093)},
              topics={
                  "t": topic("t", [part(0, 1, [1, 2, 3], [1, 2, 3]),       # healthy, preferred leader
                                   part(1, 2, [1, 2, 3], [2, 1]),          # ISR 2 of 3, leader not preferred
                                   part(2, 3, [3, 1, 2], [3]),             # leader 3 is not a listed broker
                                   part(3, -1, [3], [], error=topics.LEADER_NOT_AVAILABLE),
                                   part(4, 1, [1, 3], [1], error=topics.REPLICA_NOT_AVAILABLE)]),
                  "new": topic("new", [part(0, -1, [1, 2], [1, 2], error=5)], error=topics.LEADER_NOT_AVAILABLE),
                  "denied": topic("denied", [], error=29),                 # TOPIC_AUTHORIZATION_FAILED
              })


def metrics(meta: topics.ClusterMeta | None, offsets: dict[tuple[str, int], int] | None = None) -> str:
    m = LagMonitor(LagConfig(storage=StorageConfig(intervals=3), evaluator=EvaluatorConfig(expire_cache_s=0)))
    if offsets:
        counts = {t: 1 + max(p for tt, p in offsets if tt == t) for t, _ in offsets}
        m.broker_offsets(offsets, counts, NOW)
    m.cluster_meta = meta
    return LagAPI(m, lambda: NOW).metrics()


def per_partition(text: str, name: str) -> dict[tuple[str, int], float]:
    out = {}
    for labels, v in series(text, name).items():
        kv = dict(pair.split("=", 1) for pair in labels.strip("{}").split(","))
        out[(kv["topic"].strip('"'), int(kv["partition"].strip('"')))] = v
    return out


def test_brokers_are_the_listed_ones():
    text = metrics(topics.from_metadata(metadata(), NOW))
    assert "\nkafka_brokers 2\n" in text
    assert series(text, "kafka_broker_info") == {'{id="1",address="127.0.0.1:9092"}': 1,
                                                 '{id="2",address="127.0.0.1:9093"}': 1}


def test_partition_counts_skip_topics_in_error_but_not_leaderless_ones():
    text = metrics(topics.from_metadata(metadata(), NOW))
    assert series(text, "kafka_topic_partitions") == {'{topic="new"}': 1, '{topic="t"}': 5}


def test_leader_only_when_it_is_a_listed_broker():
    text = metrics(topics.from_metadata(metadata(), NOW))
    # t-2's leader 3 is down (not listed), t-3 and new-0 have none: no series, as sarama's Leader() fails
    assert per_partition(text, "kafka_topic_partition_leader") == {("t", 0): 1, ("t", 1): 2, ("t", 4): 1}


def test_replicas_isr_preferred_and_under_replicated():
    text = metrics(topics.from_metadata(metadata(), NOW))
    assert per_partition(text, "kafka_topic_partition_replicas") == {("t", 0): 3, ("t", 1): 3, ("t", 2): 3,
                                                                     ("t", 3): 1, ("new", 0): 2}
    assert per_partition(text, "kafka_topic_partition_in_sync_replica") == {("t", 0): 3, ("t", 1): 2, ("t", 2): 1,
                                                                            ("t", 3): 0, ("new", 0): 2}
    # preferred: the leader is a listed broker and the first replica
    assert per_partition(text, "kafka_topic_partition_leader_is_preferred") == {
        ("t", 0): 1, ("t", 1): 0, ("t", 2): 0, ("t", 3): 0, ("t", 4): 1, ("new", 0): 0}
    # REPLICA_NOT_AVAILABLE hides the counts (sarama's Replicas() fails) but not the comparison
    assert per_partition(text, "kafka_topic_partition_under_replicated_partition") == {
        ("t", 0): 0, ("t", 1): 1, ("t", 2): 1, ("t", 3): 1, ("t", 4): 1, ("new", 0): 0}


def test_oldest_offsets_only_for_partitions_still_there():
    meta = topics.from_metadata(metadata(), NOW)
    assert meta.led() == [("t", 0), ("t", 1), ("t", 4)]   # what ListOffsets is asked for
    meta = meta.with_oldest({("t", 0): 7, ("t", 4): 0, ("t", 9): 3, ("gone", 0): 1})
    assert per_partition(metrics(meta), "kafka_topic_partition_oldest_offset") == {("t", 0): 7, ("t", 4): 0}


def test_current_offset_is_the_log_end_with_its_own_partition_number():
    # partition 1's log end was never read: partition 2 keeps its label (Burrow's list view would shift it)
    m = LagMonitor(LagConfig())
    m.broker_offsets({("t", 0): 10, ("t", 2): 30}, {"t": 3}, NOW)
    m.broker_offsets({("t", 0): 12}, {"t": 3}, NOW + 1000)
    text = LagAPI(m, lambda: NOW).metrics()
    assert per_partition(text, "kafka_topic_partition_current_offset") == {("t", 0): 12, ("t", 2): 30}


def test_no_snapshot_yet_means_no_cluster_series():
    text = metrics(None, {("t", 0): 5})
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert not [s for s in samples if s.startswith(("kafka_broker", "kafka_topic_partitions", "kafka_topic_partition_"
                                                    "leader", "kafka_topic_partition_under"))]
    assert per_partition(text, "kafka_topic_partition_current_offset") == {("t", 0): 5}


def test_committed_offset_per_partition_and_its_sum_with_the_minus_ones():
    text = scrape()   # group g: t-0 at 60, t-2 at 90, nothing on t-1; nothing on u
    assert series(text, "kafka_consumergroup_current_offset") == {
        '{consumergroup="g",topic="t",partition="0"}': 60, '{consumergroup="g",topic="t",partition="1"}': -1,
        '{consumergroup="g",topic="t",partition="2"}': 90}
    # kafka_exporter adds every partition's offset, the -1 too (60 + -1 + 90)
    assert series(text, "kafka_consumergroup_current_offset_sum") == {'{consumergroup="g",topic="t"}': 149}


def test_whole_page_parses_as_prometheus_text_with_gauges():
    meta = topics.from_metadata(metadata(), NOW).with_oldest({("t", 0): 1})
    families = {f.name: f for f in text_string_to_metric_families(metrics(meta, {("t", 0): 5}))}
    for name in topics.HELP:
        assert families[name].type == "gauge" and families[name].samples, name
    assert families["kafka_brokers"].samples[0].labels == {}
