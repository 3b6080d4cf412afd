"""Replication-driven metrics end to end: a real three-broker cluster (ZooKeeper + broker subprocesses, each with
its own Prometheus endpoint), faults made with SIGSTOP / SIGKILL, every figure read over HTTP and parsed with
prometheus-client's parser. Also the ZooKeeper ensemble exporter (`kafkascope zk-exporter`), both as started by
the cluster launcher and as the CLI.

One cluster for the module (startup is the expensive part); each test leaves every broker running.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkascope.local.cluster import Cluster, wait_for
from tests.replication.helpers import create_topic, metadata, metadata_from, produce_raw, topic_name

LAG_MS = 2000
# Long enough that a paused follower keeps its ZooKeeper session (ISR changes come from the leader), short enough
# that a killed leader's registration goes soon (the controller elects once the session has expired).
SESSION_MS = 8000
PROPS = {"prometheus.listener": "127.0.0.1:0", "replica.lag.time.max.ms": LAG_MS,
         "zookeeper.session.timeout.ms": SESSION_MS, "min.insync.replicas": 2}
REPO = Path(__file__).resolve().parents[2]

Samples = dict[tuple[str, tuple], float]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("metrics-cluster"), brokers=3, **PROPS)
    c.launcher.zk_exporter_port = 0  # the launcher starts `kafkascope zk-exporter` next to ZooKeeper
    c.start()
    try:
        yield c
    finally:
        c.shutdown()


def metrics_port(c: Cluster, broker_id: int) -> int:
    """The port the broker's Prometheus endpoint bound (prometheus.listener=...:0), from its latest start."""
    log = (c.broker(broker_id).data_dir / "broker.log").read_text(errors="replace")
    found = re.findall(r"prometheus metrics on http://[\d.]+:(\d+)/metrics", log)
    assert found, f"broker {broker_id} logged no metrics endpoint"
    return int(found[-1])


def parse(text: str) -> Samples:
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(c: Cluster, broker_id: int) -> Samples:
    url = f"http://127.0.0.1:{metrics_port(c, broker_id)}/metrics"
    return parse(urllib.request.urlopen(url, timeout=10).read().decode())


def value(c: Cluster, broker_id: int, name: str, **labels: str) -> float:
    return scrape(c, broker_id).get((name, tuple(sorted(labels.items()))), 0.0)


def controller_id(c: Cluster) -> int:
    return wait_for(lambda: (m := metadata(c)).controller_id >= 0 and m, 15, what="a controller").controller_id


def partition_led_by(c: Cluster, topic: str, want_controller: bool) -> tuple[int, int, list[int]]:
    """Create an RF=3 topic with 3 partitions (leaders spread over the brokers) and pick one led by the
    controller (or by a non-controller): (partition, leader, followers)."""
    ctrl = controller_id(c)
    create_topic(c, topic, 3)
    m = metadata(c, [topic])
    p = next(p for p in range(3) if (m.part(topic, p).leader == ctrl) == want_controller)
    lead = m.part(topic, p).leader
    return p, lead, [b for b in m.part(topic, p).replicas if b != lead]


URP = "kafka_server_replicamanager_underreplicatedpartitions"
SHRINKS = "kafka_server_replicamanager_isrshrinks_total"
EXPANDS = "kafka_server_replicamanager_isrexpands_total"
ELECTIONS = "kafka_controller_controllerstats_leaderelectionrateandtimems_count_total"
UNCLEAN = "kafka_controller_controllerstats_uncleanleaderelections_total"


