"""Community dashboards and alerts, unchanged, on our broker and on Apache Kafka 3.9.2 + jmx_exporter 1.0.1.

For each naming (Strimzi's kafka-metrics.yaml rules, then Confluent's kafka_broker.yml rules) two 3-broker
clusters run one after the other, each scraped by its own real Prometheus: Apache Kafka 3.9.2 (ZooKeeper mode) with
the jmx_exporter agent given the rule file itself, and ours with ``prometheus.naming`` set to the same file.
Prometheus scrapes them as the upstream stacks do: Strimzi's PodMonitor relabelings (kafka-resources-metrics.yaml,
applied to static targets that carry the Kubernetes meta labels a pod of cluster ``my-cluster`` in namespace
``myproject`` would have) or jmx-monitoring-stacks' ``kafka-broker`` job (``env="dev"``). The upstream alert rules
are loaded as they are (annotations aside, see community_queries.rule_groups).

Both clusters get the same traffic and the same fault, on the same schedule from the first timed record (after
one seed record to every partition, so the per-topic series exist on both before it): a producer at a fixed rate
on three topics (3 partitions, RF=3, min.insync.replicas=2), a slower one on a topic with min.insync.replicas=3, a
consumer group on the first three, a single-replica topic on the broker to be paused; after WARM_S[naming] one
broker that is not the controller is paused (SIGSTOP) for PAUSE_S, then resumed.
Threshold queries (`<expression> > 0`, alert conditions) are also judged by their operand (`<expression>`), since an
alert that never fired says nothing about its metric.

Asserted per naming:
* every dashboard and alert query with data (a range query over the run) on Apache Kafka has data on ours, except
  KNOWN_GAPS (each with its reason; one that gains data fails, so the list stays true);
* OUT_OF_SCOPE queries have no data on Apache Kafka either (so the reason given for them holds);
* the fault-driven panels give the same values on both while the broker is paused (under-replicated, under / at
  min ISR, offline partitions, brokers online, online replicas, active controllers) and the same alerts are active;
* per-topic message-in rates within 5%: the dashboard's per-topic panel with its variable set to the topic;
  Strimzi's irate averaged over the same steady stretch of the schedule before the fault (AFTER_THE_FAULT says why
  not after it), Confluent's rate[5m] at the end of the run, when its window holds all of it.
Points at which a running broker's scrape failed (jmx_exporter is sometimes slower than the scrape timeout here) are
not counted.
The coverage table (queries with data, ours vs Kafka, per dashboard) is printed (pytest -s to see it);
KAFKASCOPE_COMMUNITY_REPORT=<file> also appends it and every query's outcome (JSON) to that file.
About 16 minutes (four cluster runs one after the other; 2026-11-26: 10 passed in 16:09 at load 1-7).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from kafkascope.local import process as proc
from kafkascope.local.launcher import ClusterLauncher
from tests.e2e.helpers import wait_until
from tests.interop import community_queries as cq
from tests.interop.conftest import apache_kafka_or_skip

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian package `prometheus` missing")]

REPO = Path(__file__).resolve().parents[2]
RULE_FILES = {"strimzi": REPO / "exporter" / "rules" / "strimzi-kafka-metrics.yaml",
              "confluent": REPO / "exporter" / "rules" / "confluent-kafka_broker.yml"}

# jmx_exporter answers a scrape of Kafka 3.9 (about 4,400 series a broker under Strimzi's rules) in 1-4 s on this
# 2-core machine while three JVMs warm up, and in 4-10 s under Confluent's rules when other work loads the machine
# (load average 10: most 10 s scrapes timed out), so 15 s scrapes with a 15 s timeout.
SCRAPE_S = 15
# Steady traffic before the fault: Strimzi's per-topic panel is an irate, compared over this stretch (less the first
# SETTLE_S); 65 s of it keep jmx_exporter's read-time jitter (a few seconds a scrape) within about 2-3%.
# Confluent's is a rate[5m], compared at the end of the run: a short stretch does.
WARM_S = {"strimzi": 100, "confluent": 45}
PAUSE_S = 75  # the broker stays paused this long (the fault values must hold for two scrape intervals in it)
POST_S = 30  # from the resume to the end of the run
SETTLE_S = 35  # left out of the steady window after the traffic starts (an irate pair can straddle the start)
RATE = 20  # records/s on each of TOPICS
STRICT_RATE = 5
TOPICS = ["cd-a", "cd-b", "cd-c"]
STRICT = "cd-strict"  # min.insync.replicas=3: under min ISR while a broker is away
SINGLE = "cd-single"  # one replica, on the paused broker: offline while it is away
GROUP = "cd-group"
BROKER_PROPS = {
    "replica.lag.time.max.ms": 10000,
    "zookeeper.session.timeout.ms": 6000,
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 10,
}

NAMESPACE, CLUSTER = "myproject", "my-cluster"

# The panels whose values the fault drives, by dashboard and title.
FAULT_PANELS = {
    "strimzi": ("strimzi-kafka.json", ["Brokers Online", "Active Controllers", "Online Replicas",
                                       "Under Replicated Partitions", "Partitions at minimum ISR",
                                       "Partitions under minimum ISR", "Offline Partitions Count"]),
    "confluent": ("kafka-cluster.json", ["Brokers Online", "Active Controllers", "Online Partitions",
                                         "Under Replicated Partitions", "Under Min ISR Partitions",
                                         "Offline Partitions Count"]),
}
# The fault panels the brokers' Metadata also answers (TopicMetadata ISR/leader, the topics' min.insync.replicas).
METADATA_OF = {"Under Replicated Partitions": "under_replicated", "Partitions at minimum ISR": "at_min_isr",
               "Partitions under minimum ISR": "under_min_isr", "Under Min ISR Partitions": "under_min_isr",
               "Offline Partitions Count": "offline"}
URP_TITLE = "Under Replicated Partitions"
OFFLINE_TITLE = "Offline Partitions Count"

# Queries with no data on either backend here, and why (checked: each must have no data on Apache Kafka).
OUT_OF_SCOPE: list[tuple[str, str]] = [
    (r"\b(container_\w+|kubelet_volume_stats_\w+)", "Kubernetes cAdvisor / kubelet series (no Kubernetes here)"),
    (r"kafka_tier_|_tiersize\b", "Confluent Server tiered storage (not in Apache Kafka)"),
    (r"_straypartitions",
     "Confluent Server's ReplicaManager stray-partition gauges (no such MBean in Kafka 3.9.2's jars)"),
    (r"transaction_coordinator_metrics_(transaction_timeout|transaction_state_error|transactional_id_count"
     r"|active_transaction|prepare_commit|partitions_total_size)",
     "Confluent Server transaction coordinator metrics (Kafka 3.9's transaction-coordinator-metrics group has only "
     "partition-load-time-avg/max)"),
    (r"kafka_server_(produce|fetch|request)_(byte_rate|throttle_time|request_time)\b",
     "per-user/client-id quota sensors: Kafka records them only when a client quota is set "
     "(ClientQuotaManager.quotasEnabled); none is set here, and our broker does not serve AlterClientQuotas"),
    (r"controlplanerequesthandleravgidlepercent",
     "the control-plane request handler pool exists only with control.plane.listener.name (not set)"),
]

# Why the messages-in panels are not compared after the fault: the paused broker led a partition of each topic and
# no longer does after its resume. Kafka 3.9 then removes its MessagesIn/BytesIn/BytesRejected/TotalProduceRequests/
# FailedProduceRequests/ProduceMessageConversions/ReplicationBytesOut/ReassignmentBytesOut meters of those topics
# (ReplicaManager.updateLeaderAndFollowerMetrics -> BrokerTopicStats.removeOldLeaderMetrics), the series vanishes and
# Strimzi's irate(...[5m]) keeps its last two samples' rate for up to five minutes; ours keeps the meter (flat), so
# its irate is 0. The librdkafka producer also holds the paused leader's partitions until the resume (its requests to
# the frozen broker time out first), then catches up in a burst, on both.
AFTER_THE_FAULT = ("Kafka removes the per-topic leader meters of a broker that no longer leads the topic; "
                   "ours keeps them")

# Queries with data on ours and none on Apache Kafka, and why (a query that newly shows data only on ours fails).
OURS_ONLY: list[tuple[str, str]] = [
    (r"kafka_server_brokertopicmetrics_failedfetchrequests_total\{.*topic=",
     "Kafka creates a topic's FailedFetchRequestsPerSec meter on its first failed fetch (lazily); ours exports it "
     "at 0 for every topic (tests/interop/test_metrics_parity.py, LAZY_PER_TOPIC); the panel shows 0 instead of "
     "no data"),
    (r"kafka_network_requestmetrics_deprecatedrequestspersec",
     "ours marks Metadata v1 (the cluster launcher's readiness probe, brokers_seen_by) as a deprecated request: "
     "broker/metrics/clients.py DEPRECATED_UP_TO has Metadata 0-3 and Produce 0-6, while Kafka 3.9.2's request "
     "schemas deprecate no Metadata version and Produce 0-2 only (clients jar, common/message/*Request.json); "
     "a bug in our DeprecatedRequestsPerSec table"),
    (r"\bjvm_memory_bytes_max\b",
     "jmx_exporter 0.x's name: the 1.0.1 agent exports jvm_memory_max_bytes only, ours exports both "
     "(docs/metrics-jvm-mapping.md)"),
]

# Queries with data on Apache Kafka but none on ours, accepted for now: (source, where) -> reason.
# (The transaction coordinator's partition-load-time panels were here until our broker served transactions.)
KNOWN_GAPS: dict[tuple[str, str], str] = {}


# ---------------------------------------------------------------------------------------------- Prometheus

class Prometheus:
    """A real Prometheus on a free 127.0.0.1 port with one scrape job and the given rule groups."""

    def __init__(self, directory: Path, job: dict, rules: dict, scrape_s: int = SCRAPE_S) -> None:
        self.dir = directory
        self.job = job
        self.rules = rules
        self.scrape_s = scrape_s
        self.port = proc.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.popen = None
        self.started: int | None = None

    def start(self) -> Prometheus:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "rules.yml").write_text(yaml.safe_dump(self.rules, sort_keys=False))
        s = self.scrape_s
        cfg = {"global": {"scrape_interval": f"{s}s", "scrape_timeout": f"{s}s", "evaluation_interval": f"{s}s"},
               "rule_files": [str(self.dir / "rules.yml")], "scrape_configs": [self.job]}
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        self.popen = proc.spawn([shutil.which("prometheus"), f"--config.file={self.dir / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={self.dir / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{self.port}"], self.dir / "prometheus.log")
        self.started = proc.start_time(self.popen.pid)
        wait_until(lambda: self._ready(), 60, 0.2,
                   what=f"Prometheus ready\n{proc.log_tail(self.dir / 'prometheus.log')}")
        return self

    def _ready(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"Prometheus exited:\n{proc.log_tail(self.dir / 'prometheus.log')}")
        try:
            return urllib.request.urlopen(self.url + "/-/ready", timeout=2).status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.popen is not None:
            proc.terminate(self.popen.pid, self.started, 20)

    def _get(self, path: str, params: list[tuple[str, str]]) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            body = json.loads(urllib.request.urlopen(url, timeout=30).read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
        if body.get("status") != "success":
            raise PromQLError(f"{params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        params = [("query", expr)] + ([("time", f"{at:.3f}")] if at else [])
        data = self._get("/api/v1/query", params)
        return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]

    def query_range(self, expr: str, start: float, end: float, step: float = SCRAPE_S) -> list[dict]:
        return self._get("/api/v1/query_range", [("query", expr), ("start", f"{start:.3f}"), ("end", f"{end:.3f}"),
                                                  ("step", str(step))])["result"]

    def label_values(self, label: str, match: str | None, start: float, end: float) -> list[str]:
        if match is None:
            return self._get(f"/api/v1/label/{label}/values", [("start", f"{start:.3f}"), ("end", f"{end:.3f}")])
        series = self._get("/api/v1/series", [("match[]", match), ("start", f"{start:.3f}"), ("end", f"{end:.3f}")])
        return sorted({s[label] for s in series if label in s})

    def lookup(self, start: float, end: float) -> cq.Lookup:
        return cq.Lookup(lambda e: self.query(e, end), lambda lb, m: self.label_values(lb, m, start, end))

    def active_alerts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for a in self._get("/api/v1/alerts", [])["alerts"]:
            name, state = a["labels"]["alertname"], a["state"]
            if out.get(name) != "firing":
                out[name] = state
        return out

    def wait(self, cond, timeout_s: float, what: str):
        """wait_until, and on a timeout the scrape health (a loaded machine makes jmx_exporter time out)."""
        try:
            return wait_until(cond, timeout_s, 1, what=what)
        except AssertionError as e:
            health = {s["metric"]["instance"]: s["value"][1] for s in self.query(
                f"avg_over_time(up[{int(timeout_s)}s])")}
            durations = {s["metric"]["instance"]: s["value"][1][:5] for s in self.query(
                f"max_over_time(scrape_duration_seconds[{int(timeout_s)}s])")}
            raise AssertionError(f"{e}\nshare of successful scrapes {health}, longest scrape (s) {durations} "
                                 f"(timeout {SCRAPE_S} s), load average {os.getloadavg()}") from None

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        """The panel's number: the sum of the vector's values, None when it has no data."""
        r = self.query(expr, at)
        return sum(float(s["value"][1]) for s in r) if r else None


class PromQLError(RuntimeError):
    pass


def strimzi_job(targets: dict[int, str]) -> dict:
    """Strimzi's PodMonitor relabelings over static targets carrying the meta labels of pods my-cluster-kafka-<id>
    (the Kubernetes SD would provide them), plus what prometheus-operator adds to every PodMonitor target
    (namespace, container, pod, endpoint, job)."""
    operator = [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"target_label": "endpoint", "replacement": "tcp-prometheus"},
        {"target_label": "job", "replacement": f"{NAMESPACE}/kafka-resources-metrics"},
    ]
    static = [{"targets": [t], "labels": {
        "__meta_kubernetes_namespace": NAMESPACE,
        "__meta_kubernetes_pod_name": f"{CLUSTER}-kafka-{bid}",
        "__meta_kubernetes_pod_container_name": "kafka",
        "__meta_kubernetes_pod_node_name": "localhost",
        "__meta_kubernetes_pod_host_ip": "127.0.0.1",
        "__meta_kubernetes_pod_label_strimzi_io_cluster": CLUSTER,
        "__meta_kubernetes_pod_label_strimzi_io_kind": "Kafka",
        "__meta_kubernetes_pod_label_strimzi_io_name": f"{CLUSTER}-kafka",
        "__meta_kubernetes_pod_label_strimzi_io_component_type": "kafka",
        "__meta_kubernetes_pod_label_strimzi_io_pod_name": f"{CLUSTER}-kafka-{bid}",
    }} for bid, t in sorted(targets.items())]
    return {"job_name": f"podMonitor/{NAMESPACE}/kafka-resources-metrics/0", "metrics_path": "/metrics",
            "static_configs": static, "relabel_configs": cq.pod_monitor_relabelings() + operator}


def confluent_job(targets: dict[int, str]) -> dict:
    """jmx-monitoring-stacks' kafka-broker job with our brokers as its targets (its env label and relabelling)."""
    job = cq.confluent_broker_job()
    labels = job["static_configs"][0].get("labels", {})
    return {**job, "static_configs": [{"targets": [targets[b] for b in sorted(targets)], "labels": labels}]}


