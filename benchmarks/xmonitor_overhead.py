"""xmonitor's probe overhead: CPU of `python -m xmonitor` probing 30 partitions every 100 ms.

    python -m benchmarks.xmonitor_overhead [--partitions 30] [--delay-ms 100] [--seconds 20]

Starts our broker, then `python -m xmonitor` as its own process (topic with --partitions partitions, SLI files and
/metrics on), waits 5 s of warm-up, and reads the process's CPU time (utime + stime from /proc) over --seconds.
Figure: CPU % of one core (target < 10%). Baseline in the same run: the same process with the same clients and
services but idle (produce.record.delay.ms = 1 h): the ratio says what the probing itself costs over merely
being connected. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT, emit_json, fmt, our_broker, ratio, verdict

TARGET_CPU_PCT = 10.0
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def measure(bootstrap: str, partitions: int, delay_ms: int, seconds: float, tag: str) -> float:
    tmp = Path(tempfile.mkdtemp(prefix=f"xmon-{tag}-"))
    cfg = tmp / "xmonitor.yaml"
    cfg.write_text(f"topic: xmon-bench-{tag}\ncluster.name: bench\nproduce.record.delay.ms: {delay_ms}\n"
                   f"topic-management.partitionsToBrokersRatio: {partitions}\nsli.dir: {tmp / 'sli'}\n"
                   "prometheus.listener: 127.0.0.1:0\n")
    p = subprocess.Popen([sys.executable, "-m", "xmonitor", "--bootstrap-servers", bootstrap, "--config", str(cfg),
                          "--log-level", "WARNING"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(5.0)
        if p.poll() is not None:
            raise SystemExit(f"xmonitor exited with {p.returncode}")
        c0, t0 = _cpu_s(p.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = _cpu_s(p.pid), time.monotonic()
        return 100.0 * (c1 - c0) / (t1 - t0)
    finally:
        p.terminate()
        p.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    with our_broker() as b:
        probe = measure(b.bootstrap, a.partitions, a.delay_ms, a.seconds, "probe")
        idle = measure(b.bootstrap, a.partitions, 3_600_000, a.seconds, "idle")
    ok = probe < TARGET_CPU_PCT
    print(f"xmonitor CPU, {a.partitions} partitions every {a.delay_ms} ms: {fmt(probe)}% of one core "
          f"(target < {TARGET_CPU_PCT}%: {verdict(ok)})")
    print(f"idle baseline (same process, no probing): {fmt(idle)}%  ratio probe/idle: {fmt(ratio(probe, idle))}")
    emit_json("xmonitor_overhead", {"partitions": a.partitions, "delay_ms": a.delay_ms, "cpu_pct": round(probe, 2),
                                    "idle_cpu_pct": round(idle, 2), "ratio_vs_idle": ratio(probe, idle),
                                    "target_cpu_pct": TARGET_CPU_PCT, "pass": ok})


if __name__ == "__main__":
    main()