def test_one_active_controller_and_zookeeper_client_metrics(cluster):
    c = cluster
    ctrl = controller_id(c)
    create_topic(c, topic_name("zk-reads"), 1)  # every broker reads the new topic's znodes (timed requests)
    latency = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count_total"
    for b in c.broker_ids:
        wait_for(lambda b=b: value(c, b, latency) > 0, 10, what=f"ZooKeeperRequestLatencyMs on broker {b}")
    scrapes = {b: scrape(c, b) for b in c.broker_ids}
    active = {b: s[("kafka_controller_kafkacontroller_activecontrollercount", ())] for b, s in scrapes.items()}
    assert sum(active.values()) == 1 and active[ctrl] == 1, active
    for b, s in scrapes.items():
        assert s[("kafka_server_sessionexpirelistener_sessionstate", (("state", "CONNECTED"),))] == 1, b
        assert s[("kafka_server_sessionexpirelistener_sessionstate", (("state", "CLOSED"),))] == 0, b
        assert s[("kafka_server_sessionexpirelistener_zookeeperexpires_total", ())] == 0, b
        assert s[("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms", (("quantile", "0.99"),))] > 0, b
    # topic creation elected first leaders: counted by the active controller only
    assert scrapes[ctrl][(ELECTIONS, ())] > 0
    assert all(s[(ELECTIONS, ())] == 0 for b, s in scrapes.items() if b != ctrl)


def test_followers_count_replication_bytes_in(cluster):
    c = cluster
    topic = topic_name("repl-in")
    create_topic(c, topic, 1)
    m = metadata(c, [topic]).part(topic, 0)
    before = {b: value(c, b, "kafka_server_brokertopicmetrics_replicationbytesin_total") for b in m.replicas}
    assert produce_raw(c.broker(m.leader).port, topic, 0, [b"r" * 1000] * 20)[0] == 0  # acks=all: replicated
    for f in (b for b in m.replicas if b != m.leader):
        wait_for(lambda f=f: value(c, f, "kafka_server_brokertopicmetrics_replicationbytesin_total") - before[f]
                 >= 20_000, 10, what=f"ReplicationBytesIn on follower {f}")
    out = value(c, m.leader, "kafka_server_brokertopicmetrics_replicationbytesout_total")
    assert out >= 2 * 20_000


def test_paused_follower_under_replicated_isr_shrinks_then_expands(cluster):
    c = cluster
    topic = topic_name("isr-metrics")
    p, lead, (f1, _f2) = partition_led_by(c, topic, want_controller=True)  # never pause the controller
    port = c.broker(lead).port
    assert produce_raw(port, topic, p, [b"a"])[0] == 0
    shrinks0, expands0 = value(c, lead, SHRINKS), value(c, lead, EXPANDS)
    assert value(c, lead, URP) == 0
    c.broker(f1).pause()
    try:
        wait_for(lambda: value(c, lead, URP) > 0, LAG_MS / 1000 + 10, what="UnderReplicatedPartitions > 0")
        wait_for(lambda: value(c, lead, SHRINKS) > shrinks0, 5, what="IsrShrinksPerSec counted")
        assert value(c, lead, "kafka_cluster_partition_underreplicated", topic=topic, partition=str(p)) == 1
        assert f1 not in metadata_from(port, [topic]).part(topic, p).isr
    finally:
        c.broker(f1).resume()
    wait_for(lambda: value(c, lead, EXPANDS) > expands0, 20, what="IsrExpandsPerSec counted after resume")
    wait_for(lambda: value(c, lead, URP) == 0, 10, what="UnderReplicatedPartitions back to 0")


