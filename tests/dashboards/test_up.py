"""`kafkascope up` as a subprocess: parts left out to stay fast, a URL table, Ctrl-C leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kafkascope import node_exporter
from kafkascope.cluster import process as proc
from tests.support.cluster import wait_for

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
