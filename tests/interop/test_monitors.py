"""xmonitor, the lag monitor and the SLO report end to end, one body for our cluster, Apache Kafka 3.9 and 4.1.

Each backend runs as a three-broker cluster shared by the module (ZooKeeper mode; `kraft`: three combined
broker+controller nodes of Apache Kafka 4.1, no ZooKeeper).  Apache Kafka's runs are in the slow
suite (three JVMs take a minute to start on two cores), and so is the Spark report on both.  The monitors must work against any
Kafka: a body that passes on kafkascope and fails on apache-kafka is a bug in xmonitor/, lagmonitor/ or slo/.
The lag and SLO report bodies are tests/scenarios/ ones (tests/lagmonitor and tests/slo run them on our broker).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection
from confluent_kafka.admin import AdminClient

from benchmarks.cluster_throughput import create_replicated_topic
from kafkascope.local.apache_kafka import DEFAULT_VERSION
from kafkascope.local.cluster import Cluster, wait_for
from lagmonitor.api import LagAPI, serve
from lagmonitor.collector import wall_ms
from lagmonitor.rules import Status
from tests.interop.conftest import BACKENDS, KRAFT, apache_kafka_or_skip
from tests.scenarios import lag as lag_scenarios
from tests.scenarios.slo import assert_counts_match_the_files, run_report
from tests.xmonitor.helpers import fast_config, gauge, registry_total, scrape, total
from xmonitor import sink
from xmonitor.app import XMonitor
from xmonitor.config import MonitorConfig
from xmonitor.reassign import ReassignClient

BROKERS = 3
RATIO = 2          # monitor partitions per broker (topic-management.partitionsToBrokersRatio)
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass
class Monitored:
    cluster: Cluster
    lag: lag_scenarios.Running      # the lag monitor, started with the cluster, before any group was used
    offsets_topic_at_start: bool    # whether __consumer_offsets existed when it started


@pytest.fixture(scope="module", params=[pytest.param(b, marks=pytest.mark.slow if b != "kafkascope" else ())
                                        for b in [*BACKENDS, KRAFT]])
def monitored(request, tmp_path_factory) -> Monitored:
    """Three brokers of one backend and a lag monitor on them, started once for the module (`kraft`: three
    combined broker+controller nodes of Apache Kafka 4.1)."""
    impl = request.param
    if impl != "kafkascope":
        apache_kafka_or_skip()
    if impl == KRAFT:
        apache_kafka_or_skip(DEFAULT_VERSION)
        c = Cluster(tmp_path_factory.mktemp("monitors-kraft"), brokers=BROKERS, impl="apache-kafka",
                    version=DEFAULT_VERSION)
    else:
        c = Cluster(tmp_path_factory.mktemp(f"monitors-{impl}"), brokers=BROKERS, impl=impl)
    lag = None
    try:
        c.start(120)
        admin = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 0})
        wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == BROKERS, 60, 0.2,
                 what=f"{BROKERS} brokers in the metadata of {impl}")
        had_offsets_topic = OFFSETS_TOPIC in admin.list_topics(timeout=10).topics
        lag = lag_scenarios.Running(c.bootstrap, lag_scenarios.CONFIG)
        # its first log-end poll is done, so it has tried to read the offsets topic at least once
        wait_for(lambda: lag.collector._next_topics > 0, 30, 0.05, what="the lag monitor's first poll")
        yield Monitored(c, lag, had_offsets_topic)
    finally:
        if lag is not None:
            lag.close()
        c.shutdown()


@pytest.fixture(scope="module")
def cluster(monitored) -> Cluster:
    return monitored.cluster


@pytest.fixture(scope="module")
def running(monitored) -> lag_scenarios.Running:
    """The lag monitor started with the cluster (tests/lagmonitor starts one per test)."""
    return monitored.lag


@pytest.fixture
def scenario(cluster, running):
    """Makes lag scenarios (a topic and a committing group) on the cluster, watched by `running`."""
    with lag_scenarios.scenarios(cluster.bootstrap, running) as make:
        yield make


# ---------------------------------------------------------------- xmonitor

def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return {p.id: (p.leader.id if p.leader is not None else -1) for p in d.partitions}


@dataclass
class XmonitorRun:
    cfg: MonitorConfig
    monitor: XMonitor                  # stopped: its registry holds the final counters
    known: dict[int, dict | None]      # broker -> its view of the topic (partition -> leader) as start() returned
    leaders: dict[int, int]            # monitor partition -> leader, as the cluster reported it
    kmf: dict[tuple[str, str], float]  # Xinfra's gauges just before stop
    metrics: dict[str, list]           # the last /metrics scrape before stop


@pytest.fixture(scope="module")
def xmonitor_run(cluster, tmp_path_factory) -> XmonitorRun:
    """One healthy xmonitor run (RF 3, min.insync.replicas 2) against the cluster, stopped once it has consumed
    a few SLI intervals' worth on every partition."""
    cfg = fast_config(cluster.bootstrap, tmp_path_factory.mktemp("xmonitor"), partitions_to_brokers_ratio=RATIO,
                      replication_factor=3, min_insync_replicas=2)
    m = XMonitor(cfg).start()
    try:
        known = {b.broker_id: ReassignClient("127.0.0.1", b.port).topic_leaders(cfg.topic) for b in cluster.brokers}
        leaders = wait_for(lambda: (ld := _leaders(cluster.bootstrap, cfg.topic)) and
                           set(ld.values()) == set(range(BROKERS)) and ld, 30, 0.2,
                           what="every broker leads a monitor partition")
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") >= 150 * BROKERS * RATIO, 60, 0.2,
                 what="records consumed")
        kmf, metrics = dict(m.rec.kmf_gauges()), scrape(m)
    finally:
        m.stop()
    return XmonitorRun(cfg, m, known, leaders, kmf, metrics)


