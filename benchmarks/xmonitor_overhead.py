"""xmonitor's probe overhead: CPU of `python -m xmonitor` probing 30 partitions every 100 ms.

    python -m benchmarks.xmonitor_overhead [--partitions 30] [--brokers 1] [--delay-ms 100] [--seconds 20] [--burst]

Starts our broker (--brokers > 1: a ZooKeeper cluster of ours; the partitions are spread over the brokers),
then `python -m xmonitor` as its own process (topic with --partitions partitions, SLI files and /metrics on),
waits 5 s of warm-up, and reads the process's CPU time (utime + stime from /proc) over --seconds.
Figure: CPU % of one core (target < 10%); beside it, the e2e p99 that xmonitor and the client floor each
measured while they ran. Two baselines in the same run:
* idle: the same process with the same clients and services but no probing (produce.record.delay.ms = 1 h);
* client floor: a bare confluent-kafka loop (this file, --bare-loop) making the same sends (acks=all, one per
  partition per interval, on xmonitor's schedule) and reading them back, with no accounting at all.
  xmonitor / floor says what xmonitor's own bookkeeping costs over the Kafka clients it cannot do without.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from benchmarks._common import (
    ROOT,
    create_topic,
    emit_json,
    fmt,
    our_broker,
    our_cluster,
    ratio,
    sli_e2e_p99,
    verdict,
)

TARGET_CPU_PCT = 10.0
WARM_UP_S = 5.0
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def sends_mode(spread: bool) -> str:
    """How the benchmarks name produce.spread.sends (also in their JSON)."""
    return "spread" if spread else "burst"


class Run(NamedTuple):
    cpu_pct: float
    since: datetime      # when the measured window began (after the warm-up)
    stdout: str


def _measure(cmd: list[str], seconds: float) -> Run:
    """Run `cmd`, measure its CPU over `seconds` after the warm-up, then SIGTERM it and collect its output."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(WARM_UP_S)
        if p.poll() is not None:
            raise SystemExit(f"{cmd[2:4]} exited with {p.returncode}")
        c0, t0, since = _cpu_s(p.pid), time.monotonic(), datetime.now(UTC)
        time.sleep(seconds)
        c1, t1 = _cpu_s(p.pid), time.monotonic()
    finally:
        p.terminate()
        out, _ = p.communicate(timeout=30)
    return Run(100.0 * (c1 - c0) / (t1 - t0), since, out)


def xmonitor_run(bootstrap: str, brokers: int, partitions: int, delay_ms: int, seconds: float, tag: str,
                 spread: bool) -> tuple[Run, float | None]:
    """(the run, xmonitor's e2e p99 in ms over the SLI intervals that began in the measured window)."""
    from xmonitor import sink

    tmp = Path(tempfile.mkdtemp(prefix=f"xmon-{tag}-"))
    cfg = tmp / "xmonitor.yaml"
    cfg.write_text(f"topic: xmon-bench-{tag}\ncluster.name: bench\nproduce.record.delay.ms: {delay_ms}\n"
                   f"topic-management.partitionsToBrokersRatio: {partitions / brokers}\n"
                   f"topic-management.replicationFactor: 1\nsli.dir: {tmp / 'sli'}\n"
                   f"prometheus.listener: 127.0.0.1:0\nproduce.spread.sends: {str(spread).lower()}\n")
    run = _measure([sys.executable, "-m", "xmonitor", "--bootstrap-servers", bootstrap, "--config", str(cfg),
                    "--log-level", "WARNING"], seconds)
    rows = sink.read_dir(str(tmp / "sli")).to_pylist() if (tmp / "sli").exists() else []
    return run, sli_e2e_p99(rows, run.since)[0]


def floor_run(bootstrap: str, partitions: int, delay_ms: int, seconds: float, spread: bool) -> tuple[Run, float | None]:
    """(the run, the bare loop's own e2e p99 in ms after its warm-up)."""
    topic = "xmon-bench-floor"
    create_topic(bootstrap, topic, partitions)
    run = _measure([sys.executable, "-m", "benchmarks.xmonitor_overhead", "--bare-loop", bootstrap, topic,
                    str(partitions), str(delay_ms), sends_mode(spread)], seconds)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    return run, (json.loads(lines[-1])["e2e_p99_ms"] if lines else None)


