"""Per-partition gauges (``kafka.cluster:type=Partition``) on a real three-broker cluster, with Kafka's semantics
(kafka.cluster.Partition): a broker exports a partition's gauges only if it hosts a replica of it, and
UnderReplicated / UnderMinIsr / AtMinIsr / ReplicasCount / InSyncReplicasCount are the leader's (0 on followers),
so summing a gauge over the brokers counts each partition once, as the dashboards do."""

from __future__ import annotations

import pytest

from kafkascope.local.cluster import Cluster, wait_for
from tests.exporter.test_cluster_metrics import LAG_MS, PROPS, Samples, controller_id, scrape
from tests.replication.helpers import create_topic, metadata, produce_raw, topic_name

GAUGES = ("underreplicated", "underminisr", "atminisr", "replicascount", "insyncreplicascount",
          "laststableoffsetlag")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("partition-metrics"), brokers=3, **PROPS)  # min.insync.replicas=2
    c.start()
    try:
        yield c
    finally:
        c.shutdown()


def partition_series(s: Samples, gauge: str, topic: str) -> dict[int, float]:
    """{partition: value} of kafka_cluster_partition_<gauge> for `topic` on one broker's page."""
    out = {}
    for (name, labels), v in s.items():
        lbl = dict(labels)
        if name == f"kafka_cluster_partition_{gauge}" and lbl.get("topic") == topic:
            out[int(lbl["partition"])] = v
    return out


def summed(pages: dict[int, Samples], gauge: str, topic: str) -> dict[int, float]:
    """The dashboards' sum over brokers, per partition."""
    out: dict[int, float] = {}
    for s in pages.values():
        for p, v in partition_series(s, gauge, topic).items():
            out[p] = out.get(p, 0) + v
    return out


def test_a_partition_is_exported_by_its_replicas_and_counted_once(cluster):
    """RF 2 with min.insync.replicas 2: the ISR is at its minimum; only the leader says so, the broker outside
    the assignment has no series."""
    c = cluster
    a, b, outsider = c.broker_ids
    topic = topic_name("at-min")
    create_topic(c, topic, assignment={0: [a, b]})
    lead = metadata(c, [topic]).part(topic, 0).leader
    pages = {i: scrape(c, i) for i in c.broker_ids}
    for gauge in GAUGES:
        assert partition_series(pages[outsider], gauge, topic) == {}, gauge
        assert set(partition_series(pages[a], gauge, topic)) == set(partition_series(pages[b], gauge, topic)) == {0}
    assert summed(pages, "atminisr", topic) == {0: 1}
    assert summed(pages, "underminisr", topic) == {0: 0}
    assert summed(pages, "underreplicated", topic) == {0: 0}
    assert summed(pages, "replicascount", topic) == {0: 2}
    assert summed(pages, "insyncreplicascount", topic) == {0: 2}
    assert partition_series(pages[lead], "atminisr", topic) == {0: 1}
    assert pages[lead][("kafka_server_replicamanager_atminisrpartitioncount", ())] >= 1


def test_under_replicated_and_at_min_isr_sum_to_the_partition_count(cluster):
    """Two RF=3 partitions lose a paused follower from their ISR: each is under-replicated and at min ISR once
    over the cluster (it was twice with every broker reporting every partition), and 0 again after resume."""
    c = cluster
    ctrl = controller_id(c)
    other, paused = [b for b in c.broker_ids if b != ctrl]
    topic = topic_name("urp-sum")
    create_topic(c, topic, 2, assignment={0: [ctrl, other, paused], 1: [other, ctrl, paused]})
    live = (ctrl, other)
    c.broker(paused).pause()
    try:
        def shrunk():
            pages = {i: scrape(c, i) for i in live}
            return pages if summed(pages, "underreplicated", topic) == {0: 1, 1: 1} else None
        pages = wait_for(shrunk, LAG_MS / 1000 + 15, 0.2, what="both partitions under-replicated once")
        assert summed(pages, "atminisr", topic) == {0: 1, 1: 1}
        assert summed(pages, "insyncreplicascount", topic) == {0: 2, 1: 2}
        assert summed(pages, "replicascount", topic) == {0: 3, 1: 3}
    finally:
        c.broker(paused).resume()

    def healed():
        pages = {i: scrape(c, i) for i in c.broker_ids}
        return pages if summed(pages, "insyncreplicascount", topic) == {0: 3, 1: 3} else None
    pages = wait_for(healed, 30, 0.2, what="full ISR again")
    assert summed(pages, "underreplicated", topic) == {0: 0, 1: 0}
    assert summed(pages, "atminisr", topic) == {0: 0, 1: 0}
    # the resumed follower hosts both partitions and reports them, as a follower: all zeros
    for gauge in GAUGES:
        assert partition_series(pages[paused], gauge, topic) == {0: 0, 1: 0}, gauge


def test_followers_report_fetch_rate_and_a_lag_never_negative(cluster):
    """Every broker follows something here (RF 3): MinFetchRate > 0 once the one-minute rate has ticked; MaxLag is
    never negative, also while records arrive."""
    c = cluster
    topic = topic_name("fetch-rate")
    create_topic(c, topic, 3)
    clients = {"clientId": "Replica"}
    key = ("kafka_server_replicafetchermanager_minfetchrate", tuple(clients.items()))
    for b in c.broker_ids:
        wait_for(lambda b=b: scrape(c, b)[key] > 0, 15, 0.2, what=f"MinFetchRate > 0 on broker {b}")
    lead = metadata(c, [topic]).part(topic, 0).leader
    for i in range(20):
        produce_raw(c.broker(lead).port, topic, 0, [b"x" * 100] * 10, acks=1)
        pages = {b: scrape(c, b) for b in c.broker_ids}
        lags = {b: s[("kafka_server_replicafetchermanager_maxlag", tuple(clients.items()))] for b, s in pages.items()}
        assert all(v >= 0 for v in lags.values()), (i, lags)
