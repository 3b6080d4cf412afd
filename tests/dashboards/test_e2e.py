"""End to end: ZooKeeper + 3 brokers (with /metrics), the ZooKeeper exporter, xmonitor, the lag monitor with a
sample group, the node exporter and a real Prometheus with the generated scrape config and rules
(kafkascope.local.stack.local.Stack).

* every metric name used by the dashboards and rules is one our components export (live scrape; counters that
  only appear with their first labelled event are taken from xmonitor's own registry);
* every dashboard query returns data through Prometheus's HTTP API;
* every fault-only query (grafana.QUERIES_NEEDING_FAULT) returns non-zero data once its fault is caused for real:
  a paused broker (under-replication; probe sends to the monitor partition it leads time out), acks=all produce to
  a partition below min.insync.replicas (NOT_ENOUGH_REPLICAS request errors) and a crafted sequence gap in the
  monitor topic (records lost); KafkaUnderReplicatedPartitions and KafkaUnderMinIsrPartitions go pending and
  XMonitorRecordsLost fires.
"""

from __future__ import annotations

import re
import shutil
import time
import urllib.request

import pytest
from confluent_kafka import KafkaError, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from dashboards import build, grafana
from dashboards.metrics import KRAFT_ONLY
from kafkascope.local import node_exporter
from kafkascope.local.cluster import wait_for
from kafkascope.local.stack.local import XMONITOR_TOPIC, Stack
from kafkascope.local.stack.procs import prometheus_query
from xmonitor import payload

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None or node_exporter.binary() is None,
                                reason="Debian packages `prometheus` and `prometheus-node-exporter` needed")

NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b")
PROMQL_WORDS = {"sum", "by", "rate", "max", "min", "avg", "or", "and", "on", "vector", "bool", "histogram_quantile",
                "clamp_min", "increase", "deriv", "absent", "count", "group_left", "avg_over_time", "without", "e9",
                "unless", "ignoring", "offset", "humanize"}


def metric_names(expr: str) -> set[str]:
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for m in NAME.finditer(expr):
        word = m.group(1)
        after = expr[m.end():].lstrip()
        if word in PROMQL_WORDS or after.startswith("(") or word.isdigit():
            continue
        if re.fullmatch(r"\d+(\.\d+)?(e\d+)?", word):
            continue
        names.add(word)
    return names


def used_names() -> dict[str, set[str]]:
    """metric name → where it is used (recorded series are excluded)."""
    recorded = {r["record"] for g in build.recording_rules()["groups"] for r in g["rules"]}
    exprs = [(f"dashboard {d}: {t}", e) for d, t, e in grafana.queries()]
    exprs += [(f"rule {r.get('record') or r.get('alert')}", r["expr"])
              for f in (build.recording_rules(), build.alerting_rules()) for g in f["groups"] for r in g["rules"]]
    out: dict[str, set[str]] = {}
    for where, e in exprs:
        for n in metric_names(e) - recorded - {"up", "cluster", "le", "instance", "leader", "job", "slo"}:
            out.setdefault(n, set()).add(where)
    return out


def scrape_names(url: str) -> set[str]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def xmonitor_defined_names() -> set[str]:
    from xmonitor.config import MonitorConfig
    from xmonitor.metrics import Recorder

    rec = Recorder(MonitorConfig(bootstrap_servers="x"), "run")
    names = set()
    for fam in rec.registry.collect():
        if fam.type == "counter":
            names.add(fam.name + "_total")
        elif fam.type == "histogram":
            names.update(fam.name + s for s in ("_bucket", "_count", "_sum"))
        names.add(fam.name)
    return names


def test_metric_name_extraction():
    assert metric_names('sum by (instance) (rate(foo_total{a="b"}[5m])) / 1e9 > 0.5') == {"foo_total"}


