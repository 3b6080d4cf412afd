"""`kafkascope up` as a subprocess: parts left out to stay fast, a URL table, Ctrl-C leaves no process behind; the
SLO page on the scheduled live report by default, on the synthetic 14 days with --demo-history."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kafkascope.local import node_exporter
from kafkascope.local import process as proc
from kafkascope.local.cluster import wait_for
from kafkascope.local.stack import procs

REPO = Path(__file__).resolve().parents[2]


def _pids(data_dir: Path) -> list[tuple[int, int | None]]:
    out = []
    state = json.loads((data_dir / "cluster" / "cluster.json").read_text())
    for m in state["members"].values():
        out.append((m["pid"], m["started"]))
    for f in (data_dir / "pids").glob("*.pid"):
        pid, started = f.read_text().split()
        out.append((int(pid), None if started == "None" else int(started)))
    zk = data_dir / "cluster" / "zk-exporter.pid"
    if zk.exists():
        pid, started = zk.read_text().split()
        out.append((int(pid), int(started)))
    return out


@pytest.mark.timeout(180)
def test_up_starts_prints_urls_and_ctrl_c_stops_everything(tmp_path):
    data = tmp_path / "state"
    cmd = [sys.executable, "-m", "kafkascope", "up", "--data-dir", str(data),
           "--no", "xmonitor", "--no", "slo-report", "--no", "streamlit"]
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = []
    try:
        for line in p.stdout:        # its start time is a benchmark figure (benchmarks/stack_startup.py)
            lines.append(line)
            if "Ctrl-C stops everything" in line:
                break
        out = "".join(lines)
        assert "kafkascope is up" in out, out
        for label in ("Kafka bootstrap", "broker 2 /metrics", "ZooKeeper exporter", "lag monitor (Burrow API)",
                      "Prometheus", "Prometheus alerts"):
            assert label in out, out
        assert "xmonitor /metrics" not in out and "[" in lines[0]  # left out; progress lines are timestamped
        host = node_exporter.binary() is not None
        assert ("node exporter /metrics" in out) == host, out
        pids = _pids(data)
        assert len(pids) >= 7 + host and all(proc.alive(pid, st) for pid, st in pids), pids  # zk, 3 brokers,
        # zk-exp, workload, lag, (node exporter,) prometheus
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[0]
        assert p.returncode == 0, rest
        assert "stopped" in rest
        wait_for(lambda: not [(pid, st) for pid, st in pids if proc.alive(pid, st)], timeout=5,
                 what="no process of the stack left")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    # --data-dir keeps state: the cluster's config and logs are still there for the next run
    assert (data / "cluster" / "cluster.json").exists() and (data / "prometheus" / "prometheus.yml").exists()


def test_up_rejects_an_unknown_part():
    r = subprocess.run([sys.executable, "-m", "kafkascope", "up", "--no", "grafana"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "invalid choice" in r.stderr


# ---------------------------------------------------------------------- the SLO report and page


READY = "Ctrl-C stops everything"
LEAN = ("--no", "node-exporter", "--no", "prometheus", "--no", "zk-exporter")   # not needed by the report


def _up(data: Path, *extra: str, lean: bool = True) -> tuple[subprocess.Popen, str]:
    """`up` (without the parts the report does not need, unless not lean) until its URL table; returns the process
    and the output so far."""
    p = subprocess.Popen([sys.executable, "-m", "kafkascope", "up", "--data-dir", str(data), *(LEAN if lean else ()),
                          *extra],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = []
    for line in p.stdout:
        lines.append(line)
        if READY in line:
            break
    out = "".join(lines)
    assert "kafkascope is up" in out, out
    return p, out


def _stop(p: subprocess.Popen, data: Path) -> None:
    pids = _pids(data)
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=90)[0]
    assert p.returncode == 0 and "stopped" in rest, rest
    wait_for(lambda: not [(pid, st) for pid, st in pids if proc.alive(pid, st)], timeout=10,
             what="no process of the stack left")


def _page(root: Path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KAFKASCOPE_REPORT", str(root))
    at = AppTest.from_file(str(REPO / "dashboards" / "streamlit_app.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def _page_root(data: Path) -> Path:
    """The --report the stack's Streamlit process was started with."""
    pid = int((data / "pids" / "streamlit.pid").read_text().split()[0])
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return Path(argv[argv.index(b"--report") + 1].decode())