# ---------------------------------------------------------------------------------------------- clusters

class ApacheKafkaWithRules(ClusterLauncher):
    """The apache-kafka launcher with the jmx_exporter agent given `rules` instead of the launcher's own file."""

    def __init__(self, *args, rules: Path, **kwargs) -> None:
        super().__init__(*args, impl="apache-kafka", **kwargs)
        self.rules = rules

    def _command(self, m):
        cmd = super()._command(m)
        if m.kind != "broker":
            return cmd
        agents = [i for i, a in enumerate(cmd) if a.startswith("-javaagent:") and "jmx_prometheus_javaagent" in a]
        assert len(agents) == 1, f"expected one jmx_exporter agent in {cmd}"
        head, _, _ = cmd[agents[0]].rpartition(":")  # -javaagent:JAR=127.0.0.1:PORT:RULES
        cmd[agents[0]] = f"{head}:{self.rules}"
        return cmd


class OursWithMetrics(ClusterLauncher):
    """Our brokers, each serving /metrics (prometheus.listener) on its own free port."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metrics_ports: dict[int, int] = {}

    def _broker_config(self, broker_id, port, rack, zk_connect):
        props = super()._broker_config(broker_id, port, rack, zk_connect)
        self.metrics_ports.setdefault(broker_id, proc.free_port())
        props["prometheus.listener"] = f"127.0.0.1:{self.metrics_ports[broker_id]}"
        return props


def agent_rules(naming: str, directory: Path) -> Path:
    """The rule file given to the agent: upstream's as it is, except Confluent's startDelaySeconds: 120 (the agent
    would answer empty pages for two minutes; a start-up setting, not naming, and our broker ignores it) set to 0."""
    text = RULE_FILES[naming].read_text()
    if naming == "confluent":
        text, n = re.subn(r"(?m)^startDelaySeconds:\s*\d+\s*$", "startDelaySeconds: 0", text)
        assert n == 1
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RULE_FILES[naming].name
    path.write_text(text)
    return path


def make_cluster(impl: str, naming: str, directory: Path) -> tuple[ClusterLauncher, dict[int, str]]:
    if impl == "apache-kafka":
        launcher = ApacheKafkaWithRules(directory, brokers=3, broker_props=BROKER_PROPS,
                                        rules=agent_rules(naming, directory / "agent-rules"))
        launcher.start_all(timeout_s=180)
        targets = {b: launcher.metrics_url(b).split("//")[1].split("/")[0] for b in launcher.broker_ids}
    else:
        launcher = OursWithMetrics(directory, brokers=3, broker_props={**BROKER_PROPS, "prometheus.naming": naming})
        launcher.start_all(timeout_s=120)
        targets = {b: f"127.0.0.1:{launcher.metrics_ports[b]}" for b in launcher.broker_ids}
    return launcher, targets


# ---------------------------------------------------------------------------------------------- traffic

class Traffic:
    """Producers at fixed rates (one record every 1/rate s on a schedule from t0, idempotent, acks=all) and a
    consumer group reading TOPICS; all threads end on stop() (and after MAX_S in any case)."""

    MAX_S = 900

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._stop = threading.Event()
        self.t0 = 0.0
        self.delivered: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.consumed = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> Traffic:
        self.t0 = time.time()
        for topics, rate in ((TOPICS, RATE), ([STRICT], STRICT_RATE)):
            self._threads.append(threading.Thread(target=self._produce, args=(topics, rate), daemon=True))
        self._threads.append(threading.Thread(target=self._consume, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    def _report(self, err, msg) -> None:
        with self._lock:
            d = self.failed if err else self.delivered
            d[msg.topic()] = d.get(msg.topic(), 0) + 1

    def _produce(self, topics: list[str], rate: int) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 20,
                      "message.timeout.ms": 300000, "log_level": 0})
        value = b"v" * 200
        i, per_s = 0, rate * len(topics)
        try:
            while not self._stop.is_set() and time.time() - self.t0 < self.MAX_S:
                due = self.t0 + i / per_s
                if self._stop.wait(max(0.0, due - time.time())):
                    break
                topic = topics[i % len(topics)]
                for _ in range(100):  # a full local queue: serve callbacks, then retry (bounded)
                    try:
                        p.produce(topic, key=f"k{i}".encode(), value=value, on_delivery=self._report)
                        break
                    except BufferError:
                        p.poll(0.05)
                p.poll(0)
                i += 1
        except Exception as e:  # reported by the test
            self.errors.append(f"producer {topics}: {e!r}")
        finally:
            p.flush(30)

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": True, "auto.commit.interval.ms": 1000, "log_level": 0})
        c.subscribe(TOPICS)
        try:
            while not self._stop.is_set() and time.time() - self.t0 < self.MAX_S:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    self.consumed += 1
        except Exception as e:
            self.errors.append(f"consumer: {e!r}")
        finally:
            c.close()


def create_topics(bootstrap: str, victim: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    new = [NewTopic(t, 3, 3, config={"min.insync.replicas": "2"}) for t in TOPICS]
    new.append(NewTopic(STRICT, 3, 3, config={"min.insync.replicas": "3"}))
    new.append(NewTopic(SINGLE, 1, replica_assignment=[[victim]]))
    for f in a.create_topics(new, operation_timeout=30).values():
        f.result(60)

    def settled() -> bool:
        md = a.list_topics(timeout=10)
        names = [*TOPICS, STRICT, SINGLE]
        return all(n in md.topics and md.topics[n].partitions and all(
            p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in md.topics[n].partitions.values())
            for n in names)

    wait_until(settled, 60, 0.5, what="topics with leaders and full ISRs")


def seed_topics(bootstrap: str) -> None:
    """One record to every partition of TOPICS and STRICT (acks=all)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})
    for t in [*TOPICS, STRICT]:
        for partition in range(3):
            p.produce(t, value=b"seed", partition=partition)
    assert p.flush(60) == 0, "seed records not delivered"


