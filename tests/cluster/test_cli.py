"""`kafkascope cluster ...` as a user runs it: `up` in the foreground, actions from another invocation."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafkascope.cli import main
from kafkascope.local import zookeeper as zkmod
from kafkascope.local.cluster import wait_for
from kafkascope.local.launcher import ClusterLauncher

pytestmark = pytest.mark.skipif(not zkmod.available(), reason="java or Debian's zookeeper package missing")
ROOT = Path(__file__).resolve().parents[2]


def _processes_mentioning(text: str) -> list[int]:
    """Live (non-zombie) pids whose command line mentions `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _cleanup(up: subprocess.Popen, data_dir: Path, attach=ClusterLauncher.attach, wait_s: float = 30) -> None:
    """On a failed test: let the launcher stop its cluster, then stop whatever cluster.json still names
    (`attach`: the launcher class's, e.g. kraft.attach for a KRaft cluster)."""
    if up.poll() is None:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(wait_s)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(10)
    if (data_dir / "cluster.json").exists():
        attach(data_dir).shutdown()


class _Lines:
    def __init__(self, stream) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.q.put(line.rstrip("\n"))

    def until(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting with {prefix!r} within {timeout}s; got {self.seen}")


def test_up_prints_bootstrap_and_sigint_leaves_nothing_behind(tmp_path, capsys):
    data_dir = tmp_path / "c"
    up = subprocess.Popen([sys.executable, "-m", "kafkascope", "cluster", "up", "--brokers", "2", "--standalone",
                           "--racks", "r1,r2", "--override", "num.partitions=2", "--data-dir", str(data_dir),
                           "--poll-interval", "0.2"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        out = _Lines(up.stdout)
        line = out.until("bootstrap servers:", 60)
        bootstrap = line.split(":", 1)[1].strip()
        assert len(bootstrap.split(",")) == 2
        out.until("1 ", 10)  # the process table's last row (broker 1)
        assert "num.partitions=2" in (data_dir / "broker-1" / "server.properties").read_text()

        # another invocation acts on the running cluster
        capsys.readouterr()
        assert main(["cluster", "kill", "1", "--data-dir", str(data_dir)]) == 0
        assert capsys.readouterr().out == "1: dead\n"
        assert main(["cluster", "status", "--data-dir", str(data_dir), "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["bootstrap_servers"] == bootstrap and status["launcher_running"]
        states = {p["id"]: p["state"] for p in status["processes"]}
        assert states == {"zk": "running", "0": "running", "1": "dead"}
        assert main(["cluster", "start", "1", "--data-dir", str(data_dir)]) == 0  # child of *this* process
        assert main(["cluster", "pause", "zk", "--data-dir", str(data_dir)]) == 0
        assert main(["cluster", "status", "--data-dir", str(data_dir)]) == 0
        text = capsys.readouterr().out
        assert "zookeeper" in text and "paused" in text and "r2" in text
        assert main(["cluster", "kill", "9", "--data-dir", str(data_dir)]) == 1
        assert "unknown process" in capsys.readouterr().err
        out.until("---", 10)  # the launcher noticed and printed the table again

        assert _processes_mentioning(str(data_dir))
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
        out.until("cluster stopped", 5)
    finally:
        _cleanup(up, data_dir)
    assert _processes_mentioning(str(data_dir)) == []  # ZooKeeper and brokers, including the restarted one
    assert main(["cluster", "status", "--data-dir", str(data_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "launcher: not running" in lines
    assert all(row.split()[-1] == "stopped" for row in lines[4:])


def test_sigterm_during_run_and_down_command(tmp_path, capsys):
    data_dir = tmp_path / "c"
    up = subprocess.Popen([sys.executable, "-m", "kafkascope", "cluster", "up", "--brokers", "1", "--standalone",
                           "--data-dir", str(data_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        _Lines(up.stdout).until("bootstrap servers:", 60)
        assert main(["cluster", "down", "--data-dir", str(data_dir)]) == 0  # SIGTERMs the launcher
        assert up.wait(30) == 0
    finally:
        _cleanup(up, data_dir)
    wait_for(lambda: _processes_mentioning(str(data_dir)) == [], 5)


def test_usage_errors(tmp_path, capsys):
    assert main(["cluster", "status", "--data-dir", str(tmp_path)]) == 1
    assert "no cluster" in capsys.readouterr().err
    assert main(["cluster", "kill"]) == 2
