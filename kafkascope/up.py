"""`kafkascope up`: the whole suite on 127.0.0.1 in one command (what `make demo` runs).

ZooKeeper + three brokers (each with /metrics), the ZooKeeper ensemble exporter, xmonitor, the lag monitor with a
sample consumer group, the Prometheus node exporter (host metrics; skipped when not installed), Prometheus with the
generated scrape config and rules, a 14-day SLO report and the Streamlit SLO page. Ctrl-C (or SIGTERM) stops
everything: every child runs in its own process group and is terminated by pid (and /proc start time), so nothing
is left behind.

    stack = Stack(data_dir, parts={"xmonitor", "lag", "prometheus"})
    stack.start(progress=print)
    stack.urls()        # {"prometheus": "http://127.0.0.1:P", ...}
    stack.stop()

The same Stack is what tests/dashboards/test_e2e.py runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kafkascope.cluster import process as proc
from kafkascope.cluster.launcher import ClusterLauncher, port_free

REPO_ROOT = Path(__file__).resolve().parents[1]
PARTS = ("xmonitor", "lag", "workload", "node-exporter", "prometheus", "zk-exporter", "slo-report", "streamlit")
SAMPLE_TOPIC = "demo-orders"
SAMPLE_GROUP = "demo-consumer"
XMONITOR_TOPIC = "xinfra-monitor-topic"
CLUSTER_NAME = "local"


class MetricsClusterLauncher(ClusterLauncher):
    """ClusterLauncher whose brokers serve /metrics (prometheus.listener) on their own free port."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metrics_ports: dict[int, int] = {}
        self.log_dirs: dict[int, list[str]] = {}  # broker id -> its log.dirs (for the node exporter's textfile)
        pfile = self.data_dir / "metrics-ports.json"
        with contextlib.suppress(OSError, ValueError):
            self.metrics_ports = {int(k): v for k, v in json.loads(pfile.read_text()).items()}

    def _broker_config(self, broker_id: int, port: int, rack, zk_connect) -> dict:  # noqa: ANN001
        props = super()._broker_config(broker_id, port, rack, zk_connect)
        mport = self.metrics_ports.get(broker_id)
        if not mport or not port_free(mport):
            mport = self.metrics_ports[broker_id] = proc.free_port()
        props["prometheus.listener"] = f"127.0.0.1:{mport}"
        self.log_dirs[broker_id] = str(props["log.dirs"]).split(",")
        return props

    def prepare(self) -> MetricsClusterLauncher:
        super().prepare()
        (self.data_dir / "metrics-ports.json").write_text(json.dumps(self.metrics_ports))
        return self

    def broker_metrics_targets(self) -> list[str]:
        return [f"127.0.0.1:{self.metrics_ports[b]}" for b in self.broker_ids]


@dataclass
class Child:
    name: str
    popen: subprocess.Popen
    started: int | None
    log: Path
    url: str | None = None