def controller_id(bootstrap: str) -> int:
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return a.describe_cluster(request_timeout=10).result(30).controller.id


def metadata_counts(bootstrap: str) -> dict[str, int]:
    """Under-replicated / under and at min ISR / offline partitions as the live brokers' Metadata tells them."""
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    md = a.list_topics(timeout=10)
    min_isr = {**dict.fromkeys(TOPICS, 2), STRICT: 3}
    out = {"under_replicated": 0, "under_min_isr": 0, "at_min_isr": 0, "offline": 0}
    for name, t in md.topics.items():
        for p in t.partitions.values():
            if p.leader < 0:
                out["offline"] += 1
                continue
            m = min(min_isr.get(name, 1), len(p.replicas))
            out["under_replicated"] += len(p.isrs) < len(p.replicas)
            out["under_min_isr"] += len(p.isrs) < m
            out["at_min_isr"] += len(p.isrs) == m
    return out


# ---------------------------------------------------------------------------------------------- one run

@dataclass
class Resolved:
    query: cq.Query
    expr: str  # interpolated
    has_data: bool = False
    series: int = 0
    error: str | None = None


@dataclass
class RunResult:
    impl: str
    naming: str
    queries: list[Resolved] = field(default_factory=list)
    fault: dict[str, float | None] = field(default_factory=dict)
    fault_stable: bool = False
    fault_metadata: dict[str, int] = field(default_factory=dict)
    alerts: dict[str, str] = field(default_factory=dict)
    rates: dict[str, float | None] = field(default_factory=dict)  # steady, before the fault
    rates_after: dict[str, float | None] = field(default_factory=dict)  # after the resume (not compared)
    timeline: dict[str, float] = field(default_factory=dict)
    variables: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    traffic: dict[str, object] = field(default_factory=dict)


