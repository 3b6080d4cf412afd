"""A real Prometheus for the interop tests, and the community stacks' scrape jobs over local targets.

* ``Prometheus``: the Debian `prometheus` binary on a free 127.0.0.1 port with one scrape job and the given rule
  groups, queried through its HTTP API (instant and range queries, label values, active alerts).
* ``strimzi_job`` / ``confluent_job``: Strimzi's PodMonitor (kafka-resources-metrics.yaml) relabelings over static
  targets that carry the Kubernetes meta labels of pods of cluster ``my-cluster`` in namespace ``myproject``, and
  jmx-monitoring-stacks' ``kafka-broker`` job (``env="dev"``), as tests/interop/community_queries.py reads them.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from common.polling import wait_until
from kafkascope.local import process as proc
from tests.interop import community_queries as cq

# jmx_exporter answers a scrape of Kafka 3.9 (about 4,400 series a broker under Strimzi's rules) in 1-4 s on this
# 2-core machine while three JVMs warm up, and in 4-10 s under Confluent's rules when other work loads the machine
# (load average 10: most 10 s scrapes timed out), so 15 s scrapes with a 15 s timeout.
SCRAPE_S = 15
NAMESPACE, CLUSTER = "myproject", "my-cluster"


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
                                 f"(timeout {self.scrape_s} s), load average {os.getloadavg()}") from None

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


