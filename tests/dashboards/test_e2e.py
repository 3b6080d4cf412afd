"""End to end: ZooKeeper + 3 brokers (with /metrics), the ZooKeeper exporter, xmonitor, the lag monitor with a
sample group and a real Prometheus with the generated scrape config and rules (kafkascope.up.Stack).

* every metric name used by the dashboards and rules is one our components export (live scrape; counters that
  only appear with their first labelled event are taken from xmonitor's own registry);
* every dashboard query returns data through Prometheus's HTTP API (grafana.QUERIES_NEEDING_FAULT only under a
  fault; the under-replication fault is produced here);
* pausing a follower makes KafkaUnderReplicatedPartitions go pending.
"""

from __future__ import annotations

import re
import shutil
import time
import urllib.request

import pytest

from dashboards import build, grafana
from kafkascope.up import Stack, prometheus_query

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian package `prometheus` missing")

NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b")
PROMQL_WORDS = {"sum", "by", "rate", "max", "min", "avg", "or", "and", "on", "vector", "bool", "histogram_quantile",
                "clamp_min", "increase", "deriv", "absent", "count", "group_left", "avg_over_time", "without", "e9",
                "unless", "ignoring", "offset", "humanize"}


def not_exercised() -> set[str]:
    """Fault-only queries this test does not cause: data loss, failed probe sends and request errors other than
    NONE (they need a leader to fail under load; their alerts are unit-tested with promtool)."""
    grafana.dashboards()
    return {e for e in grafana.QUERIES_NEEDING_FAULT if "xmonitor_" in e or "errors_total" in e}


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


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("stack"), parts=["xmonitor", "lag", "workload", "prometheus", "zk-exporter"],
              scrape_interval="1s")
    s.start(progress=print)
    yield s
    s.stop()


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"{what} not true after {timeout}s (last: {last})")


def test_stack_dashboards_rules_and_fault(stack):
    prom = stack.children["prometheus"].url
    # 2. every dashboard query has data (the 5m windows need a few scrapes; rates need two)
    _wait(lambda: all(r["value"][1] == "1" for r in prometheus_query(prom, "up")) and
          len(prometheus_query(prom, "up")) == 6, 60, "all targets up")
    _wait(lambda: prometheus_query(prom, 'burrow_kafka_consumer_status{consumer_group="demo-consumer"}'), 60,
          "the sample group in the lag monitor")
    _wait(lambda: prometheus_query(prom, "burrow_kafka_topic_partition_status"), 90,
          "a complete Burrow window (partition statuses)")
    # 1. names: live scrapes of every broker, xmonitor, the lag monitor and the zk-exporter
    exported = set()
    for targets in stack.targets().values():
        for t in targets:
            exported |= scrape_names(f"http://{t}/metrics")
    exported |= xmonitor_defined_names()
    missing = {n: sorted(w)[:2] for n, w in used_names().items() if n not in exported}
    assert not missing, f"metric names used but not exported: {missing}"

    healthy = [(d, t, e) for d, t, e in grafana.queries() if e not in grafana.QUERIES_NEEDING_FAULT]

    def empty() -> list:
        return [(d, t, e) for d, t, e in healthy if not prometheus_query(prom, e)]

    deadline = time.monotonic() + 60
    while (left := empty()) and time.monotonic() < deadline:
        time.sleep(2)
    assert not left, "queries without data:\n" + "\n".join(f"{d} / {t}: {e}" for d, t, e in left)

    # 3. fault: pause a follower of the sample topic; under-replication shows and the alert goes pending
    leader_of = prometheus_query(prom, 'kafka_cluster_partition_underreplicated{topic="demo-orders"}')
    leaders = {r["metric"]["instance"] for r in leader_of}
    victim = next(b for b, t in zip(stack.launcher.broker_ids, stack.launcher.broker_metrics_targets(), strict=True)
                  if t not in leaders) if len(leaders) < 3 else stack.launcher.broker_ids[-1]
    stack.launcher.pause(victim)
    try:
        _wait(lambda: [a for a in prometheus_query(prom, 'ALERTS{alertname="KafkaUnderReplicatedPartitions"}')
                       if a["metric"]["alertstate"] in ("pending", "firing")], 60, "KafkaUnderReplicatedPartitions pending")
        skip = not_exercised()
        fault_queries = [e for e in grafana.QUERIES_NEEDING_FAULT if e not in skip]
        assert fault_queries
        _wait(lambda: all(prometheus_query(prom, e) for e in fault_queries), 30, f"fault queries {fault_queries}")
    finally:
        stack.launcher.resume(victim)