def _wait_until_time(t: float) -> None:
    """Hold until the wall-clock instant t of the run's schedule (the same offsets on both backends)."""
    threading.Event().wait(max(0.0, t - time.time()))


def _dashboards(naming: str) -> list[cq.Dashboard]:
    return cq.STRIMZI_DASHBOARDS if naming == "strimzi" else cq.CONFLUENT_DASHBOARDS


def _rules(naming: str) -> list[Path]:
    return cq.STRIMZI_RULES if naming == "strimzi" else cq.CONFLUENT_RULES


def _panel_expr(naming: str, resolved: dict[str, list[Resolved]], title: str) -> str:
    source, _ = FAULT_PANELS[naming]
    hits = [r.expr for r in resolved[source] if r.query.where.startswith(f"panel {title} [")]
    assert hits, f"no panel {title!r} in {source}"
    return hits[0]


def _topic_rate_exprs(naming: str, variables: dict[str, cq.Variables]) -> dict[str, str]:
    """The per-topic messages-in query of the dashboard, with its topic variable set to each topic."""
    if naming == "strimzi":
        source, title, var = "strimzi-kafka.json", "Messages In Per Second", "kafka_topic"
    else:
        source, title, var = "kafka-topics.json", "Messages In", "topic"
    dash = next(d for d in _dashboards(naming) if d.name == source)
    q = next(q for q in dash.queries() if q.where.startswith(f"panel {title} ["))
    return {t: cq.interpolate(q.expr, variables[source].with_override(var, [t])) for t in TOPICS}


