"""`kafkascope up --bootstrap-servers ...`: the monitoring half only, against a cluster you already run (ours or
Apache Kafka). xmonitor, the lag monitor, the node exporter, Prometheus (scraping those plus the broker metrics
endpoints named with --scrape, or found on our brokers), the rules and alerts, the SLO report and the page.

Nothing is created on the watched cluster but the probe's topic (only with --create-probe-topic) and the probe's
consumer groups; stopping stops only what this started. The planning here is pure; `inspect` is the only I/O
against the cluster, `WatchStack` the only process work.
"""

from __future__ import annotations

import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from dashboards.catalog import GRAFANA_DIR
from kafkascope.local import process as proc
from kafkascope.local.stack.local import XMONITOR_TOPIC, lag_config
from kafkascope.local.stack.procs import (  # noqa: F401 - first_interval_ms, report_has_data: watch mode's wait
    Processes,
    ScrapeJob,
    Step,
    first_interval_ms,
    live_report_command,
    report_has_data,
    write_yaml,
)

WATCH_PARTS = ("xmonitor", "lag", "node-exporter", "prometheus", "slo-report", "streamlit")
BROKER_JOB = "kafka-broker"
LISTENER_KEY = "prometheus.listener"  # our brokers' /metrics endpoint, a static broker config


class WatchError(Exception):
    """The watched cluster is not ready for the stack (e.g. the probe topic is missing): exit 1."""


@dataclass(frozen=True)
class WatchOptions:
    bootstrap: str
    client_props: dict[str, str] = field(default_factory=dict)
    cluster_name: str = "kafka"
    scrape: tuple[str, ...] = ()
    scrape_node: tuple[str, ...] = ()           # node exporters on the broker hosts (job node, with ours)
    create_probe_topic: bool = False
    probe_topic: str = XMONITOR_TOPIC
    report_every: str = "15m"
    parts: frozenset[str] = frozenset(WATCH_PARTS)


@dataclass(frozen=True)
class ClusterView:
    """What `up` needs to know of the watched cluster."""
    brokers: dict[int, str]                     # id -> host
    topic_exists: bool
    listeners: dict[int, str] = field(default_factory=dict)   # id -> prometheus.listener, where a broker has one


def scrape_job(urls: tuple[str, ...] | list[str], job: str = BROKER_JOB,
               flag: str = "--scrape") -> ScrapeJob | None:
    """The job for --scrape URLs (all must share scheme and path: one Prometheus job)."""
    if not urls:
        return None
    parsed = []
    for u in urls:
        p = urllib.parse.urlsplit(u if "://" in u else f"http://{u}")
        if p.scheme not in ("http", "https") or not p.hostname or p.port is None:
            raise ValueError(f"{flag} {u}: expected http[s]://HOST:PORT[/PATH]")
        parsed.append(p)
    kinds = {(p.scheme, p.path or "/metrics") for p in parsed}
    if len(kinds) > 1:
        raise ValueError(f"{flag} URLs differ in scheme or path ({sorted(kinds)}); one Prometheus job needs one")
    scheme, path = kinds.pop()
    return ScrapeJob(job, tuple(p.netloc for p in parsed), path, scheme)


def with_node_exporters(jobs: list[ScrapeJob], urls: tuple[str, ...]) -> list[ScrapeJob]:
    """`jobs` with the --scrape-node URLs added to job node (this host's node exporter, when it runs)."""
    given = scrape_job(urls, "node", "--scrape-node")
    if given is None:
        return jobs
    ours = next((j for j in jobs if j.job == "node"), None)
    if ours is None:
        return [*jobs, given]
    if (ours.scheme, ours.metrics_path) != (given.scheme, given.metrics_path):
        raise ValueError(f"--scrape-node URLs must be {ours.scheme}://HOST:PORT{ours.metrics_path}, as this host's")
    return [ScrapeJob("node", ours.targets + given.targets) if j is ours else j for j in jobs]


def discovered_targets(view: ClusterView) -> list[str]:
    """host:port of our brokers' /metrics from their prometheus.listener (a wildcard host is the broker's)."""
    out = []
    for bid, value in sorted(view.listeners.items()):
        host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit():
            continue
        if host in ("", "0.0.0.0", "::", "[::]"):
            host = view.brokers.get(bid, "127.0.0.1")
        out.append(f"{host}:{port}")
    return out