def test_xmonitor_probes_every_broker_and_its_sli_files_match_its_counters(xmonitor_run):
    r = xmonitor_run
    assert len(r.leaders) == BROKERS * RATIO and set(r.leaders.values()) == set(range(BROKERS))
    # probing starts only once every broker knows the topic (Kafka tells them asynchronously after creating it;
    # before, they refuse the probe's sends and offset commits)
    for broker, view in r.known.items():
        assert view is not None and set(view) == set(r.leaders) and min(view.values()) >= 0, (broker, view)
    s = r.metrics
    assert total(s, "xmonitor_produce_errors_total") == 0, s.get("xmonitor_produce_errors_total")
    assert r.kmf[("produce-service", "produce-availability-avg")] == 1.0
    assert r.kmf[("consume-service", "consume-availability-avg")] == 1.0
    for attr in ("records-lost-total", "records-duplicated-total", "records-delayed-total", "consume-error-total"):
        assert r.kmf[("consume-service", attr)] == 0, attr
    assert {labels["partition"] for labels, _ in s["xmonitor_produce_successes_total"]} == {
        str(p) for p in range(BROKERS * RATIO)}
    assert {labels["leader"] for labels, _ in s["xmonitor_produce_successes_total"]} == {
        str(b) for b in range(BROKERS)}
    assert total(s, "xmonitor_offset_commits_total", source="probe", result="success") >= 1
    assert total(s, "xmonitor_offset_commits_total", result="failure") == 0

    # after stop the sink has written the last interval: the files hold exactly what the counters counted
    t = sink.read_dir(r.cfg.sli_dir)
    assert set(t.column("partition").to_pylist()) == set(range(BROKERS * RATIO))
    assert set(t.column("leader").to_pylist()) == set(range(BROKERS))
    col = lambda c: sum(t.column(c).to_pylist())  # noqa: E731
    assert col("produce_attempts") == registry_total(r.monitor, "xmonitor_produce_attempts_total") > 0
    assert col("produce_successes") == registry_total(r.monitor, "xmonitor_produce_successes_total") == col(
        "produce_attempts")
    assert col("records_consumed") == registry_total(r.monitor, "xmonitor_records_consumed_total") == col(
        "produce_successes")
    assert col("records_lost") == col("records_duplicated") == col("records_out_of_order") == 0
    assert set(t.column("run_id").to_pylist()) == {r.monitor.run_id}


# ---------------------------------------------------------------- the SLO report on those SLI files

@pytest.mark.slow   # Spark once more; on our broker `make test` has it in tests/slo/test_real_xmonitor_files.py
def test_slo_report_counts_equal_the_sli_files(xmonitor_run, tmp_path):
    report = run_report(xmonitor_run.cfg.sli_dir, tmp_path / "report")
    assert_counts_match_the_files(report, xmonitor_run.cfg.sli_dir)
    occ = {s["name"]: s["occurrences"] for s in report["slos"]}
    assert occ["write-availability"]["bad"] == occ["no-loss"]["bad"] == 0


