"""kafka_exporter's topic series on the live lag monitor's /metrics: against our broker (offsets, leader, replicas),
and on a real 3-broker cluster, ours and Apache Kafka 3.9 (slow: three JVMs), where a killed follower makes the
partition under-replicated and the community kafka_exporter alerts (dashboards/prometheus/community/) fire in a
real Prometheus scraping the monitor."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.cluster_throughput import create_replicated_topic
from dashboards import build
from kafkascope.local import process as proc
from kafkascope.local.cluster import Cluster, wait_for
from kafkascope.local.stack.procs import prometheus_query
from lagmonitor.api import LagAPI, serve
from lagmonitor.collector import wall_ms
from tests.e2e.helpers import wait_until
from tests.interop.conftest import BACKENDS, apache_kafka_or_skip
from tests.scenarios.lag import CONFIG, Running, get

COMMUNITY = build.PROMETHEUS_DIR / "community"


def scrape(base: str) -> dict[tuple[str, frozenset], float]:
    """{(name, labels): value} of one /metrics page."""
    code, body = get(f"{base}/metrics")
    assert code == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(body.decode()) for s in f.samples}


def value(page: dict, name: str, **labels) -> float | None:
    return page.get((name, frozenset((k, str(v)) for k, v in labels.items())))


@pytest.fixture
def monitor_on(request):
    """monitor_on(bootstrap) → (Running, base URL); stopped when the test ends."""
    started = []

    def start(bootstrap: str):
        running = Running(bootstrap, CONFIG)
        server = serve(LagAPI(running.monitor, wall_ms), 0)
        started.append((running, server))
        return running, f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for running, server in started:
        server.shutdown()
        running.close()


def test_offsets_leader_and_replicas_of_a_topic_on_our_broker(shared_broker, monitor_on):
    topic = f"ke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    for p, n in ((0, 10), (1, 4)):
        for i in range(n):
            producer.produce(topic, b"v%d" % i, partition=p)
    assert producer.flush(30) == 0
    admin.delete_records([TopicPartition(topic, 0, 6)])[TopicPartition(topic, 0, 6)].result(30)
    md = admin.list_topics(timeout=10)
    (bid, b), = md.brokers.items()
    _, base = monitor_on(shared_broker.bootstrap)
    tp0, tp1 = {"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}
    page = wait_until(lambda: (pg := scrape(base)) and value(pg, "kafka_topic_partition_oldest_offset", **tp1)
                      is not None and value(pg, "kafka_topic_partition_current_offset", **tp1) == 4 and pg,
                      30, 0.1, "the topic's series")
    assert value(page, "kafka_brokers") == 1
    assert value(page, "kafka_broker_info", id=bid, address=f"{b.host}:{b.port}") == 1
    assert value(page, "kafka_topic_partitions", topic=topic) == 2
    assert [value(page, "kafka_topic_partition_oldest_offset", **tp) for tp in (tp0, tp1)] == [6, 0]
    assert [value(page, "kafka_topic_partition_current_offset", **tp) for tp in (tp0, tp1)] == [10, 4]
    for name, want in (("leader", bid), ("replicas", 1), ("in_sync_replica", 1), ("leader_is_preferred", 1),
                       ("under_replicated_partition", 0)):
        assert value(page, f"kafka_topic_partition_{name}", **tp0) == want, name


@pytest.fixture(params=[pytest.param(b, marks=pytest.mark.slow if b == "apache-kafka" else ()) for b in BACKENDS])
def three_brokers(request, tmp_path):
    """Three brokers of one backend; a follower out of fetch for 2 s leaves the ISR."""
    if request.param == "apache-kafka":
        apache_kafka_or_skip()
    with Cluster(tmp_path / "cluster", brokers=3, impl=request.param, replica_lag_time_max_ms=2000) as c:
        yield c


def _prometheus(tmp: Path, lag_base: str) -> tuple[subprocess.Popen, str]:
    """A real Prometheus scraping the monitor every second with the community kafka_exporter rules."""
    exe = shutil.which("prometheus")
    if exe is None:
        pytest.skip("Debian package `prometheus` not installed")
    rules = sorted(COMMUNITY.glob("*.rules.yml"))
    cfg = tmp / "prometheus.yml"
    cfg.write_text(build.scrape_config({build.JOB_LAG: [lag_base.removeprefix("http://")]},
                                       rule_files=[str(r) for r in rules], scrape_interval="1s"))
    port = proc.free_port()
    with open(tmp / "prometheus.log", "wb") as log:   # the child keeps its own descriptor
        p = subprocess.Popen([exe, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                              f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=log)
    return p, f"http://127.0.0.1:{port}"


def _alerts(prom: str, name: str, **labels) -> list[str]:
    sel = ",".join([f'alertname="{name}"', 'alertstate="firing"', *(f'{k}="{v}"' for k, v in labels.items())])
    return prometheus_query(prom, f"ALERTS{{{sel}}}")


def test_killed_follower_makes_the_partition_under_replicated_and_the_alerts_fire(tmp_path, three_brokers,
                                                                                     monitor_on):
    # monitor_on after three_brokers: the monitor stops before the cluster does
    cluster = three_brokers
    topic = f"urp-{uuid.uuid4().hex[:8]}"
    create_replicated_topic(cluster.bootstrap, topic, 1, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_records([TopicPartition(topic, 0, 4)])[TopicPartition(topic, 0, 4)].result(30)
    _, base = monitor_on(cluster.bootstrap)
    tp = {"topic": topic, "partition": 0}
    # the oldest offset comes from the metadata poller, the current one from the collector's log-end poll
    page = wait_until(lambda: (pg := scrape(base)) and value(pg, "kafka_topic_partition_in_sync_replica", **tp)
                      == 3 and value(pg, "kafka_topic_partition_oldest_offset", **tp) == 4 and value(
                          pg, "kafka_topic_partition_current_offset", **tp) == 10 and pg, 30, 0.1,
                      "a full ISR and the oldest and current offsets on /metrics")
    assert value(page, "kafka_brokers") == 3
    assert value(page, "kafka_topic_partition_under_replicated_partition", **tp) == 0
    leader = int(value(page, "kafka_topic_partition_leader", **tp))
    follower = next(b for b in cluster.broker_ids if b != leader)
    prom, prom_url = _prometheus(tmp_path, base)
    try:
        # wait_for: a refused connection while Prometheus starts counts as "not yet"
        wait_for(lambda: prometheus_query(prom_url, f'kafka_topic_partition_in_sync_replica{{topic="{topic}"}}'),
                 30, 0.2, "Prometheus scraping the monitor")
        cluster.broker(follower).kill()
        page = wait_until(lambda: (pg := scrape(base)) and value(
            pg, "kafka_topic_partition_under_replicated_partition", **tp) == 1 and pg, 60, 0.1,
            f"under-replicated partition after killing follower {follower}")
        # 2, or 1 when the other follower also lags replica.lag.time.max.ms (seen on ours under test load)
        assert value(page, "kafka_topic_partition_in_sync_replica", **tp) in (1, 2)
        assert value(page, "kafka_topic_partition_replicas", **tp) == 3
        assert value(page, "kafka_topic_partition_leader", **tp) == leader
        # Strimzi's UnderReplicatedPartition (for: 10s) and awesome-prometheus-alerts' KafkaTopicsReplicas
        wait_until(lambda: _alerts(prom_url, "UnderReplicatedPartition", topic=topic, partition="0"), 45, 0.5,
                   "UnderReplicatedPartition firing")
        wait_until(lambda: _alerts(prom_url, "KafkaTopicsReplicas", topic=topic), 30, 0.5,
                   "KafkaTopicsReplicas firing")
        cluster.broker(follower).start()
        wait_until(lambda: value(scrape(base), "kafka_topic_partition_under_replicated_partition", **tp) == 0,
                   60, 0.2, f"follower {follower} back in the ISR")
    finally:
        prom.terminate()
        prom.wait(30)
