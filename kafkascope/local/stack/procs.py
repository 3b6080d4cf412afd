"""What every `kafkascope up` stack shares: children in their own process groups (stopped by pid and /proc start
time, so nothing else is ever signalled), the node exporter, Prometheus with the generated rules, the page."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.polling import wait_for_port, wait_until
from kafkascope.local import process as proc

Step = Callable[[str], None]
REPORTS_KEPT = 8
SLI_INTERVAL_MS = 10_000  # xmonitor's sli.interval.ms default
FIRST_DATA_WAIT_S = 600   # how long the report waits for the probe's first SLI interval before starting anyway


@dataclass
class Child:
    name: str
    popen: subprocess.Popen
    started: int | None
    log: Path
    url: str | None = None


@dataclass(frozen=True)
class ScrapeJob:
    """One Prometheus scrape_config: job name, host:port targets, and how to reach them."""
    job: str
    targets: tuple[str, ...]
    metrics_path: str = "/metrics"
    scheme: str = "http"
    settings: tuple[tuple[str, object], ...] = ()   # more scrape_config keys (tls_config, basic_auth, scheme)


class Processes:
    """Children of one stack, under data_dir (logs/, pids/)."""

    def __init__(self, data_dir: Path | str, scrape_interval: str = "2s") -> None:
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.scrape_interval = scrape_interval
        self.children: dict[str, Child] = {}
        self.ports: dict[str, int] = {}
        self._stopping = threading.Event()
        self._spawn_lock = threading.Lock()   # a background thread spawns nothing once stopping began
        self._report_thread: threading.Thread | None = None
        self.reports = self.data_dir / "slo-reports"   # the live scheduler's reports root (report-*/, latest)
        self.report_every: str | None = None            # set once the live report is scheduled
        self.scrape_settings: dict = {}   # how Prometheus reaches the stack's own endpoints (TLS, basic auth)
        self.web_config: Path | None = None  # the exporter-toolkit web config those endpoints serve with

    def _spawn(self, name: str, cmd: list[str], port: int | None = None, url: str | None = None,
               timeout_s: float = 30.0) -> Child:
        log = self.data_dir / "logs" / f"{name}.log"
        p = proc.spawn(cmd, log, cwd=self.data_dir, env=proc.child_env())
        child = self.children[name] = Child(name, p, proc.start_time(p.pid), log, url)
        (self.data_dir / "pids").mkdir(exist_ok=True)
        (self.data_dir / "pids" / f"{name}.pid").write_text(f"{p.pid} {child.started}\n")
        if port is not None:
            try:
                wait_for_port("127.0.0.1", port, lambda: p.poll() is None, timeout_s)
            except (RuntimeError, TimeoutError) as e:
                raise RuntimeError(f"{name} did not start: {e}\n{proc.log_tail(log)}") from None
        return child

    def scrape_jobs(self) -> list[ScrapeJob]:
        """Prometheus jobs of this stack; subclasses add the cluster's."""
        names = {"xmonitor": "xmonitor", "lag": "lag-monitor", "node-exporter": "node"}
        return [ScrapeJob(job, (f"127.0.0.1:{self.ports[part]}",), settings=tuple(self.scrape_settings.items()))
                for part, job in names.items() if part in self.ports]

    @property
    def http_scheme(self) -> str:
        """The scheme of the stack's own /metrics and API endpoints."""
        return "https" if self.web_config is not None else "http"

    def targets(self) -> dict[str, list[str]]:
        """Prometheus job name → host:port targets (the scrape config's static_configs)."""
        return {j.job: list(j.targets) for j in self.scrape_jobs()}

    def _start_node_exporter(self, step: Step, timeout_s: float, log_dirs: dict[int, list[str]]) -> None:
        from kafkascope.local import node_exporter as ne

        exe = ne.binary()
        if exe is None:
            step(f"node exporter not installed: skipped, no host metrics (apt-get install {ne.DEBIAN_PACKAGE})")
            return
        port = proc.free_port()
        textfile_dir = ne.write_textfile(self.data_dir / "node-exporter", log_dirs).parent
        self._spawn("node-exporter", ne.command(exe, port, textfile_dir, self.web_config), port,
                    f"{self.http_scheme}://127.0.0.1:{port}/metrics", timeout_s)
        self.ports["node-exporter"] = port
        step(f"node exporter (host metrics) on :{port}")

    def _start_prometheus(self, step: Step, timeout_s: float) -> None:
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
        cfg.write_text(prometheus_config(self.scrape_jobs(), list(build.RULE_FILES), self.scrape_interval))
        self._spawn("prometheus", [exe, f"--config.file={cfg}", f"--storage.tsdb.path={pdir / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
                    port, f"http://127.0.0.1:{port}", timeout_s)
        wait_until(lambda: _ready(f"http://127.0.0.1:{port}/-/ready"), timeout_s, 0.2, "Prometheus ready")
        step(f"Prometheus with the kafkascope rules on :{port}")

    def _start_streamlit(self, step: Step, timeout_s: float, report_dir: Path) -> None:
        from dashboards.catalog import STREAMLIT_APP

        port = self.ports["streamlit"] = proc.free_port()
        self._spawn("streamlit", [sys.executable, "-m", "streamlit", "run", str(STREAMLIT_APP),
                                  "--server.address", "127.0.0.1", "--server.port", str(port),
                                  "--server.headless", "true", "--browser.gatherUsageStats", "false", "--",
                                  "--report", str(report_dir)],
                    port, f"http://127.0.0.1:{port}", timeout_s)
        step(f"Streamlit SLO page: http://127.0.0.1:{port}")

    def _start_live_report(self, step: Step, timeout_s: float, every: str, lag_dir: Path | None,
                           page: bool) -> None:
        """The page at once on the reports root (it says when the first report is due), the scheduler
        (`slo report --every`) on the probe's SLI dir once the probe has a whole interval."""
        cmd = live_report_command(every, self.data_dir / "sli", self.reports, lag_dir)
        self.reports.mkdir(exist_ok=True)
        self.report_every = every
        if page:
            self._start_streamlit(step, timeout_s, self.reports)
        self._report_thread = threading.Thread(target=self._report_when_data, args=(step, cmd, every),
                                               daemon=True, name="slo-report")
        self._report_thread.start()

    def _report_when_data(self, step: Step, cmd: list[str], every: str) -> None:
        from slo import live
        from slo.specs import parse_duration

        sli, announced = self.data_dir / "sli", ()
        deadline = time.monotonic() + FIRST_DATA_WAIT_S
        while not self._stopping.is_set() and time.monotonic() < deadline:
            first, now = first_interval_ms(sli), int(time.time() * 1000)
            if report_has_data(first, now):
                break
            if announced != (first,):   # the page says when the first report is due (the scheduler rewrites it)
                latest = live.latest(self.reports)
                live.write_schedule(self.reports, parse_duration(every), first_report_due_ms(first, now),
                                    latest.name if latest else None, REPORTS_KEPT)
                announced = (first,)
            self._stopping.wait(1.0)
        with self._spawn_lock:
            if self._stopping.is_set():
                return
            self._spawn("slo-report", cmd)
        step(f"SLO report every {every} into {self.reports} (first run now)")

    def child_urls(self) -> list[tuple[str, str]]:
        rows = []
        labels = {"xmonitor": "xmonitor /metrics", "lag": "lag monitor (Burrow API)",
                  "node-exporter": "node exporter /metrics", "prometheus": "Prometheus",
                  "streamlit": "Streamlit SLO page"}
        for name, label in labels.items():
            c = self.children.get(name)
            if c is not None and c.url:
                rows.append((label, c.url))
        if "prometheus" in self.children:
            rows.append(("Prometheus alerts", self.children["prometheus"].url + "/alerts"))
        if self.report_every is not None:
            rows.append((f"SLO reports (every {self.report_every})", str(self.reports)))
        return rows

    def format_urls(self) -> str:
        rows = self.urls()
        w = max(len(k) for k, _ in rows)
        return "\n".join(f"  {k.ljust(w)}  {v}" for k, v in rows)

    def urls(self) -> list[tuple[str, str]]:
        return self.child_urls()

    def dead_children(self) -> list[str]:
        return [n for n, c in list(self.children.items())
                if c.popen.poll() is not None and not n.startswith("slo-")]

    def stop_children(self) -> None:
        """Terminate every child this stack started (newest first), by pid and start time."""
        with self._spawn_lock:
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

    def stop_all(self) -> None:
        """stop_children, the background report thread ended, then anything it started meanwhile."""
        self.stop_children()
        if self._report_thread is not None:
            self._report_thread.join(15)
            self.stop_children()

    def start(self, progress: Step = lambda s: None, timeout_s: float = 60.0):
        """Start every part; if one fails, stop what was started and re-raise."""
        try:
            self._start(progress, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, progress: Step, timeout_s: float) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stop_all()


def prometheus_config(jobs: list[ScrapeJob], rule_files: list[str], scrape_interval: str) -> str:
    """prometheus.yml: dashboards.build's config, with metrics_path/scheme where a job needs them."""
    import yaml

    from dashboards import build

    text = build.scrape_config({j.job: list(j.targets) for j in jobs}, rule_files=rule_files,
                               scrape_interval=scrape_interval)
    cfg = yaml.safe_load(text)
    for sc, job in zip(cfg["scrape_configs"], jobs, strict=True):
        if job.metrics_path != "/metrics":
            sc["metrics_path"] = job.metrics_path
        if job.scheme != "http":
            sc["scheme"] = job.scheme
        sc.update(dict(job.settings))
    return yaml.safe_dump(cfg, sort_keys=False)


def live_report_command(every: str, sli_dir: Path, out: Path, lag_dir: Path | None = None) -> list[str]:
    """`kafkascope slo report --every` on the probe's live SLI files (and the lag monitor's history)."""
    cmd = [sys.executable, "-m", "kafkascope", "slo", "report", "--sli-dir", str(sli_dir), "--out", str(out),
           "--every", every, "--keep", str(REPORTS_KEPT)]
    return cmd + (["--lag-dir", str(lag_dir)] if lag_dir is not None else [])


def first_interval_ms(sli_dir: Path) -> int | None:
    """Start (epoch ms) of the oldest SLI interval file xmonitor wrote (`<cluster>-<start ms>-<uuid>.parquet`)."""
    starts = []
    for f in sli_dir.glob("date=*/*.parquet"):
        parts = f.stem.rsplit("-", 2)
        if len(parts) == 3 and parts[1].isdigit():
            starts.append(int(parts[1]))
    return min(starts, default=None)


def report_has_data(first_ms: int | None, now_ms: int, interval_ms: int = SLI_INTERVAL_MS) -> bool:
    """A report run now would cover a whole SLI interval: the scheduler's first run must not be an empty one
    (a failed run waits a whole --every for the next)."""
    from slo import live

    return first_ms is not None and live.window_end_ms(now_ms) >= first_ms + interval_ms


def first_report_due_ms(first_ms: int | None, now_ms: int, interval_ms: int = SLI_INTERVAL_MS) -> int:
    """When report_has_data turns true: the live window (whole minutes, LIVE_GRACE_MS back) must reach the end of
    the probe's first interval; before the probe wrote one, its first interval is taken to start now."""
    from slo import live

    end = (now_ms if first_ms is None else first_ms) + interval_ms
    return max(now_ms, -(-end // live.STEP_MS) * live.STEP_MS + live.LIVE_GRACE_MS)


def write_yaml(path: Path, data: dict) -> None:
    import yaml

    path.write_text(yaml.safe_dump(data, sort_keys=False))


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