# ---------------------------------------------------------------- the lag monitor (Burrow rules, HTTP API)

def test_lag_monitor_started_before_any_group_reads_the_offsets_topic_once_it_exists(monitored, scenario):
    """Kafka creates __consumer_offsets at the first FindCoordinator, so the lag monitor started with the cluster
    found none (its collector thread used to die on that); it must read the topic once a group has made it."""
    assert not monitored.offsets_topic_at_start
    s = scenario(10)
    s.commit_stored(10)
    assert monitored.lag.thread.is_alive()


def test_lag_keeps_up_is_ok(scenario):
    lag_scenarios.keeps_up_is_ok(scenario)


def test_lag_stops_committing_is_stop(scenario):
    lag_scenarios.stops_committing_with_lag_is_stop(scenario)


def test_lag_same_offset_while_lag_grows_is_stall(scenario):
    lag_scenarios.same_offset_while_lag_grows_is_stall(scenario)


def test_lag_reset_to_earlier_offset_is_rewind(scenario):
    lag_scenarios.reset_to_earlier_offset_is_rewind(scenario)


def test_lag_http_api_and_metrics_agree(scenario, running):
    lag_scenarios.http_api_and_metrics_agree(scenario, running)


def _group_lag(base: str, group: str) -> dict:
    code, body = lag_scenarios.get(f"{base}/v3/kafka/local/consumer/{group}/lag")
    return json.loads(body)["status"] if code == 200 else {}


def test_lag_subscribed_group_keeps_up_then_stops_committing_while_producing(cluster, running):
    """A subscribed consumer (so the coordinator also writes the group's metadata: member, assignment) commits
    what it reads while the producer writes: OK, owned by its client.  It stops committing, the producer goes on:
    the partition is STOP (the group ERR), read through the HTTP API."""
    topic = f"lag-live-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    create_replicated_topic(cluster.bootstrap, topic, 1, BROKERS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "lag-interop",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    server = serve(LagAPI(running.monitor, wall_ms), 0)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    end = 0

    def produce(n: int) -> None:
        nonlocal end
        for i in range(n):
            producer.produce(topic, value=b"v%d" % (end + i))
        producer.flush(10)
        end += n

    def read_to_end() -> bool:
        msg = consumer.poll(0.5)
        return msg is not None and msg.error() is None and msg.offset() == end - 1

    def topic_end_seen() -> bool:   # Burrow drops commits of a topic before its log end is known
        code, body = lag_scenarios.get(f"{base}/v3/kafka/local/topic/{topic}")
        return code == 200 and json.loads(body)["offsets"] == [end]

    def stored_commit() -> int | None:
        # read from storage, not over HTTP: fetching a group known only from its metadata record (no commit yet,
        # lastCommit 0) expires it, owners and all, as Burrow does (docs/lag-monitor.md §3.3)
        with running.monitor.lock:
            g = running.monitor.storage.groups.get(group)
            ring = g.topics[topic][0].ring if g and topic in g.topics else None
            return ring[-1].offset if ring else None

    try:
        for i in range(5):
            produce(10)
            wait_for(topic_end_seen, 30, 0.05, what=f"log end {end} of {topic} seen by the monitor")
            if i == 0:   # join only now: Burrow drops the owners of partitions whose log end it does not know yet
                consumer.subscribe([topic])
            wait_for(read_to_end, 30, 0, what=f"{group} read up to {end}")
            consumer.commit(asynchronous=False)
            wait_for(lambda: stored_commit() == end, 30, 0.05, what=f"commit {end} of {group} stored by the monitor")
        st = wait_for(lambda: (g := _group_lag(base, group)).get("status") == "OK" and g, 30, 0.1,
                      what=f"{group} OK")
        [p] = st["partitions"]
        assert (p["status"], p["current_lag"], st["totallag"]) == ("OK", 0, 0)
        assert p["client_id"] == "lag-interop" and p["owner"]  # from the group metadata record
        committed = end
        st = wait_for(lambda: (produce(5), g := _group_lag(base, group))[1].get("status") == "ERR" and g, 30, 0.3,
                      what=f"{group} ERR/STOP")
        [p] = st["partitions"]
        assert p["status"] == Status.STOP.name and p["end"]["offset"] == committed
        assert p["current_lag"] == st["totallag"] > 0
    finally:
        server.shutdown()
        consumer.close()