def broker_job(opts: WatchOptions, view: ClusterView) -> tuple[ScrapeJob | None, str]:
    """The broker metrics job and where its targets came from (for the progress lines)."""
    job = scrape_job(opts.scrape)
    if job is not None:
        return job, "--scrape"
    found = discovered_targets(view)
    if found:
        return ScrapeJob(BROKER_JOB, tuple(found)), f"the brokers' {LISTENER_KEY}"
    return None, (f"none: the brokers have no {LISTENER_KEY} (Apache Kafka: run jmx_exporter and name its URLs "
                  "with --scrape)")


def missing_topic_message(opts: WatchOptions) -> str:
    return (f"the probe topic '{opts.probe_topic}' does not exist on {opts.bootstrap}; kafkascope creates nothing "
            f"on your cluster without consent: rerun with --create-probe-topic (or create '{opts.probe_topic}' "
            "yourself)")


def xmonitor_config(opts: WatchOptions, view: ClusterView, port: int, sli_dir: Path) -> dict:
    """xmonitor.yaml: the probe manages its topic (create, add partitions, move replicas, elect) only with
    consent; otherwise it uses the topic as it is."""
    manage = opts.create_probe_topic
    return {"bootstrap.servers": opts.bootstrap, "cluster.name": opts.cluster_name, "topic": opts.probe_topic,
            "topic-management.topicCreationEnabled": manage,
            "topic-management.topicAddPartitionEnabled": manage,
            "topic-management.topicReassignPartitionAndElectLeaderEnabled": manage,
            "topic-management.replicationFactor": max(1, min(3, len(view.brokers))),
            "prometheus.listener": f"127.0.0.1:{port}", "sli.dir": str(sli_dir),
            "client.props": dict(opts.client_props)}


def plan(opts: WatchOptions, view: ClusterView, report_cmd: list[str] | None) -> list[str]:
    """What `up` would create and start, one line each (--dry-run prints these)."""
    n = len(view.brokers)
    group = f"xmonitor-{opts.cluster_name}-{opts.probe_topic}"
    lines = [f"watch {opts.bootstrap} ({_brokers(n)}) as cluster '{opts.cluster_name}'"
             + (f", client properties: {', '.join(sorted(opts.client_props))}" if opts.client_props else "")]
    if view.topic_exists:
        lines.append(f"on the cluster: use the existing probe topic '{opts.probe_topic}'")
    elif opts.create_probe_topic:
        lines.append(f"on the cluster: create the probe topic '{opts.probe_topic}' ({n} partitions, replication "
                     f"factor {max(1, min(3, n))})")
    else:
        lines.append(f"on the cluster: nothing can start: {missing_topic_message(opts)}")
    if "xmonitor" in opts.parts:
        lines.append(f"on the cluster: consumer groups '{group}' and '{group}-offset-commit' (the probe's)")
        lines.append(f"start: xmonitor probing '{opts.probe_topic}'")
    if "lag" in opts.parts:
        lines.append("start: lag monitor (reads __consumer_offsets, commits nothing)")
    if "node-exporter" in opts.parts:
        lines.append("start: node exporter (this host)")
    if opts.scrape_node:
        lines.append(f"scrape as job node: {', '.join(opts.scrape_node)}")
    if "prometheus" in opts.parts:
        job, source = broker_job(opts, view)
        where = f"{', '.join(job.targets)} (from {source})" if job else source
        lines.append(f"start: Prometheus with the kafkascope rules and alerts; broker metrics: {where}")
    if "slo-report" in opts.parts:
        lines.append("start: " + (" ".join(report_cmd[2:]) if report_cmd else
                                  "no scheduled SLO report (needs `kafkascope slo report --every`)"))
    if "streamlit" in opts.parts:
        lines.append("start: Streamlit SLO page (once a report exists)")
    return lines


def inspect(opts: WatchOptions, timeout_s: float = 10.0) -> ClusterView:
    """Brokers, whether the probe topic exists, and our brokers' prometheus.listener (Apache Kafka has none)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    # log_level 3: librdkafka's own notices (e.g. BGQUEUE on close) are not the user's business here
    admin = AdminClient({"bootstrap.servers": opts.bootstrap, "log_level": 3, **opts.client_props})
    md = admin.list_topics(timeout=timeout_s)
    brokers = {b.id: b.host for b in md.brokers.values()}
    t = md.topics.get(opts.probe_topic)
    exists = t is not None and t.error is None
    listeners = {}
    resources = [ConfigResource(ResourceType.BROKER, str(b)) for b in sorted(brokers)]
    for res, fut in admin.describe_configs(resources, request_timeout=timeout_s).items():
        try:
            entry = fut.result(timeout_s).get(LISTENER_KEY)
        except (KafkaException, TimeoutError):  # no DescribeConfigs permission: nothing found, not fatal
            continue
        if entry is not None and entry.value:
            listeners[int(res.name)] = entry.value
    return ClusterView(brokers, exists, listeners)


def report_command(opts: WatchOptions, sli_dir: Path, out: Path, lag_dir: Path | None = None) -> list[str]:
    """The scheduled live report on the probe's SLI files, every --report-every."""
    return live_report_command(opts.report_every, sli_dir, out, lag_dir)