def run_backend(impl: str, naming: str, directory: Path) -> RunResult:
    res = RunResult(impl, naming)
    launcher = prom = traffic = None
    try:
        t_begin = time.time()
        launcher, targets = make_cluster(impl, naming, directory / "cluster")
        res.timeline["cluster_started"] = time.time() - t_begin
        rules: dict = {"groups": [g for p in _rules(naming) for g in cq.rule_groups(p)["groups"]]}
        job = strimzi_job(targets) if naming == "strimzi" else confluent_job(targets)
        prom = Prometheus(directory / "prometheus", job, rules).start()
        t_scraped = time.time()
        # Every target answered its last three scrapes (a JVM that has just started can take longer than that).
        # The run's queries are judged from then on, as a dashboard looks at a running cluster (before it, a
        # target scraped before the others makes e.g. sum(ActiveControllerCount) 0 for one evaluation).
        prom.wait(lambda: len(prom.query(f"min_over_time(up[{3 * SCRAPE_S - 1}s]) == 1")) == 3
                  and len(prom.query(f"count_over_time(up[{3 * SCRAPE_S - 1}s]) >= 3")) == 3,
                  180, "3 targets scraped three times in a row")
        t_prom = time.time()

        bootstrap = launcher.bootstrap
        controller = controller_id(bootstrap)
        victim = max(b for b in launcher.broker_ids if b != controller)
        create_topics(bootstrap, victim)
        # One record to every partition first, and the per-topic series scraped, before the timed traffic: Kafka
        # creates a topic's MessagesInPerSec meter on its first record (ours at the topic's creation), and a series
        # born mid-window is extrapolated differently by rate()/irate(); so on both the traffic starts on series
        # that are already there.
        seed_topics(bootstrap)
        msgs_in = ("kafka_server_brokertopicmetrics_messagesin_total" if naming == "strimzi"
                   else "kafka_server_brokertopicmetrics_messagesinpersec")
        prom.wait(lambda: {s["metric"].get("topic") for s in prom.query(f'{msgs_in}{{topic=~"cd-.*"}} > 0')}
                  >= {*TOPICS, STRICT}, 6 * SCRAPE_S, "every topic's messages-in series")
        traffic = Traffic(bootstrap).start()
        res.timeline["traffic_start"] = traffic.t0 - t_begin
        wait_until(lambda: traffic.consumed > 0, 60, 0.5, what="the consumer group reading")

        # Template variables resolved once the traffic runs (every topic and broker is then there).
        resolved: dict[str, list[Resolved]] = {}
        variables: dict[str, cq.Variables] = {}
        for d in _dashboards(naming):
            # Over the whole run so far, as Grafana asks over the dashboard's time range: label_values() reads
            # the series API, which only lists series with a sample in the range (a few seconds
            # can hold one target's sample and not the others').
            v = variables[d.name] = cq.Variables.of(d.path).resolve(prom.lookup(t_scraped, time.time()))
            res.variables[d.name] = {k: sel.selected for k, sel in v.selections.items()}
            resolved[d.name] = [Resolved(q, cq.interpolate(q.expr, v.selections))
                                for q in cq.with_operands(d.queries())]
        for p in _rules(naming):
            resolved[p.name] = [Resolved(q, q.expr) for q in cq.with_operands(cq.alert_queries(p))]
        titles = FAULT_PANELS[naming][1]
        fault_exprs = {t: _panel_expr(naming, resolved, t) for t in titles}
        rate_exprs = _topic_rate_exprs(naming, variables)

        # A clean start: nothing under-replicated before the fault.
        prom.wait(lambda: prom.scalar(fault_exprs[URP_TITLE]) == 0 and prom.scalar(fault_exprs[OFFLINE_TITLE]) == 0,
                  60, "no under-replicated or offline partitions before the fault")
        _wait_until_time(traffic.t0 + WARM_S[naming])
        t_pause = time.time()
        launcher.pause(victim)
        res.fault, res.fault_stable = _await_fault_values(prom, fault_exprs, victim_target=targets[victim],
                                                          deadline=t_pause + PAUSE_S)
        res.fault_metadata = metadata_counts(",".join(f"127.0.0.1:{launcher.broker_port(b)}"
                                                      for b in launcher.broker_ids if b != victim))
        _wait_until_time(t_pause + PAUSE_S)
        res.alerts = prom.active_alerts()
        launcher.resume(victim)
        t_resume = time.time()
        t_end = t_resume + POST_S
        try:
            wait_until(lambda: prom.scalar(fault_exprs[URP_TITLE]) == 0
                       and prom.scalar(fault_exprs[OFFLINE_TITLE]) == 0, max(1.0, t_end - time.time()), 1,
                       what="recovery")
            res.timeline["recovered_after_resume"] = time.time() - t_resume
        except AssertionError:
            res.timeline["recovered_after_resume"] = float("nan")
        _wait_until_time(t_end)
        # The evaluation points where every broker that runs was scraped: jmx_exporter sometimes takes longer than
        # the scrape timeout on this loaded machine (seen: a controller's scrape failed, sum(ActiveControllerCount)
        # was 0 for one point and the `!= 1` alert's expression had data on Kafka). A query's data at such a
        # point says nothing about its metrics, so it is not counted (the number of such points is reported).
        healthy = _healthy_points(prom.query_range("up", t_prom, t_end), targets[victim], t_pause,
                                  t_resume + 2 * SCRAPE_S)
        res.timeline["points_with_a_failed_scrape"] = len(_grid(t_prom, t_end)) - len(healthy)
        # Strimzi's per-topic panel is an irate: averaged over the steady stretch before the fault. Confluent's is
        # a rate[5m]: read at the end, when its window holds the whole run (AFTER_THE_FAULT: why not irate then).
        res.rates = {t: (_mean_over(prom, e, traffic.t0 + SETTLE_S, t_pause, healthy) if "irate(" in e
                         else prom.scalar(e, t_end)) for t, e in rate_exprs.items()}
        res.rates_after = {t: _mean_over(prom, e, t_resume + SCRAPE_S, t_end, healthy)
                           for t, e in rate_exprs.items()}

        for rs in resolved.values():
            for r in rs:
                try:
                    out = prom.query_range(r.expr, t_prom, t_end)
                    r.series = sum(1 for s in out if any(round(float(t), 3) in healthy for t, _ in s["values"]))
                    r.has_data = r.series > 0
                except PromQLError as e:
                    r.error = str(e)
        res.queries = [r for rs in resolved.values() for r in rs]
        res.timeline.update(pause=t_pause - t_begin, resume=t_resume - t_begin, end=t_end - t_begin,
                            total=time.time() - t_begin)
        res.traffic = {"delivered": dict(traffic.delivered), "failed": dict(traffic.failed),
                       "consumed": traffic.consumed, "errors": list(traffic.errors)}
        return res
    finally:
        if traffic is not None:
            traffic.stop()
        if prom is not None:
            prom.stop()
        if launcher is not None:
            launcher.shutdown()