class Stack:
    """Everything `kafkascope up` runs. parts: which optional parts to run (PARTS); the cluster always runs."""

    def __init__(self, data_dir: Path | str, parts: Iterable[str] = PARTS, brokers: int = 3,
                 scrape_interval: str = "2s", broker_props: dict | None = None,
                 xmonitor_config: dict | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.parts = set(parts)
        unknown = self.parts - set(PARTS)
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)} (have {', '.join(PARTS)})")
        self.scrape_interval = scrape_interval
        props = {"min.insync.replicas": 2, "replica.lag.time.max.ms": 5000}
        props.update(broker_props or {})
        self.launcher = MetricsClusterLauncher(self.data_dir / "cluster", brokers=brokers, broker_props=props)
        if "zk-exporter" in self.parts:
            self.launcher.zk_exporter_port = 0
        self.xmonitor_config = xmonitor_config or {}
        self.children: dict[str, Child] = {}
        self._stopping = threading.Event()
        self._report_thread: threading.Thread | None = None
        self.ports: dict[str, int] = {}
        self._started = False

    # ------------------------------------------------------------------ helpers
    def _env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        return env

    def _spawn(self, name: str, cmd: list[str], port: int | None = None, url: str | None = None,
               timeout_s: float = 30.0) -> Child:
        log = self.data_dir / "logs" / f"{name}.log"
        p = proc.spawn(cmd, log, cwd=REPO_ROOT, env=self._env())
        child = self.children[name] = Child(name, p, proc.start_time(p.pid), log, url)
        (self.data_dir / "pids").mkdir(exist_ok=True)
        (self.data_dir / "pids" / f"{name}.pid").write_text(f"{p.pid} {child.started}\n")
        if port is not None:
            try:
                proc.wait_for_port(port, lambda: p.poll() is None, timeout_s)
            except (RuntimeError, TimeoutError) as e:
                raise RuntimeError(f"{name} did not start: {e}\n{proc.log_tail(log)}") from None
        return child

    @property
    def bootstrap(self) -> str:
        return self.launcher.bootstrap

    def targets(self) -> dict[str, list[str]]:
        """Prometheus job name → host:port targets (the scrape config's static_configs)."""
        t = {"kafka-broker": self.launcher.broker_metrics_targets()}
        if "xmonitor" in self.ports:
            t["xmonitor"] = [f"127.0.0.1:{self.ports['xmonitor']}"]
        if "lag" in self.ports:
            t["lag-monitor"] = [f"127.0.0.1:{self.ports['lag']}"]
        if self.launcher.zk_exporter_url:
            t["zookeeper"] = [self.launcher.zk_exporter_url.split("/")[2]]
        if "node-exporter" in self.ports:
            t["node"] = [f"127.0.0.1:{self.ports['node-exporter']}"]
        return t

    # ------------------------------------------------------------------ start
    def start(self, progress: Callable[[str], None] = lambda s: None, timeout_s: float = 60.0) -> Stack:
        self._started = True
        try:
            self._start(progress, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, progress: Callable[[str], None], timeout_s: float) -> None:
        t0 = time.monotonic()

        def step(msg: str) -> None:
            progress(f"[{time.monotonic() - t0:5.1f}s] {msg}")

        step("starting ZooKeeper and 3 brokers" + (" (+ ZooKeeper exporter)" if "zk-exporter" in self.parts else ""))
        self.launcher.start_all(timeout_s=timeout_s)
        step(f"cluster up: {self.bootstrap}")
        py = sys.executable
        if "xmonitor" in self.parts:
            port = self.ports["xmonitor"] = proc.free_port()
            cfg = {"bootstrap.servers": self.bootstrap, "cluster.name": CLUSTER_NAME, "topic": XMONITOR_TOPIC,
                   "topic-management.replicationFactor": min(3, len(self.launcher.broker_ids)),
                   "topic-management.partitionsToBrokersRatio": 1.0,
                   "prometheus.listener": f"127.0.0.1:{port}",
                   "sli.dir": str(self.data_dir / "sli"), "produce.record.delay.ms": 200,
                   **self.xmonitor_config}
            path = self.data_dir / "xmonitor.yaml"
            _write_yaml(path, cfg)
            self._spawn("xmonitor", [py, "-m", "xmonitor", "--config", str(path)], port,
                        f"http://127.0.0.1:{port}/metrics", timeout_s)
            step(f"xmonitor probing (metrics on :{port})")
        if "workload" in self.parts or "lag" in self.parts:
            self._spawn("workload", [py, "-m", "kafkascope.up", "--workload", self.bootstrap])
            step(f"sample consumer group {SAMPLE_GROUP} on topic {SAMPLE_TOPIC}")
        if "lag" in self.parts:
            port = self.ports["lag"] = proc.free_port()
            path = self.data_dir / "lag.yaml"
            _write_yaml(path, {"cluster": CLUSTER_NAME, "collector": {"offset-refresh": 2, "topic-refresh": 10,
                                                                        # xmonitor's offset-commit probe
                                                                        # re-commits one offset: Burrow STALL
                                                                        "group-denylist": "^xmonitor-.*-offset-commit$"},
                               "history-dir": str(self.data_dir / "lag-history")})
            self._spawn("lag", [py, "-m", "kafkascope", "lag", "--bootstrap-servers", self.bootstrap, "--config",
                                str(path), "--http-port", str(port)], port, f"http://127.0.0.1:{port}/v3/kafka",
                        timeout_s)
            step(f"lag monitor (Burrow API on :{port})")
        if "node-exporter" in self.parts:
            self._start_node_exporter(step, timeout_s)
        if "prometheus" in self.parts:
            self._start_prometheus(step, timeout_s)
        if "slo-report" in self.parts and _has_slo_commands():
            # Spark takes a while: the report (then the Streamlit page) comes up in the background.
            self._report_thread = threading.Thread(target=self._slo_report_then_page, args=(step, timeout_s),
                                                   name="slo-report", daemon=True)
            self._report_thread.start()
        elif "streamlit" in self.parts and (self.data_dir / "slo-report" / "report.json").exists():
            self._start_streamlit(step, timeout_s)
        step("ready")

    def _start_node_exporter(self, step: Callable[[str], None], timeout_s: float) -> None:
        from kafkascope import node_exporter as ne

        exe = ne.binary()
        if exe is None:
            step(f"node exporter not installed: skipped, no host metrics (apt-get install {ne.DEBIAN_PACKAGE})")
            return
        port = proc.free_port()
        textfile_dir = ne.write_textfile(self.data_dir / "node-exporter", self.launcher.log_dirs).parent
        self._spawn("node-exporter", ne.command(exe, port, textfile_dir), port, f"http://127.0.0.1:{port}/metrics",
                    timeout_s)
        self.ports["node-exporter"] = port
        step(f"node exporter (host metrics, log-dir filesystems) on :{port}")

    def _start_prometheus(self, step: Callable[[str], None], timeout_s: float) -> None:
        from dashboards import build

        exe = shutil.which("prometheus")
        if exe is None:
            step("prometheus not installed: skipped (apt-get install prometheus)")
            return
        port = self.ports["prometheus"] = proc.free_port()
        pdir = self.data_dir / "prometheus"
        pdir.mkdir(exist_ok=True)
        for f in build.RULE_FILES:
            shutil.copy(build.PROMETHEUS_DIR / f, pdir / f)
        cfg = pdir / "prometheus.yml"
        cfg.write_text(build.scrape_config(self.targets(), rule_files=list(build.RULE_FILES),
                                           scrape_interval=self.scrape_interval))
        self._spawn("prometheus", [exe, f"--config.file={cfg}", f"--storage.tsdb.path={pdir / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
                    port, f"http://127.0.0.1:{port}", timeout_s)
        proc.wait_until(lambda: _ready(f"http://127.0.0.1:{port}/-/ready"), timeout_s, 0.2, "Prometheus ready")
        step(f"Prometheus with the kafkascope rules on :{port}")

    def _slo_report_then_page(self, step: Callable[[str], None], timeout_s: float) -> None:
        try:
            ok = self._slo_report(step)
            if ok and "streamlit" in self.parts and not self._stopping.is_set():
                self._start_streamlit(step, timeout_s)
        except Exception as e:  # noqa: BLE001 - the rest of the stack keeps running
            if not self._stopping.is_set():
                step(f"SLO report/page failed: {e}")

    def _slo_report(self, step: Callable[[str], None]) -> bool:
        out = self.data_dir / "slo-report"
        if (out / "report.json").exists():
            step(f"SLO report kept from an earlier run: {out}")
            return True
        sli = self.data_dir / "slo-synthetic"
        step("generating 14 days of synthetic SLI intervals and the SLO report in the background (Spark)")
        py = sys.executable
        for name, cmd in (("slo-generate", [py, "-m", "kafkascope", "slo", "generate", "--out", str(sli), "--days",
                                            "14", "--clusters", "1", "--partitions", "3", "--interval", "1m",
                                            "--incident", "broker-down@9d+40m"]),
                          ("slo-report", [py, "-m", "kafkascope", "slo", "report", "--sli-dir", str(sli), "--out",
                                          str(out)])):
            if self._stopping.is_set():
                return False
            child = self._spawn(name, cmd)
            code = child.popen.wait()
            self.children.pop(name, None)
            if code != 0:
                if not self._stopping.is_set():
                    step(f"{name} failed (exit {code}; see {child.log})")
                return False
        step(f"SLO report: {out / 'report.html'}")
        return True

    def _start_streamlit(self, step: Callable[[str], None], timeout_s: float) -> None:
        port = self.ports["streamlit"] = proc.free_port()
        self._spawn("streamlit", [sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / "dashboards" /
                                                                                  "streamlit_app.py"),
                                  "--server.address", "127.0.0.1", "--server.port", str(port),
                                  "--server.headless", "true", "--browser.gatherUsageStats", "false", "--",
                                  "--report", str(self.data_dir / "slo-report")],
                    port, f"http://127.0.0.1:{port}", timeout_s)
        step(f"Streamlit SLO page: http://127.0.0.1:{port}")

    # ------------------------------------------------------------------ status / stop
    def urls(self) -> list[tuple[str, str]]:
        rows = [("Kafka bootstrap", self.bootstrap),
                ("ZooKeeper", self.launcher.zookeeper_host_port or "-")]
        for b, t in zip(self.launcher.broker_ids, self.launcher.broker_metrics_targets(), strict=True):
            rows.append((f"broker {b} /metrics", f"http://{t}/metrics"))
        if self.launcher.zk_exporter_url:
            rows.append(("ZooKeeper exporter", self.launcher.zk_exporter_url))
        labels = {"xmonitor": "xmonitor /metrics", "lag": "lag monitor (Burrow API)",
                  "node-exporter": "node exporter /metrics", "prometheus": "Prometheus",
                  "streamlit": "Streamlit SLO page"}
        for name, label in labels.items():
            c = self.children.get(name)
            if c is not None and c.url:
                rows.append((label, c.url))
        if "prometheus" in self.children:
            rows.append(("Prometheus alerts", self.children["prometheus"].url + "/alerts"))
        report = self.data_dir / "slo-report" / "report.html"
        if report.exists():
            rows.append(("SLO report", f"file://{report}"))
        rows.append(("Grafana dashboards (import)", str(REPO_ROOT / "dashboards" / "grafana")))
        rows.append(("data dir", str(self.data_dir)))
        return rows

    def format_urls(self) -> str:
        rows = self.urls()
        w = max(len(k) for k, _ in rows)
        return "\n".join(f"  {k.ljust(w)}  {v}" for k, v in rows)

    def dead_children(self) -> list[str]:
        return [n for n, c in list(self.children.items())
                if c.popen.poll() is not None and not n.startswith("slo-")]

    def stop(self) -> None:
        self._stopping.set()
        for name in reversed(list(self.children)):
            c = self.children.pop(name, None)
            if c is None:
                continue
            proc.terminate(c.popen.pid, c.started, 10.0)
            with contextlib.suppress(Exception):
                c.popen.wait(5)
            with contextlib.suppress(OSError):
                (self.data_dir / "pids" / f"{name}.pid").unlink()
        if self._report_thread is not None:
            self._report_thread.join(15)
            for name in list(self.children):  # a child the report thread started meanwhile
                c = self.children.pop(name)
                proc.terminate(c.popen.pid, c.started, 10.0)
        if self._started:
            self.launcher.shutdown()
            self._started = False

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _write_yaml(path: Path, data: dict) -> None:
    import yaml

    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _has_slo_commands() -> bool:
    try:
        from kafkascope import slo_cli
    except ImportError:
        return False
    return hasattr(slo_cli, "add_jobs")


