"""The local stack (`kafkascope up`, `make demo`): ZooKeeper + three brokers (each with /metrics), the ZooKeeper
ensemble exporter, xmonitor, the lag monitor with a sample consumer group, the node exporter, Prometheus with the
generated rules, the scheduled live SLO report on the probe's SLI files (as watch mode runs it; with demo_history a
one-shot report on 14 synthetic days instead) and the Streamlit SLO page.

    stack = Stack(data_dir, parts={"xmonitor", "lag", "prometheus"})
    stack.start(progress=print)
    stack.urls()
    stack.stop()
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from dashboards.catalog import GRAFANA_DIR
from kafkascope.local import process as proc
from kafkascope.local.launcher import ClusterLauncher, port_free
from kafkascope.local.stack.procs import Processes, ScrapeJob, Step, write_yaml
from kafkascope.local.stack.secure import SCRAPE_USER, WEB_CONFIG, StackSecurity

PARTS = ("xmonitor", "lag", "workload", "node-exporter", "prometheus", "zk-exporter", "slo-report", "streamlit")
XMONITOR_TOPIC = "xinfra-monitor-topic"
CLUSTER_NAME = "local"
# xmonitor's offset-commit probe re-commits one offset: Burrow would call its group STALL
XMONITOR_GROUPS = "^xmonitor-.*-offset-commit$"
# The demo is watched for minutes, not hours: a new live report every 5 min (watch mode: 15 min). One Spark run on
# the demo's few hours of data takes well under a minute, so 5 min keeps Spark busy a small share of 2 cores.
DEMO_REPORT_EVERY = "5m"


class MetricsClusterLauncher(ClusterLauncher):
    """ClusterLauncher whose brokers serve /metrics (prometheus.listener) on their own free port (Apache Kafka's
    brokers have the jmx_exporter agent instead: `scrape_url` names either)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metrics_ports: dict[int, int] = {}
        self.log_dirs: dict[int, list[str]] = {}  # broker id -> its log.dirs (for the node exporter's textfile)
        pfile = self.data_dir / "metrics-ports.json"
        with contextlib.suppress(OSError, ValueError):
            self.metrics_ports = {int(k): v for k, v in json.loads(pfile.read_text()).items()}

    def _broker_config(self, broker_id: int, port: int, rack, zk_connect) -> dict:
        props = super()._broker_config(broker_id, port, rack, zk_connect)
        if self.impl != "kafkascope":
            return props
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

    def scrape_url(self, broker_id: int) -> str | None:
        """Plain-HTTP /metrics of a broker: ours from prometheus.listener, Kafka's from its jmx_exporter agent."""
        if broker_id in self.metrics_ports:
            return f"http://127.0.0.1:{self.metrics_ports[broker_id]}/metrics"
        return self.metrics_url(broker_id)

    def broker_metrics_targets(self) -> list[str]:
        return [f"127.0.0.1:{self.metrics_ports[b]}" for b in self.broker_ids]


def lag_config(cluster: str, data_dir: Path) -> dict:
    """lag.yaml for a stack's lag monitor."""
    return {"cluster": cluster, "collector": {"offset-refresh": 2, "topic-refresh": 10,
                                              "group-denylist": XMONITOR_GROUPS},
            "history-dir": str(data_dir / "lag-history")}