def _grid(start: float, end: float) -> list[float]:
    """The evaluation timestamps of a range query (start, start+step, ... <= end), as keys."""
    return [round(start + k * SCRAPE_S, 3) for k in range(int((end - start) // SCRAPE_S) + 1)]


def _healthy_points(up: list[dict], victim: str, paused_from: float, paused_to: float) -> set[float]:
    """Timestamps at which every target was up, the paused one excepted while paused (and just after)."""
    by_instance = {s["metric"]["instance"]: {round(float(t), 3): v for t, v in s["values"]} for s in up}
    points = set.intersection(*(set(v) for v in by_instance.values())) if by_instance else set()
    return {t for t in points if all(
        v[t] == "1" or (inst == victim and paused_from <= t <= paused_to) for inst, v in by_instance.items())}


def _mean_over(prom: Prometheus, expr: str, start: float, end: float, healthy: set[float]) -> float | None:
    """The panel's mean value at the healthy points in [start, end] (one series: the query is for one topic)."""
    origin = min(healthy)  # points on the grid of the run's range queries
    start = origin + max(0, -(-(start - origin) // SCRAPE_S)) * SCRAPE_S
    if start > end:
        return None
    vals = [float(v) for s in prom.query_range(expr, start, end) for t, v in s["values"]
            if round(float(t), 3) in healthy]
    return sum(vals) / len(vals) if vals else None


def _await_fault_values(prom: Prometheus, exprs: dict[str, str], victim_target: str,
                        deadline: float) -> tuple[dict[str, float | None], bool]:
    """Poll the fault panels until the paused broker is seen down, something is under-replicated and offline, and
    every value has stayed the same for 3 polls over at least two scrape intervals; (values, stable)."""
    since: float | None = None  # when the values last changed (while the fault shows)
    values: dict[str, float | None] = {}
    for _ in range(1000):
        if time.time() >= deadline:
            break
        now = {t: prom.scalar(e) for t, e in exprs.items()}
        down = any(s["value"][1] == "0" for s in prom.query(f'up{{instance="{victim_target}"}}'))
        if down and (now[URP_TITLE] or 0) > 0 and (now[OFFLINE_TITLE] or 0) > 0:
            if since is None or now != values:
                since = time.time()
            elif time.time() - since >= 2 * SCRAPE_S:
                return now, True
        else:
            since = None
        values = now
        threading.Event().wait(SCRAPE_S / 4)
    return values, False


# ---------------------------------------------------------------------------------------------- the tests

def out_of_scope_reason(expr: str) -> str | None:
    if expr.startswith("absent("):  # true exactly when the series are missing: data on both backends
        return None
    return next((reason for pat, reason in OUT_OF_SCOPE if re.search(pat, expr)), None)


def ours_only_reason(expr: str) -> str | None:
    return next((reason for pat, reason in OURS_ONLY if re.search(pat, expr)), None)


def coverage_table(naming: str, ours: RunResult, kafka: RunResult) -> str:
    rows = [("dashboard / rules", "queries", "data on Kafka", "data on ours", "Kafka only", "ours only")]
    by_source: dict[str, list[tuple[Resolved, Resolved]]] = {}
    k_by_key = {r.query.key: r for r in kafka.queries}
    for r in ours.queries:
        by_source.setdefault(r.query.source, []).append((r, k_by_key[r.query.key]))
    for source, pairs in by_source.items():
        rows.append((source, str(len(pairs)), str(sum(k.has_data for _, k in pairs)),
                     str(sum(o.has_data for o, _ in pairs)),
                     str(sum(k.has_data and not o.has_data for o, k in pairs)),
                     str(sum(o.has_data and not k.has_data for o, k in pairs))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"coverage, {naming} naming (queries with data over the run):"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def detail(naming: str, ours: RunResult, kafka: RunResult) -> str:
    k_by_key = {r.query.key: r for r in kafka.queries}
    lines = []
    for o in ours.queries:
        k = k_by_key[o.query.key]
        if o.has_data and k.has_data:
            continue
        tag = ("KAFKA ONLY" if k.has_data else "OURS ONLY" if o.has_data else "neither")
        reason = (KNOWN_GAPS.get((o.query.source, o.query.where)) or out_of_scope_reason(o.expr)
                  or (ours_only_reason(o.expr) if o.has_data else "")
                  or ("its condition never held in this run (its operand is judged on its own)"
                      if cq.operand(o.query.expr) and not (o.has_data or k.has_data) else ""))
        err = f" ERROR ours={o.error} kafka={k.error}" if (o.error or k.error) else ""
        lines.append(f"  [{tag}] {o.query.source} | {o.query.where} | {o.expr}{err}"
                     + (f"\n      -> {reason}" if reason else ""))
    return f"queries without data on both ({naming}):\n" + "\n".join(lines)


@pytest.fixture(scope="module", params=["strimzi", "confluent"])
def runs(request, tmp_path_factory) -> dict[str, RunResult]:
    apache_kafka_or_skip()
    naming = request.param
    base = tmp_path_factory.mktemp(f"community-{naming}")
    out = {}
    for impl in ("apache-kafka", "kafkascope"):
        out[impl] = run_backend(impl, naming, base / impl)
    ours, kafka = out["kafkascope"], out["apache-kafka"]
    report = "\n".join([
        coverage_table(naming, ours, kafka), detail(naming, ours, kafka),
        f"fault panels (broker paused): Kafka {kafka.fault} (stable={kafka.fault_stable}, metadata "
        f"{kafka.fault_metadata}) | ours {ours.fault} (stable={ours.fault_stable}, metadata {ours.fault_metadata})",
        f"active alerts at the end of the pause: Kafka {kafka.alerts} | ours {ours.alerts}",
        f"per-topic messages in (irate: mean before the fault; rate[5m]: at the end; producer {RATE}/s each): "
        f"Kafka {kafka.rates} | ours {ours.rates}",
        f"  the same after the resume (not compared: {AFTER_THE_FAULT}): Kafka {kafka.rates_after} | "
        f"ours {ours.rates_after}",
        f"timeline (s): Kafka {kafka.timeline} | ours {ours.timeline}",
        f"template variables: Kafka {kafka.variables} | ours {ours.variables}",
        f"traffic: Kafka {kafka.traffic} | ours {ours.traffic}",
    ])
    print("\n" + report)
    out_file = os.environ.get("KAFKASCOPE_COMMUNITY_REPORT")
    if out_file:
        with open(out_file, "a") as f:
            f.write(report + "\n\n")
            json.dump({impl: {"queries": [[r.query.source, r.query.where, r.expr, r.has_data, r.series, r.error]
                                          for r in res.queries]} for impl, res in out.items()}, f)
            f.write("\n\n")
    sys.stdout.flush()
    return out


def test_queries_with_data_on_kafka_have_data_on_ours(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    k_by_key = {r.query.key: r for r in kafka.queries}
    errors = [f"{r.query.source} | {r.query.where}: {r.error}" for r in ours.queries + kafka.queries if r.error]
    assert not errors, "queries Prometheus rejects:\n" + "\n".join(errors)
    gaps, closed = [], []
    for o in ours.queries:
        k = k_by_key[o.query.key]
        known = (o.query.source, o.query.where) in KNOWN_GAPS
        if k.has_data and not o.has_data and not known:
            gaps.append(f"{o.query.source} | {o.query.where} | {o.expr}")
        if known and o.has_data:
            closed.append(f"{o.query.source} | {o.query.where} (remove it from KNOWN_GAPS)")
    assert not gaps, "queries with data on Apache Kafka + jmx_exporter but none on ours:\n" + "\n".join(gaps)
    assert not closed, "known gaps that now have data on ours:\n" + "\n".join(closed)


def test_out_of_scope_queries_have_no_data_on_kafka_either(runs):
    kafka = runs["apache-kafka"]
    wrong = [f"{r.query.source} | {r.query.where} | {r.expr}" for r in kafka.queries
             if r.has_data and out_of_scope_reason(r.expr)]
    assert not wrong, "listed as out of scope but with data on Apache Kafka:\n" + "\n".join(wrong)


def test_queries_with_data_only_on_ours_are_explained(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    k_by_key = {r.query.key: r for r in kafka.queries}
    extra = [f"{o.query.source} | {o.query.where} | {o.expr}" for o in ours.queries
             if o.has_data and not k_by_key[o.query.key].has_data and not ours_only_reason(o.expr)]
    assert not extra, "queries with data on ours but none on Apache Kafka + jmx_exporter:\n" + "\n".join(extra)


def test_fault_driven_panels_and_alerts_agree(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    assert kafka.fault_stable, f"Apache Kafka's fault panels never settled: {kafka.fault}"
    assert ours.fault_stable, f"our fault panels never settled: {ours.fault} (Kafka: {kafka.fault})"
    assert (kafka.fault[URP_TITLE] or 0) > 0 and (kafka.fault[OFFLINE_TITLE] or 0) > 0
    assert ours.fault == kafka.fault, f"fault panels differ: ours {ours.fault} vs Kafka {kafka.fault}"
    for name, r in runs.items():  # and each says what its own brokers' Metadata says
        wrong = {t: (v, r.fault_metadata[METADATA_OF[t]]) for t, v in r.fault.items()
                 if t in METADATA_OF and v != r.fault_metadata[METADATA_OF[t]]}
        assert not wrong, f"{name}: panel vs Metadata {wrong}"
    assert set(ours.alerts) == set(kafka.alerts), f"active alerts: ours {ours.alerts} vs Kafka {kafka.alerts}"


def test_per_topic_message_rates_within_5_percent(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    problems = []
    for t in TOPICS:
        a, b = ours.rates.get(t), kafka.rates.get(t)
        if a is None or b is None or b <= 0 or abs(a - b) > 0.05 * max(a, b):
            problems.append(f"{t}: ours {a} vs Kafka {b}")
    assert not problems, "per-topic messages-in rates differ by more than 5%:\n" + "\n".join(problems)