MIN_ISR_TOPIC = "fault-min-isr"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # probe sends to a paused broker time out after 2.5 s (xmonitor's default: 20 s): twice before its ZooKeeper
    # session (6 s) expires, so the error counters increase after they appear and rate() sees it
    s = Stack(tmp_path_factory.mktemp("stack"), parts=["xmonitor", "lag", "workload", "node-exporter", "prometheus",
                                                    "zk-exporter"],
              scrape_interval="1s", xmonitor_config={"produce.request.timeout.ms": 2500})
    s.start(progress=print)
    yield s
    s.stop()


def _poll(pred, timeout: float, what: str):
    """Prometheus is polled once a second (its scrape and rule-evaluation interval here)."""
    return wait_for(pred, timeout, 1.0, what)


def _all_up(prom: str) -> None:
    _poll(lambda: (r := prometheus_query(prom, "up")) and len(r) == 7 and all(x["value"][1] == "1" for x in r), 60,
          "all targets up")


def _alert(prom: str, name: str, *states: str) -> list[dict]:
    return [a for a in prometheus_query(prom, f'ALERTS{{alertname="{name}"}}') if a["metric"]["alertstate"] in states]


def _nonzero(prom: str, expr: str, **labels: str) -> bool:
    """Some series of `expr` with these labels has a value other than 0."""
    return any(float(r["value"][1]) != 0 and all(r["metric"].get(k) == v for k, v in labels.items())
               for r in prometheus_query(prom, expr))


