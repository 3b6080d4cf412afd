"""How long `kafkascope up` (what `make demo` runs) takes to start the whole local stack.

    python -m benchmarks.stack_startup [--no PART ...]

Runs `kafkascope up` in a fresh data directory, times it from launch to its "Ctrl-C stops everything" line (every
part started and answering), then stops it with SIGINT. Baseline in the same run: `kafkascope cluster up` of the
same ZooKeeper and three brokers alone, so the ratio says what the rest of the stack (xmonitor, lag monitor,
Prometheus, ZooKeeper exporter) adds; the SLO report (Spark) and then the Streamlit page come up in the background
after that line, as `up` says. Target (the dashboards issue): under 30 s.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT, emit_json, fmt, ratio, verdict

TARGET_S = 30.0
READY = "Ctrl-C stops everything"          # `kafkascope up`'s last line once every part answers


def time_to_ready(cmd: list[str], marker: str) -> float:
    """Seconds from launching `cmd` (a foreground launcher) to its `marker` line; then SIGINT, as a user would."""
    data = Path(tempfile.mkdtemp(prefix="kscope-up-"))
    t0 = time.monotonic()
    p = subprocess.Popen([*cmd, "--data-dir", str(data)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for line in p.stdout:
            if marker in line:
                return time.monotonic() - t0
        raise SystemExit(f"{' '.join(cmd[2:])} exited with {p.wait()} before it was ready")
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no", action="append", default=[], metavar="PART", help="leave a part out (as `up --no`)")
    a = ap.parse_args()
    kafkascope = [sys.executable, "-m", "kafkascope"]
    stack = time_to_ready([*kafkascope, "up", *[x for part in a.no for x in ("--no", part)]], READY)
    cluster = time_to_ready([*kafkascope, "cluster", "up", "--brokers", "3"], "bootstrap servers:")
    ok = stack < TARGET_S
    print(f"kafkascope up, whole stack{' without ' + ', '.join(a.no) if a.no else ''}: {fmt(stack)} s "
          f"(target < {TARGET_S:.0f} s: {verdict(ok)})")
    print(f"ZooKeeper + 3 brokers alone (kafkascope cluster up): {fmt(cluster)} s  ratio stack/cluster: "
          f"{fmt(ratio(stack, cluster))}")
    emit_json("stack_startup", {"stack_s": round(stack, 2), "cluster_s": round(cluster, 2),
                                "ratio": ratio(stack, cluster), "left_out": a.no, "target_s": TARGET_S, "pass": ok,
                                "load_avg": round(os.getloadavg()[0], 2)})


if __name__ == "__main__":
    main()