def _ready(url: str) -> bool:
    import urllib.request

    try:
        return urllib.request.urlopen(url, timeout=2).status == 200
    except OSError:
        return False


def prometheus_query(base_url: str, expr: str, timeout: float = 5.0) -> list[dict]:
    import urllib.parse
    import urllib.request

    url = f"{base_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    body = json.loads(urllib.request.urlopen(url, timeout=timeout).read())
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]


# ---------------------------------------------------------------------- sample workload (a child process)


def workload(bootstrap: str, stop: threading.Event | None = None) -> None:
    """A producer (10 msg/s) and a consumer group that commits: what the lag monitor watches."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    stop = stop or threading.Event()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    n = len(bootstrap.split(","))
    with contextlib.suppress(Exception):
        admin.create_topics([NewTopic(SAMPLE_TOPIC, 3, min(3, n))])[SAMPLE_TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": SAMPLE_GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                         "session.timeout.ms": 6000})
    consumer.subscribe([SAMPLE_TOPIC])
    i = 0
    try:
        while not stop.is_set():
            producer.produce(SAMPLE_TOPIC, value=b"order-%d" % i, key=b"%d" % (i % 16))
            producer.poll(0)
            i += 1
            consumer.poll(0.1)
    finally:
        producer.flush(5)
        consumer.close()


# ---------------------------------------------------------------------- CLI


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("up", help="the whole suite on 127.0.0.1 (cluster, monitors, Prometheus, SLO page)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", metavar="DIR", help="keep state here between runs (default: a temp dir, removed)")
    p.add_argument("--no", dest="leave_out", action="append", default=[], choices=PARTS, metavar="PART",
                   help=f"leave a part out (repeatable): {', '.join(PARTS)}")
    for part in PARTS:
        p.add_argument(f"--no-{part}", dest="leave_out", action="append_const", const=part,
                       help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each process (60)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    parts = [p for p in PARTS if p not in set(args.leave_out)]
    tmp = None
    if args.data_dir:
        data_dir = Path(args.data_dir)
    else:
        tmp = data_dir = Path(tempfile.mkdtemp(prefix="kafkascope-up-"))
    stopping = threading.Event()

    def on_signal(signum, frame):  # noqa: ANN001
        stopping.set()
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    stack = Stack(data_dir, parts)
    code = 0
    try:
        try:
            stack.start(progress=lambda s: print(s, flush=True), timeout_s=args.timeout)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 - reported, everything started is stopped
            print(f"kafkascope up: error: {e}", file=sys.stderr, flush=True)
            return 1
        print("\nkafkascope is up:\n" + stack.format_urls() + "\n\nCtrl-C stops everything.", flush=True)
        while not stopping.wait(1.0):
            dead = stack.dead_children()
            if dead:
                print(f"kafkascope up: {', '.join(dead)} exited (see {data_dir / 'logs'}); stopping",
                      file=sys.stderr, flush=True)
                code = 1
                break
    except KeyboardInterrupt:
        code = 0
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        print("stopping ...", flush=True)
        stack.stop()
        for s, h in old.items():
            signal.signal(s, h)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        print("stopped", flush=True)
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--workload":
        ev = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: ev.set())
        signal.signal(signal.SIGINT, lambda *_: ev.set())
        workload(sys.argv[2], ev)
        sys.exit(0)
    sys.exit("usage: kafkascope up (this module's own entry point is for the sample workload only)")