def bare_loop(bootstrap: str, topic: str, partitions: int, delay_ms: int, spread: bool) -> None:
    """The client floor: xmonitor's sends and reads, no accounting. Each record carries its send time; on
    SIGTERM it prints the e2e p99 of the records read after the warm-up (same HDR precision as xmonitor's)."""
    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

    from xmonitor.schedule import send_phases
    from xmonitor.sli_schema import new_histogram

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    leaders = {p: m.leader for p, m in producer.list_topics(topic, timeout=10).topics[topic].partitions.items()}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "xmon-bench-floor",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(partitions)])
    e2e, start = new_histogram(), time.monotonic()

    def report(_signum, _frame) -> None:
        print(json.dumps({"e2e_p99_ms": e2e.get_value_at_percentile(99) / 1000 if e2e.get_total_count() else None}),
              flush=True)
        os._exit(0)   # no client teardown: the figure is out

    def read() -> None:
        while True:
            first = consumer.poll(0.05)
            if first is not None:
                batch = consumer.consume(500, 0)
                now_us = time.time_ns() // 1000
                if time.monotonic() - start >= WARM_UP_S:
                    for m in (first, *batch):
                        if m.error() is None:
                            e2e.record_value(max(now_us - int(m.value().rstrip(b"x")), 1))

    signal.signal(signal.SIGTERM, report)
    threading.Thread(target=read, daemon=True).start()
    interval = delay_ms / 1000.0
    due = [start + phase for _p, phase in sorted(send_phases(leaders, interval, spread).items())]
    while True:
        now = time.monotonic()
        for p in range(partitions):
            if due[p] <= now:
                value = str(time.time_ns() // 1000).encode().ljust(200, b"x")
                producer.produce(topic, value, partition=p, on_delivery=lambda err, msg: None)
                due[p] += interval
        producer.poll(math.ceil(max(min(due) - time.monotonic(), 0.0) * 1000) / 1000)   # ms, as xmonitor


def main() -> None:
    if len(sys.argv) == 7 and sys.argv[1] == "--bare-loop":
        _, _, bootstrap, topic, parts, delay, mode = sys.argv
        bare_loop(bootstrap, topic, int(parts), int(delay), mode == "spread")
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--burst", action="store_true", help="produce.spread.sends=false: every partition on one tick, "
                    "as Xinfra schedules them (default: partition i at i/N of the interval)")
    a = ap.parse_args()
    with our_broker() if a.brokers == 1 else our_cluster(a.brokers) as b:
        probe, probe_p99 = xmonitor_run(b.bootstrap, a.brokers, a.partitions, a.delay_ms, a.seconds, "probe",
                                        not a.burst)
        floor, floor_p99 = floor_run(b.bootstrap, a.partitions, a.delay_ms, a.seconds, not a.burst)
        idle, _ = xmonitor_run(b.bootstrap, a.brokers, a.partitions, 3_600_000, a.seconds, "idle", not a.burst)
    ok = probe.cpu_pct < TARGET_CPU_PCT
    mode = sends_mode(not a.burst)
    print(f"xmonitor CPU, {a.partitions} partitions on {a.brokers} broker(s) every {a.delay_ms} ms ({mode} sends): "
          f"{fmt(probe.cpu_pct)}% of one core (target < {TARGET_CPU_PCT}%: {verdict(ok)})")
    print(f"client floor (bare confluent-kafka loop, same schedule, sends and reads): {fmt(floor.cpu_pct)}%  "
          f"ratio xmonitor/floor: {fmt(ratio(probe.cpu_pct, floor.cpu_pct))}")
    print(f"idle baseline (same process, no probing): {fmt(idle.cpu_pct)}%  "
          f"ratio probe/idle: {fmt(ratio(probe.cpu_pct, idle.cpu_pct))}")
    print(f"e2e p99 while measured: xmonitor {fmt(probe_p99)} ms, client floor {fmt(floor_p99)} ms  "
          f"ratio: {fmt(ratio(probe_p99, floor_p99))}")
    print(f"load average during the run: {os.getloadavg()[0]:.2f}")
    emit_json("xmonitor_overhead", {"partitions": a.partitions, "brokers": a.brokers, "delay_ms": a.delay_ms,
                                    "sends": mode, "cpu_pct": round(probe.cpu_pct, 2),
                                    "floor_cpu_pct": round(floor.cpu_pct, 2),
                                    "ratio_vs_floor": ratio(probe.cpu_pct, floor.cpu_pct),
                                    "idle_cpu_pct": round(idle.cpu_pct, 2),
                                    "ratio_vs_idle": ratio(probe.cpu_pct, idle.cpu_pct),
                                    "e2e_p99_ms": probe_p99, "floor_e2e_p99_ms": floor_p99,
                                    "target_cpu_pct": TARGET_CPU_PCT, "pass": ok,
                                    "load_avg": round(os.getloadavg()[0], 2)})


if __name__ == "__main__":
    main()