def _await_data(prom: str, queries: list[tuple[str, str, str]], timeout: float, nonzero: bool = False) -> None:
    """Poll until every (dashboard, panel, expr) returns data (with `nonzero`, a sample other than 0)."""
    def without_data() -> list[tuple[str, str, str]]:
        return [q for q in queries if not (_nonzero(prom, q[2]) if nonzero else prometheus_query(prom, q[2]))]

    deadline = time.monotonic() + timeout
    while (left := without_data()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, "queries without data:\n" + "\n".join(f"{d} / {t}: {e}" for d, t, e in left)


def test_stack_dashboards_rules_and_queries(stack):
    prom = stack.children["prometheus"].url
    # data first (the 5m windows need a few scrapes; rates need two)
    _all_up(prom)
    _poll(lambda: prometheus_query(prom, 'burrow_kafka_consumer_status{consumer_group="demo-consumer"}'), 60,
          "the sample group in the lag monitor")
    _poll(lambda: prometheus_query(prom, "burrow_kafka_topic_partition_status"), 90,
          "a complete Burrow window (partition statuses)")
    # names: live scrapes of every broker, xmonitor, the lag monitor, the zk-exporter and the node exporter
    exported = set()
    for targets in stack.targets().values():
        for t in targets:
            exported |= scrape_names(f"http://{t}/metrics")
    exported |= xmonitor_defined_names()
    # the stack is plaintext: the security series are checked on a secured broker (test_security_rules.py)
    secured_only = {build.M.auth_failed, build.M.auth_succeeded, build.M.cert_not_after}
    # the stack's cluster runs in ZooKeeper mode: KRaft names and the kraft board are checked on Kafka 4.1
    # (tests/interop/test_kraft_dashboards.py)
    missing = {n: sorted(w)[:2] for n, w in used_names().items() if n not in exported | secured_only | KRAFT_ONLY}
    assert not missing, f"metric names used but not exported: {missing}"
    # every query not listed as fault-only has data
    _await_data(prom, [q for q in grafana.queries() if q[2] not in grafana.QUERIES_NEEDING_FAULT and q[0] != "kraft"],
                60)


def _victims(admin: AdminClient) -> list[int]:
    """Brokers that lead a monitor partition and are not the controller (pausing one fails probe sends without
    moving the controller)."""
    controller = admin.describe_cluster().result(10).controller.id
    d = admin.describe_topics(TopicCollection([XMONITOR_TOPIC]))[XMONITOR_TOPIC].result(10)
    return sorted({p.leader.id for p in d.partitions if p.leader is not None} - {controller})


def _inject_gap(bootstrap: str, partition: int, indices: list[int]) -> None:
    """Crafted probe records of a foreign run on the monitor topic: missing indices are counted lost."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in indices:
        probe = payload.Probe(XMONITOR_TOPIC, "e2e-crafted", "crafted", partition, i, int(time.time() * 1_000_000))
        p.produce(XMONITOR_TOPIC, payload.encode(probe, 10), partition=partition)
    assert p.flush(10) == 0, "crafted probe records not delivered"


def _produce_error(p: Producer, topic: str) -> int:
    """One record to partition 0: the error code of its delivery report (0 for none)."""
    errors = []
    p.produce(topic, b"x", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    assert p.flush(15) == 0, "no delivery report"
    return errors[0].code() if errors[0] is not None else 0


def test_fault_queries_have_data_and_alerts_fire(stack):
    prom = stack.children["prometheus"].url
    faults = [q for q in grafana.queries() if q[2] in grafana.QUERIES_NEEDING_FAULT]
    assert faults
    request_errors = next(e for _, _, e in faults if build.M.errors in e)
    _all_up(prom)
    launcher = stack.launcher
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    victim = _poll(lambda: _victims(admin), 30, "a non-controller broker leading a monitor partition")[0]
    others = [b for b in launcher.broker_ids if b != victim]
    live = ",".join(f"127.0.0.1:{launcher.broker_port(b)}" for b in others)
    # a partition led by a live broker whose ISR drops below its min.insync.replicas when the victim stops
    admin.create_topics([NewTopic(MIN_ISR_TOPIC, num_partitions=1, replica_assignment=[[*others, victim]],
                                  config={"min.insync.replicas": "3"})])[MIN_ISR_TOPIC].result(30)
    producer = Producer({"bootstrap.servers": live, "acks": "all", "retries": 0, "message.timeout.ms": 10000})
    _poll(lambda: _produce_error(producer, MIN_ISR_TOPIC) == 0, 30, f"acks=all produce to {MIN_ISR_TOPIC}")
    # data loss: indices 2, 3, 4 of a crafted run never arrive
    _inject_gap(live, 0, [0, 1, 5])
    launcher.pause(victim)
    try:
        try:
            _poll(lambda: _alert(prom, "KafkaUnderMinIsrPartitions", "pending", "firing"), 60,
                  "KafkaUnderMinIsrPartitions pending")
        except AssertionError as e:   # say where it stopped: the ISR, the brokers' gauge, or the rule
            p0 = admin.list_topics(MIN_ISR_TOPIC, timeout=10).topics[MIN_ISR_TOPIC].partitions[0]
            gauge = prometheus_query(prom, "kafka_server_replicamanager_underminisrpartitioncount")
            raise AssertionError(f"{e}: victim {victim}, {MIN_ISR_TOPIC} leader {p0.leader} ISR {p0.isrs}; "
                                 f"gauge {[(g['metric'].get('instance'), g['value'][1]) for g in gauge]}") from None
        # rejected acks=all sends, one a second (the scrape interval): the error series appears, then increases
        _poll(lambda: _produce_error(producer, MIN_ISR_TOPIC) == KafkaError.NOT_ENOUGH_REPLICAS and
              _nonzero(prom, request_errors, request="Produce", error="NOT_ENOUGH_REPLICAS"), 30,
              "NOT_ENOUGH_REPLICAS answers in the request error panel")
        _poll(lambda: _alert(prom, "KafkaUnderReplicatedPartitions", "pending", "firing"), 60,
              "KafkaUnderReplicatedPartitions pending")
        _poll(lambda: _alert(prom, "XMonitorRecordsLost", "firing"), 30, "XMonitorRecordsLost firing")
        _await_data(prom, faults, 60, nonzero=True)
        assert float(prometheus_query(prom, 'sum(xmonitor_records_lost_total{partition="0"})')[0]["value"][1]) >= 3
    finally:
        launcher.resume(victim)
