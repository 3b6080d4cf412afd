"""Measurement agreement: xmonitor's end-to-end p99 vs `kafkascope e2e-latency` at the same load.

    python -m benchmarks.xmonitor_agreement [--partitions 30] [--delay-ms 100] [--rounds 3] [--seconds 10]
                                            [--records 2000] [--burst] [--broker kafkascope|apache-kafka]

Starts our broker (or one Apache Kafka 3.9 broker) and xmonitor in-process (--partitions partitions every
--delay-ms, 1 s SLI intervals). The load both measure is xmonitor's probe traffic. After a warm-up (both run
once, unmeasured: a cold JVM's first seconds are no one's steady state), --rounds rounds of:
1. for --seconds xmonitor runs alone; its p99 is taken from the SLI files of that period (the e2e HDR
   histograms merged exactly);
2. then, with xmonitor still probing, `kafkascope e2e-latency --producer-acks all` sends --records records one at
   a time to its own 1-partition topic; its p99 from its "99th" line.
Interleaved so that drift of a noisy machine falls on both; the figures are the medians over the rounds.
Not both at once: e2e-latency fetches with fetch.wait.max.ms=0 (as Kafka's EndToEndLatency does), a busy loop
that takes a core of a small machine, and xmonitor measured beside it would measure that contention.
Target: within 10% (ratio xmonitor/e2e-latency in [0.9, 1.1]).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._common import (
    ROOT,
    apache_kafka,
    create_topic,
    emit_json,
    fmt,
    our_broker,
    ratio,
    sli_e2e_p99,
    verdict,
)
from benchmarks.xmonitor_overhead import WARM_UP_S, sends_mode


def e2e_latency_p99(bootstrap: str, records: int) -> float:
    out = subprocess.run([sys.executable, "-m", "kafkascope", "e2e-latency", "--bootstrap-server", bootstrap,
                          "--topic", "e2e-agree", "--num-records", str(records), "--producer-acks", "all"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"e2e-latency failed: {out.stderr}")
    return float(re.search(r"99th = ([0-9.]+) ms", out.stdout).group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="how long xmonitor is measured alone, each round")
    ap.add_argument("--records", type=int, default=2000, help="e2e-latency's records, each round")
    ap.add_argument("--burst", action="store_true", help="produce.spread.sends=false: every partition on one tick, "
                    "as Xinfra schedules them (default: partition i at i/N of the interval)")
    ap.add_argument("--broker", choices=("kafkascope", "apache-kafka"), default="kafkascope",
                    help="the broker both measure (apache-kafka: Apache Kafka 3.9, one broker, fetched on first use)")
    a = ap.parse_args()
    from xmonitor import sink
    from xmonitor.app import XMonitor
    from xmonitor.config import MonitorConfig

    tmp = Path(tempfile.mkdtemp(prefix="xmon-agree-"))
    windows, tool_p99s = [], []
    with (our_broker() if a.broker == "kafkascope" else apache_kafka()) as b:
        cfg = MonitorConfig(bootstrap_servers=b.bootstrap, topic="xmon-agree", cluster_name="bench",
                            produce_record_delay_ms=a.delay_ms, partitions_to_brokers_ratio=a.partitions,
                            sli_interval_ms=1000, sli_dir=str(tmp / "sli"), produce_spread_sends=not a.burst)
        create_topic(b.bootstrap, "e2e-agree", 1)
        with XMonitor(cfg):
            time.sleep(WARM_UP_S)
            e2e_latency_p99(b.bootstrap, a.records // 2)
            for _ in range(a.rounds):
                start = datetime.now(UTC)
                time.sleep(a.seconds)
                windows.append((start, datetime.now(UTC)))
                tool_p99s.append(e2e_latency_p99(b.bootstrap, a.records))
    rows = sink.read_dir(cfg.sli_dir).to_pylist()
    xm_p99s, counted = [], 0
    for start, end in windows:
        p99, n = sli_e2e_p99(rows, start, end)
        counted += n
        xm_p99s.append(float("nan") if p99 is None else p99)
    xm_p99, tool_p99 = statistics.median(xm_p99s), statistics.median(tool_p99s)
    r = ratio(xm_p99, tool_p99)
    ok = None if r is None else 0.9 <= r <= 1.1
    mode = sends_mode(not a.burst)
    print(f"{a.broker}: at {a.partitions} partitions × {1000 / a.delay_ms:.0f}/s ({mode} sends), median of "
          f"{a.rounds} rounds: xmonitor e2e p99 {fmt(xm_p99)} ms ({counted} records), kafkascope e2e-latency p99 "
          f"{fmt(tool_p99)} ms ({a.records} records a round)")
    print("rounds (xmonitor / e2e-latency, ms): "
          + ", ".join(f"{fmt(x)} / {fmt(t)}" for x, t in zip(xm_p99s, tool_p99s, strict=True)))
    print(f"ratio xmonitor/e2e-latency: {fmt(r)} (target within 10%: {verdict(ok)})")
    emit_json("xmonitor_agreement", {"broker": a.broker, "partitions": a.partitions, "delay_ms": a.delay_ms,
                                     "sends": mode, "rounds": a.rounds, "xmonitor_p99_ms": xm_p99,
                                     "e2e_latency_p99_ms": tool_p99, "xmonitor_round_p99s_ms": xm_p99s,
                                     "e2e_latency_round_p99s_ms": tool_p99s, "ratio": r, "pass": ok,
                                     "xmonitor_records": counted})


if __name__ == "__main__":
    main()