def test_first_live_report_is_due_once_the_window_holds_the_probes_first_interval():
    from slo import live

    now = 1_764_170_005_000                            # 5 s into a minute
    due = procs.first_report_due_ms(None, now)          # no interval yet: one taken to start now
    assert due == 1_764_170_040_000 + live.LIVE_GRACE_MS and due % 60_000 == live.LIVE_GRACE_MS
    first = now - 3_600_000
    assert procs.first_report_due_ms(first, now) == now  # data long there: due at once
    for first in (now, now + 50_000):
        due = procs.first_report_due_ms(first, now)
        assert procs.report_has_data(first, due) and not procs.report_has_data(first, due - 1)


@pytest.mark.timeout(240)
def test_up_shows_the_live_report_root_and_says_the_first_is_coming(tmp_path, monkeypatch):
    data = tmp_path / "state"
    p, out = _up(data)
    try:
        root = data / "slo-reports"
        assert re.search(rf"^  SLO reports \(every 5m\) +{re.escape(str(root))}$", out, re.M), out
        page = next(ln.split()[-1] for ln in out.splitlines() if ln.startswith("  Streamlit SLO page"))
        assert urllib.request.urlopen(page, timeout=10).status == 200 and _page_root(data) == root
        assert not (data / "slo-report").exists()      # no synthetic history made
        wait_for(lambda: (root / "schedule.json").exists(), timeout=30, what="the first report announced")
        texts = [i.value for i in _page(root, monkeypatch).info]
        assert any(t.startswith("No report yet: reports every 5 min; the first one ") for t in texts), texts
        _stop(p, data)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_up_publishes_the_first_live_report(tmp_path, monkeypatch):
    """The figure: time from `up` to the first live report in the local stack (all parts)."""
    from slo import live

    data = tmp_path / "state"
    t0, t0_wall = time.monotonic(), time.time()
    p, out = _up(data, lean=False)
    try:
        ready_s = time.monotonic() - t0
        report = wait_for(lambda: live.latest(data / "slo-reports"), timeout=540, interval=1,   # Spark: 2 cores
                          what="first live report")                                        # shared, 3 brokers
        report_s = time.monotonic() - t0
        body = json.loads((report / "report.json").read_text())
        assert body["source"]["synthetic"] is False and body["slos"], body["source"]
        assert body["source"]["sli_dir"] == str(data / "sli")
        at = _page(data / "slo-reports", monkeypatch)
        assert "Kafka SLOs" in [t.value for t in at.title]
        assert not any(w.value.startswith("Synthetic data") for w in at.warning)
        run_s = live.parse_iso(report.name[len(live.PREFIX):len(live.PREFIX) + 16]) / 1000
        wait_s = run_s - t0_wall   # the report is named by its run's start: waiting for data before, Spark after
        print(f"\nup (local stack): ready in {ready_s:.1f} s, first live report after {report_s:.1f} s (first run "
              f"started after {wait_s:.0f} s)")
        _stop(p, data)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)


@pytest.mark.timeout(300)
def test_up_demo_history_reports_on_synthetic_days_labelled_so(tmp_path, monkeypatch):
    data = tmp_path / "state"
    p, out = _up(data, "--demo-history", "--no", "xmonitor", "--no", "lag", "--no", "workload")
    try:
        assert "SLO reports (every" not in out and not (data / "slo-reports").exists()
        report = data / "slo-report" / "report.json"
        wait_for(report.exists, timeout=240, interval=1, what="the synthetic report")
        body = json.loads(report.read_text())
        assert body["source"]["synthetic"] is True and body["source"]["generator"]["generator"] == "slo.generate"
        assert body["window"]["elapsed_seconds"] >= 13 * 86400
        warnings = [w.value for w in _page(data / "slo-report", monkeypatch).warning]
        assert any(w.startswith("Synthetic data") for w in warnings), warnings
        wait_for(lambda: "streamlit" in {f.stem for f in (data / "pids").glob("*.pid")}, timeout=60,
                 what="the page on the synthetic report")
        assert _page_root(data) == data / "slo-report"
        _stop(p, data)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