def _brokers(n: int) -> str:
    return f"{n} broker" + ("" if n == 1 else "s")


class WatchStack(Processes):
    """The monitoring half of the stack, for a cluster that runs without us."""

    def __init__(self, data_dir: Path | str, opts: WatchOptions, scrape_interval: str = "5s",
                 view: ClusterView | None = None) -> None:
        super().__init__(data_dir, scrape_interval)
        self.opts = opts
        self.view = view   # the cluster as the caller already inspected it (None: inspected at start)
        self._broker_job: ScrapeJob | None = None
        self.ready_s: float | None = None

    def scrape_jobs(self) -> list[ScrapeJob]:
        jobs = ([self._broker_job] if self._broker_job else []) + super().scrape_jobs()
        return with_node_exporters(jobs, self.opts.scrape_node)

    def _start(self, progress: Step, timeout_s: float) -> None:
        t0 = time.monotonic()

        def step(msg: str) -> None:
            progress(f"[{time.monotonic() - t0:5.1f}s] {msg}")

        opts = self.opts
        self.view = view = self.view or inspect(opts)
        step(f"watching {opts.bootstrap}: {_brokers(len(view.brokers))}")
        if not view.topic_exists and not opts.create_probe_topic:
            raise WatchError(missing_topic_message(opts))
        self._broker_job, source = broker_job(opts, view)
        step(f"broker metrics: {', '.join(self._broker_job.targets)} (from {source})" if self._broker_job
             else f"broker metrics: {source}")
        py = sys.executable
        if "xmonitor" in opts.parts:
            self._start_xmonitor(step, timeout_s)
        if "lag" in opts.parts:
            port = self.ports["lag"] = proc.free_port()
            path = self.data_dir / "lag.yaml"
            write_yaml(path, lag_config(opts.cluster_name, self.data_dir))
            cmd = [py, "-m", "kafkascope", "lag", "--bootstrap-servers", opts.bootstrap, "--config", str(path),
                   "--http-port", str(port)]
            if opts.client_props:
                cmd += ["--command-config", str(self._client_properties())]
            self._spawn("lag", cmd, port, f"http://127.0.0.1:{port}/v3/kafka", timeout_s)
            step(f"lag monitor (Burrow API on :{port})")
        if "node-exporter" in opts.parts:
            self._start_node_exporter(step, timeout_s, {})
        if "prometheus" in opts.parts:
            self._start_prometheus(step, timeout_s)
        self._start_report(step, timeout_s)
        self.ready_s = time.monotonic() - t0
        step("ready")

    def _start_xmonitor(self, step: Step, timeout_s: float) -> None:
        port = self.ports["xmonitor"] = proc.free_port()
        path = self.data_dir / "xmonitor.yaml"
        write_yaml(path, xmonitor_config(self.opts, self.view, port, self.data_dir / "sli"))
        self._spawn("xmonitor", [sys.executable, "-m", "xmonitor", "--config", str(path)], port,
                    f"http://127.0.0.1:{port}/metrics", timeout_s)
        step(f"xmonitor probing '{self.opts.probe_topic}' (metrics on :{port})")

    def _client_properties(self) -> Path:
        """The --command-config properties, re-written for the children that read a properties file."""
        path = self.data_dir / "client.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.opts.client_props.items()))
        path.chmod(0o600)  # may hold sasl.password
        return path

    def _start_report(self, step: Step, timeout_s: float) -> None:
        if "slo-report" in self.opts.parts:
            lag = self.data_dir / "lag-history" if "lag" in self.opts.parts else None
            self._start_live_report(step, timeout_s, self.opts.report_every, lag, "streamlit" in self.opts.parts)

    def urls(self) -> list[tuple[str, str]]:
        rows = [("watched Kafka", self.opts.bootstrap)]
        if self._broker_job:
            rows += [("broker metrics", f"{self._broker_job.scheme}://{t}{self._broker_job.metrics_path}")
                     for t in self._broker_job.targets]
        rows += self.child_urls()
        rows.append(("Grafana dashboards (import)", str(GRAFANA_DIR)))
        rows.append(("data dir", str(self.data_dir)))
        return rows