class Stack(Processes):
    """Everything `kafkascope up` runs. parts: which optional parts to run (PARTS); the cluster always runs."""

    def __init__(self, data_dir: Path | str, parts: Iterable[str] = PARTS, brokers: int = 3,
                 scrape_interval: str = "2s", broker_props: dict | None = None,
                 xmonitor_config: dict | None = None, demo_history: bool = False,
                 report_every: str = DEMO_REPORT_EVERY, security: str | None = None) -> None:
        super().__init__(data_dir, scrape_interval)
        self.parts = set(parts)
        unknown = self.parts - set(PARTS)
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)} (have {', '.join(PARTS)})")
        props = {"min.insync.replicas": 2, "replica.lag.time.max.ms": 5000}
        props.update(broker_props or {})
        self.security_mode = security   # "sasl_ssl": the whole stack secured (kafkascope/local/stack/secure.py)
        self.secure: StackSecurity | None = None
        if security is not None:
            self.web_config = self.data_dir / "security" / WEB_CONFIG
            props["prometheus.web.config.file"] = str(self.web_config)
        self.launcher = MetricsClusterLauncher(self.data_dir / "cluster", brokers=brokers, broker_props=props,
                                               security=security)
        if "zk-exporter" in self.parts:
            self.launcher.zk_exporter_port = 0
        self.xmonitor_config = xmonitor_config or {}
        self.demo_history = demo_history    # the synthetic 14 days (one-shot) instead of the live report
        self.live_every = report_every
        self._started = False

    @property
    def bootstrap(self) -> str:
        return self.launcher.bootstrap

    def scrape_jobs(self) -> list[ScrapeJob]:
        settings = tuple(self.scrape_settings.items())
        jobs = [ScrapeJob("kafka-broker", tuple(self.launcher.broker_metrics_targets()), settings=settings),
                *super().scrape_jobs()]
        if self.launcher.zk_exporter_url:
            jobs.append(ScrapeJob("zookeeper", (self.launcher.zk_exporter_url.split("/")[2],), settings=settings))
        return jobs

    def _secure(self) -> list[str]:
        """With --security: the kit and the web config before anything starts; the client flags children take."""
        if self.security_mode is None:
            return []
        self.secure = StackSecurity.create(self.launcher.data_dir / "security", self.data_dir / "security")
        self.scrape_settings = self.secure.scrape_settings()
        self.launcher.zk_exporter_web_config = self.secure.web_config
        return ["--command-config", str(self.secure.client_properties)]

    def start(self, progress: Callable[[str], None] = lambda s: None, timeout_s: float = 60.0) -> Stack:
        self._started = True  # stop() shuts the launcher down even when start fails half-way
        return super().start(progress, timeout_s)

    def _start(self, progress: Callable[[str], None], timeout_s: float) -> None:
        t0 = time.monotonic()

        def step(msg: str) -> None:
            progress(f"[{time.monotonic() - t0:5.1f}s] {msg}")

        client_flags = self._secure()
        step("starting ZooKeeper and 3 brokers" + (" (+ ZooKeeper exporter)" if "zk-exporter" in self.parts else "")
             + (f", {self.security_mode.upper()} with ACLs" if self.secure else ""))
        self.launcher.start_all(timeout_s=timeout_s)
        step(f"cluster up: {self.bootstrap}")
        if self.secure:
            step(self.secure.kit.usage(self.bootstrap))
        py, scheme = sys.executable, self.http_scheme
        web_flags = ["--web.config.file", str(self.web_config)] if self.web_config else []
        if "xmonitor" in self.parts:
            port = self.ports["xmonitor"] = proc.free_port()
            cfg = {"bootstrap.servers": self.bootstrap, "cluster.name": CLUSTER_NAME, "topic": XMONITOR_TOPIC,
                   "topic-management.replicationFactor": min(3, len(self.launcher.broker_ids)),
                   "topic-management.partitionsToBrokersRatio": 1.0,
                   "prometheus.listener": f"127.0.0.1:{port}",
                   "sli.dir": str(self.data_dir / "sli"), "produce.record.delay.ms": 200,
                   **self.xmonitor_config}
            path = self.data_dir / "xmonitor.yaml"
            write_yaml(path, cfg)
            self._spawn("xmonitor", [py, "-m", "xmonitor", "--config", str(path), *client_flags, *web_flags], port,
                        f"{scheme}://127.0.0.1:{port}/metrics", timeout_s)
            step(f"xmonitor probing (metrics on :{port})")
        if "workload" in self.parts or "lag" in self.parts:
            from kafkascope.local.stack.workload import SAMPLE_GROUP, SAMPLE_TOPIC

            self._spawn("workload", [py, "-m", "kafkascope.local.stack.workload", self.bootstrap, *client_flags[1:]])
            step(f"sample consumer group {SAMPLE_GROUP} on topic {SAMPLE_TOPIC}")
        if "lag" in self.parts:
            port = self.ports["lag"] = proc.free_port()
            path = self.data_dir / "lag.yaml"
            write_yaml(path, lag_config(CLUSTER_NAME, self.data_dir))
            self._spawn("lag", [py, "-m", "kafkascope", "lag", "--bootstrap-servers", self.bootstrap, "--config",
                                str(path), "--http-port", str(port), *client_flags, *web_flags], port,
                        f"{scheme}://127.0.0.1:{port}/v3/kafka", timeout_s)
            step(f"lag monitor (Burrow API on :{port})")
        if "node-exporter" in self.parts:
            self._start_node_exporter(step, timeout_s, self.launcher.log_dirs)
        if "prometheus" in self.parts:
            self._start_prometheus(step, timeout_s)
        if "slo-report" in self.parts and not self.demo_history:
            self._start_live(step, timeout_s)
        elif "slo-report" in self.parts:
            # Spark takes a while: the report (then the Streamlit page) comes up in the background.
            self._report_thread = threading.Thread(target=self._slo_report_then_page, args=(step, timeout_s),
                                                   name="slo-report", daemon=True)
            self._report_thread.start()
        elif "streamlit" in self.parts and (self.data_dir / "slo-report" / "report.json").exists():
            self._start_streamlit(step, timeout_s, self.data_dir / "slo-report")
        step("ready")

    def _start_live(self, step: Step, timeout_s: float) -> None:
        if "xmonitor" not in self.parts:
            step("live SLO report skipped: it reports on xmonitor's SLI files (--no xmonitor); --demo-history "
                 "reports on synthetic ones")
            return
        lag = self.data_dir / "lag-history" if "lag" in self.parts else None
        self._start_live_report(step, timeout_s, self.live_every, lag, "streamlit" in self.parts)

    def _slo_report_then_page(self, step: Step, timeout_s: float) -> None:
        try:
            ok = self._slo_report(step)
            if ok and "streamlit" in self.parts and not self._stopping.is_set():
                self._start_streamlit(step, timeout_s, self.data_dir / "slo-report")
        except Exception as e:  # reported; the rest of the stack keeps running
            if not self._stopping.is_set():
                step(f"SLO report/page failed: {e}")

    def _slo_report(self, step: Step) -> bool:
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
            with self._spawn_lock:
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

    def urls(self) -> list[tuple[str, str]]:
        rows = [("Kafka bootstrap", self.bootstrap),
                ("ZooKeeper", self.launcher.zookeeper_host_port or "-")]
        for b, t in zip(self.launcher.broker_ids, self.launcher.broker_metrics_targets(), strict=True):
            rows.append((f"broker {b} /metrics", f"{self.http_scheme}://{t}/metrics"))
        if self.launcher.zk_exporter_url:
            rows.append(("ZooKeeper exporter", self.launcher.zk_exporter_url))
        rows += self.child_urls()
        report = self.data_dir / "slo-report" / "report.html"
        if report.exists():
            rows.append(("SLO report", f"file://{report}"))
        rows.append(("Grafana dashboards (import)", str(GRAFANA_DIR)))
        rows.append(("data dir", str(self.data_dir)))
        if self.secure is not None:
            rows.append(("client properties (admin)", str(self.secure.client_properties)))
            rows.append(("metrics login", f"{SCRAPE_USER}, password in {self.secure.password_file}"))
        return rows

    def stop(self) -> None:
        self.stop_all()
        if self._started:
            self.launcher.shutdown()
            self._started = False

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
