"""`kafkascope up --bootstrap-servers`: the monitoring half against a cluster started separately (ours here, Apache
Kafka in tests/interop/test_up_watch.py). The probe topic only with --create-probe-topic, --dry-run creates
nothing, Prometheus scrapes the --scrape URLs, stopping `up` leaves the watched cluster running."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from kafkascope.local import process as proc
from kafkascope.local.cluster import Cluster, wait_for
from kafkascope.local.stack import watch
from kafkascope.local.stack.procs import ScrapeJob, prometheus_config, prometheus_query

REPO = Path(__file__).resolve().parents[2]
TOPIC = "xinfra-monitor-topic"
READY = "Ctrl-C stops everything"


# ---------------------------------------------------------------------- pure planning


def test_scrape_urls_become_one_broker_job():
    job = watch.scrape_job(["http://10.0.0.1:7071/metrics", "10.0.0.2:7071"])
    assert job == ScrapeJob("kafka-broker", ("10.0.0.1:7071", "10.0.0.2:7071"))
    job = watch.scrape_job(["https://h:9999/jmx"])
    assert (job.scheme, job.metrics_path, job.targets) == ("https", "/jmx", ("h:9999",))
    for bad in (["ftp://h:1/metrics"], ["http://h/metrics"], ["http://a:1/x", "http://b:1/y"]):
        with pytest.raises(ValueError):
            watch.scrape_job(bad)
    assert watch.scrape_job([]) is None


def test_our_brokers_metrics_found_from_their_listener_config():
    view = watch.ClusterView({1: "10.0.0.1", 2: "10.0.0.2", 3: "10.0.0.3"}, True,
                             {1: "127.0.0.1:9404", 2: "0.0.0.0:9405", 3: "garbage"})
    assert watch.discovered_targets(view) == ["127.0.0.1:9404", "10.0.0.2:9405"]
    opts = watch.WatchOptions("b:9092")
    job, source = watch.broker_job(opts, view)
    assert job.targets == ("127.0.0.1:9404", "10.0.0.2:9405") and "prometheus.listener" in source
    job, source = watch.broker_job(watch.WatchOptions("b:9092", scrape=("http://j:7071/metrics",)), view)
    assert job.targets == ("j:7071",) and source == "--scrape"   # named URLs win
    job, source = watch.broker_job(opts, watch.ClusterView({1: "h"}, True))
    assert job is None and "--scrape" in source                    # Apache Kafka: say how


def test_probe_manages_its_topic_only_with_consent():
    view = watch.ClusterView({1: "h", 2: "h"}, False)
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    cfg = watch.xmonitor_config(watch.WatchOptions("b:1", client_props=props), view, 9, Path("/s"))
    assert cfg["client.props"] == props and cfg["topic-management.replicationFactor"] == 2
    assert not any(v for k, v in cfg.items() if k.startswith("topic-management.topic"))
    cfg = watch.xmonitor_config(watch.WatchOptions("b:1", create_probe_topic=True), view, 9, Path("/s"))
    assert all(v for k, v in cfg.items() if k.startswith("topic-management.topic"))


def test_plan_names_the_topic_and_the_flag():
    view = watch.ClusterView({1: "h"}, False)
    text = "\n".join(watch.plan(watch.WatchOptions("b:1", probe_topic="p"), view, None))
    assert "'p' does not exist" in text and "--create-probe-topic" in text
    text = "\n".join(watch.plan(watch.WatchOptions("b:1", probe_topic="p", create_probe_topic=True), view, None))
    assert "create the probe topic 'p' (1 partitions, replication factor 1)" in text
    assert "xmonitor-kafka-p" in text and "no scheduled SLO report" in text


def test_prometheus_config_keeps_path_and_scheme():
    import yaml

    cfg = yaml.safe_load(prometheus_config([ScrapeJob("kafka-broker", ("h:1",), "/jmx", "https"),
                                            ScrapeJob("xmonitor", ("127.0.0.1:2",))], ["a.yml"], "5s"))
    broker, xm = cfg["scrape_configs"]
    assert (broker["metrics_path"], broker["scheme"], broker["static_configs"]) == ("/jmx", "https",
                                                                                     [{"targets": ["h:1"]}])
    assert "metrics_path" not in xm and cfg["rule_files"] == ["a.yml"]


def test_flags_of_watching_need_bootstrap_servers_and_make_sense():
    r = run_up(["--create-probe-topic"])
    assert r.returncode == 2 and "needs --bootstrap-servers" in r.stderr
    # refused before the (unreachable) cluster is asked anything
    for args, said in ((["--no", "workload"], "--no workload: not a part"),
                       (["--scrape", "ftp://h:1/m"], "expected http[s]://HOST:PORT"),
                       (["--scrape-node", "http://h/metrics"], "--scrape-node http://h/metrics"),
                       (["--report-every", "soon"], "soon")):
        r = run_up(["--bootstrap-servers", "127.0.0.1:1", *args], timeout=30)
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)


def test_node_exporters_on_broker_hosts_join_this_hosts():
    here = ScrapeJob("node", ("127.0.0.1:9100",))
    jobs = watch.with_node_exporters([ScrapeJob("kafka-broker", ("b:1",)), here], ("http://b1:9100/metrics",))
    assert jobs[1] == ScrapeJob("node", ("127.0.0.1:9100", "b1:9100")) and jobs[0].targets == ("b:1",)
    assert watch.with_node_exporters([], ("b1:9100",)) == [ScrapeJob("node", ("b1:9100",))]
    assert watch.with_node_exporters([here], ()) == [here]
    with pytest.raises(ValueError, match="as this host's"):
        watch.with_node_exporters([here], ("https://b1:9100/metrics",))


def test_first_report_waits_for_a_whole_probe_interval(tmp_path):
    from slo import live

    day = tmp_path / "date=2026-11-26"
    day.mkdir()
    assert watch.first_interval_ms(tmp_path) is None
    for name in ("theirs-1764170000000-ab12cd34.parquet", "theirs-1764169990000-ffffffff.parquet", "junk.parquet"):
        (day / name).write_bytes(b"")
    first = watch.first_interval_ms(tmp_path)
    assert first == 1764169990000
    assert not watch.report_has_data(None, first + 3_600_000)
    now = first + 10_000 + live.LIVE_GRACE_MS
    assert not watch.report_has_data(first, now - 1)             # the live window ends before the interval does
    assert watch.report_has_data(first, now + 60_000)            # (window ends on a whole minute)


# ---------------------------------------------------------------------- helpers (also used by tests/interop)


class StubExporter:
    """A stand-in for a jmx_exporter endpoint: serves one gauge on PATH, counts the scrapes."""

    def __init__(self, path: str = "/custom-metrics") -> None:
        stub = self
        self.path, self.scrapes = path, 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                ok = self.path == stub.path
                stub.scrapes += ok
                body = b"stub_exporter_up 1\n" if ok else b""
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_up(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkascope", "up", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def groups(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    res = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_groups(request_timeout=10).result(15)
    return {g.group_id for g in res.valid}


def assert_nothing_created_without_consent(bootstrap: str, data: Path) -> None:
    before_topics, before_groups = topics(bootstrap), groups(bootstrap)
    assert TOPIC not in before_topics
    r = run_up(["--bootstrap-servers", bootstrap, "--data-dir", str(data)])
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"'{TOPIC}' does not exist" in r.stderr and "--create-probe-topic" in r.stderr, r.stderr
    r = run_up(["--bootstrap-servers", bootstrap, "--dry-run", "--create-probe-topic"])
    assert r.returncode == 0 and "nothing created" in r.stdout and f"create the probe topic '{TOPIC}'" in r.stdout
    assert topics(bootstrap) == before_topics and groups(bootstrap) == before_groups
    assert not list((data / "pids").glob("*.pid")) if (data / "pids").exists() else True


def up_watching(bootstrap: str, data: Path, scrape_url: str, scraped: str | tuple[str, ...], command_config: Path,
                extra: tuple[str, ...] = (), topic: str = TOPIC) -> tuple[float, str]:
    """`up --bootstrap-servers --create-probe-topic --scrape` until its Prometheus answers `scraped` (queries on
    what the --scrape URL serves, ...) and scrapes xmonitor and the lag monitor; then Ctrl-C. Returns (seconds to
    ready, output)."""
    cmd = [sys.executable, "-m", "kafkascope", "up", "--bootstrap-servers", bootstrap, "--data-dir", str(data),
           "--create-probe-topic", "--scrape", scrape_url, "--command-config", str(command_config),
           "--cluster-name", "theirs", *extra]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    try:
        for line in p.stdout:
            lines.append(line)
            if READY in line:
                break
        ready_s = time.monotonic() - t0
        out = "".join(lines)
        assert "kafkascope is up" in out, out
        prom = next(ln.split()[-1] for ln in lines if ln.strip().startswith("Prometheus ") and "http" in ln)
        pids = [tuple(map(int, f.read_text().split())) for f in (data / "pids").glob("*.pid")]
        wait_for(lambda: prometheus_query(prom, 'up{job="kafka-broker"} == 1'), timeout=30,
                 what="Prometheus scraped the --scrape URL")
        for q in (scraped,) if isinstance(scraped, str) else scraped:
            wait_for(lambda q=q: prometheus_query(prom, q), timeout=30, what=q)
        wait_for(lambda: prometheus_query(prom, f'kafka_topic_partitions{{topic="{topic}"}} > 0'), timeout=40,
                 what="probe topic created (seen by the lag monitor)")
        wait_for(lambda: prometheus_query(prom, 'up{job="xmonitor"} == 1'), timeout=30, what="xmonitor scraped")
        wait_for(lambda: prometheus_query(prom, 'up{job="lag-monitor"} == 1'), timeout=30, what="lag scraped")
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[0]
        assert p.returncode == 0 and "stopped" in rest, rest
        wait_for(lambda: not [pid for pid, st in pids if proc.alive(pid, st)], timeout=10,
                 what="no process of the stack left")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    return ready_s, out


# ---------------------------------------------------------------------- against a cluster of ours


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    """One broker of ours with /metrics, started apart from `up` (stands for the user's cluster)."""
    mport = proc.free_port()
    c = Cluster(tmp_path_factory.mktemp("theirs"), brokers=1, prometheus_listener=f"127.0.0.1:{mport}",
                offsets_topic_replication_factor=1).start()
    c.metrics_port = mport
    yield c
    c.shutdown()


@pytest.mark.timeout(120)
def test_missing_probe_topic_is_an_error_and_dry_run_creates_nothing(theirs, tmp_path):
    assert_nothing_created_without_consent(theirs.bootstrap, tmp_path / "state")
    r = run_up(["--bootstrap-servers", theirs.bootstrap, "--dry-run"])
    assert r.returncode == 1 and "nothing created" in r.stdout
    # no --scrape: our broker's prometheus.listener is found through DescribeConfigs
    assert f"127.0.0.1:{theirs.metrics_port} (from the brokers' prometheus.listener)" in r.stdout, r.stdout


@pytest.mark.timeout(240)
def test_up_watches_the_cluster_and_leaves_it_running(theirs, tmp_path):
    exporter, node = StubExporter(), StubExporter("/metrics")   # a jmx_exporter, a broker host's node exporter
    props = tmp_path / "client.properties"
    props.write_text("# Kafka's tools format\nclient.id=kafkascope-watch-test\nsecurity.protocol=PLAINTEXT\n")
    try:
        ready_s, out = up_watching(theirs.bootstrap, tmp_path / "state", exporter.url,
                                   ('stub_exporter_up{job="kafka-broker"}', 'stub_exporter_up{job="node"}'), props,
                                   ("--no", "slo-report", "--no", "streamlit", "--scrape-node", node.url))
        assert exporter.scrapes > 0 and node.scrapes > 0
    finally:
        exporter.close()
        node.close()
    print(f"\nup --bootstrap-servers: all parts ready in {ready_s:.1f} s")
    assert "broker metrics" in out and exporter.url in out
    assert theirs.broker(0).state == "running" and TOPIC in topics(theirs.bootstrap)
    assert {f"xmonitor-theirs-{TOPIC}", f"xmonitor-theirs-{TOPIC}-offset-commit"} >= groups(theirs.bootstrap) - {""}


def test_lag_monitor_clients_get_the_command_config(tmp_path):
    from confluent_kafka import KafkaException

    from lagmonitor.collector import Collector, MetadataPoller
    from lagmonitor.config import read_config
    from lagmonitor.monitor import LagMonitor

    monitor = LagMonitor(read_config(None))
    bad = {"security.protocol": "NOT-A-PROTOCOL"}   # librdkafka refuses it when the client is built
    for make in (lambda: Collector("127.0.0.1:1", monitor, client_props=bad),
                 lambda: MetadataPoller("127.0.0.1:1", monitor, client_props=bad)):
        with pytest.raises(KafkaException, match="security.protocol"):
            make()
    props = tmp_path / "c.properties"
    props.write_text("security.protocol=NOT-A-PROTOCOL\n")
    r = subprocess.run([sys.executable, "-m", "kafkascope", "lag", "--bootstrap-servers", "127.0.0.1:1",
                        "--command-config", str(props), "--http-port", "0"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "security.protocol" in r.stderr


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_up_watching_publishes_live_reports_and_serves_the_page(theirs, tmp_path):
    """Every part, the scheduled report included: the figure is the time to the first live report."""
    from slo import live

    data = tmp_path / "state"
    cmd = [sys.executable, "-m", "kafkascope", "up", "--bootstrap-servers", theirs.bootstrap, "--data-dir", str(data),
           "--create-probe-topic", "--cluster-name", "theirs", "--report-every", "1m"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    try:
        for line in p.stdout:
            lines.append(line)
            if READY in line:
                break
        ready_s = time.monotonic() - t0
        page = next(ln.split()[-1] for ln in lines if "Streamlit SLO page" in ln and ln.startswith("  "))
        assert urllib.request.urlopen(page, timeout=10).status == 200
        report = wait_for(lambda: live.latest(data / "slo-reports"), timeout=300, interval=1,
                          what="first live report")
        report_s = time.monotonic() - t0
        body = json.loads((report / "report.json").read_text())
        assert body["source"]["synthetic"] is False and body["slos"], body["source"]
        print(f"\nup --bootstrap-servers: ready in {ready_s:.1f} s, first live report after {report_s:.1f} s")
        pids = [tuple(map(int, f.read_text().split())) for f in (data / "pids").glob("*.pid")]
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[0]
        assert p.returncode == 0, "".join(lines) + rest
        wait_for(lambda: not [pid for pid, st in pids if proc.alive(pid, st)], timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert theirs.broker(0).state == "running"