def test_acks_all_with_a_paused_follower_waits_in_the_produce_purgatory(cluster):
    c = cluster
    topic = topic_name("purgatory")
    p, lead, (f1, _f2) = partition_led_by(c, topic, want_controller=True)
    port = c.broker(lead).port
    result: list[tuple[int, int]] = []
    c.broker(f1).pause()
    try:
        # f1 is still in the ISR for replica.lag.time.max.ms: the acks=all produce waits for it
        th = threading.Thread(target=lambda: result.append(produce_raw(port, topic, p, [b"slow"], acks=-1,
                                                                        timeout_ms=20_000)), daemon=True)
        th.start()
        seen = wait_for(lambda: (s := scrape(c, lead))[("kafka_server_delayedoperationpurgatory_purgatorysize",
                                                        (("delayedOperation", "Produce"),))] > 0 and s,
                        LAG_MS / 1000, 0.02, what="Produce PurgatorySize > 0 while acks=all waits")
        assert seen[("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                     (("delayedOperation", "Produce"),))] > 0
        # the leader drops f1 from the ISR; the high watermark moves and the produce completes
        th.join(LAG_MS / 1000 + 15)
        assert result and result[0][0] == 0, result
        assert value(c, lead, "kafka_server_delayedoperationpurgatory_numdelayedoperations",
                     delayedOperation="Produce") == 0
    finally:
        c.broker(f1).resume()
    wait_for(lambda: f1 in metadata_from(port, [topic]).part(topic, p).isr, 20, what=f"{f1} back in the ISR")


def test_killed_leader_counts_a_leader_election_on_the_controller(cluster):
    c = cluster
    topic = topic_name("election")
    p, lead, followers = partition_led_by(c, topic, want_controller=False)  # the controller survives the kill
    ctrl = controller_id(c)
    before, unclean = value(c, ctrl, ELECTIONS), value(c, ctrl, UNCLEAN)
    time_sum = value(c, ctrl, "kafka_controller_controllerstats_leaderelectionrateandtime_seconds_sum")
    c.broker(lead).kill()
    try:
        wait_for(lambda: value(c, ctrl, ELECTIONS) > before, SESSION_MS / 1000 + 15, 0.2,
                 what="LeaderElectionRateAndTimeMs count up on the controller")
        wait_for(lambda: metadata(c, [topic], exclude=(lead,)).part(topic, p).leader in followers, 10,
                 what="a new leader from the ISR")
        s = scrape(c, ctrl)
        assert s[(UNCLEAN, ())] == unclean  # clean: the new leader came from the ISR
        assert s[("kafka_controller_controllerstats_leaderelectionrateandtime_seconds_sum", ())] > time_sum
        assert s[("kafka_controller_controllerstats_leaderelectionrateandtimems", (("quantile", "0.99"),))] > 0
        others = [b for b in c.broker_ids if b not in (lead, ctrl)]
        assert all(value(c, b, "kafka_controller_kafkacontroller_activecontrollercount") == 0 for b in others)
    finally:
        c.broker(lead).start()
    wait_for(lambda: lead in metadata(c, [topic]).part(topic, p).isr, 30, 0.2, what=f"{lead} back in the ISR")
    wait_for(lambda: sum(value(c, b, "kafka_controller_kafkacontroller_activecontrollercount")
                         for b in c.broker_ids) == 1, 10, what="exactly one active controller")


def _zk_checks(text: str, zk_host_port: str) -> None:
    s = parse(text)
    host = (("zk_host", zk_host_port),)
    assert s[("zk_up", host)] == 1
    assert s[("zk_server_state", (("state", "standalone"), ("zk_host", zk_host_port)))] == 1
    assert s[("zk_server_state", (("state", "leader"), ("zk_host", zk_host_port)))] == 0
    assert s[("zk_server_leader", host)] == 0
    for name in ("zk_avg_latency", "zk_max_latency", "zk_outstanding_requests", "zk_packets_sent",
                 "zk_packets_received", "zk_approximate_data_size"):
        assert (name, host) in s, name
    # the brokers' registrations, watches and connections are there
    assert s[("zk_znode_count", host)] > 10
    assert s[("zk_watch_count", host)] > 0
    assert s[("zk_num_alive_connections", host)] >= 3
    assert s[("zk_ephemerals_count", host)] >= 4  # 3 broker registrations + /controller


def test_zk_exporter_started_by_the_launcher(cluster):
    url = cluster.launcher.zk_exporter_url
    assert url
    _zk_checks(urllib.request.urlopen(url, timeout=10).read().decode(), cluster.zookeeper.host_port)


def test_zk_exporter_cli(cluster):
    from kafkascope.local.process import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kafkascope", "zk-exporter", "--zookeeper",
                             "127.0.0.1:1," + cluster.zookeeper.connect, "--listen", f"127.0.0.1:{port}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        text = wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode(),
                        20, 0.1, what="zk-exporter serving")
        _zk_checks(text, cluster.zookeeper.host_port)
        assert parse(text)[("zk_up", (("zk_host", "127.0.0.1:1"),))] == 0  # a server that does not answer
    finally:
        proc.terminate()
        proc.wait(10)
