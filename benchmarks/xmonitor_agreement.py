"""Measurement agreement: xmonitor's end-to-end p99 vs `kafkascope e2e-latency` at the same load.

    python -m benchmarks.xmonitor_agreement [--partitions 30] [--delay-ms 100] [--records 3000] [--spread]
                                            [--broker kafkascope|apache-kafka]

Starts our broker (or one Apache Kafka 3.9 broker) and xmonitor in-process (--partitions partitions every
--delay-ms, 1 s SLI intervals); while it runs, `kafkascope e2e-latency --producer-acks all` sends --records records one at a time to its own 1-partition
topic. xmonitor's p99 is taken from the SLI files of the same period (the e2e HDR histograms merged exactly);
e2e-latency's from its "99th" line. Target: within 10% (ratio xmonitor/e2e-latency in [0.9, 1.1]).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._common import ROOT, apache_kafka, create_topic, emit_json, fmt, our_broker, ratio, verdict
from benchmarks.xmonitor_overhead import sends_mode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--spread", action="store_true", help="produce.spread.sends=true: partition i at i/N of the "
                    "interval (default: all partitions on one tick)")
    ap.add_argument("--broker", choices=("kafkascope", "apache-kafka"), default="kafkascope",
                    help="the broker both measure (apache-kafka: Apache Kafka 3.9, one broker, fetched on first use)")
    a = ap.parse_args()
    from xmonitor import sink
    from xmonitor.app import XMonitor
    from xmonitor.config import MonitorConfig
    from xmonitor.sli_schema import decode_hdr, new_histogram

    tmp = Path(tempfile.mkdtemp(prefix="xmon-agree-"))
    with (our_broker() if a.broker == "kafkascope" else apache_kafka()) as b:
        cfg = MonitorConfig(bootstrap_servers=b.bootstrap, topic="xmon-agree", cluster_name="bench",
                            produce_record_delay_ms=a.delay_ms, partitions_to_brokers_ratio=a.partitions,
                            sli_interval_ms=1000, sli_dir=str(tmp / "sli"), produce_spread_sends=a.spread)
        create_topic(b.bootstrap, "e2e-agree", 1)
        with XMonitor(cfg):
            time.sleep(3.0)
            start = datetime.now(UTC)
            out = subprocess.run([sys.executable, "-m", "kafkascope", "e2e-latency", "--bootstrap-server",
                                  b.bootstrap, "--topic", "e2e-agree", "--num-records", str(a.records),
                                  "--producer-acks", "all"], cwd=ROOT, capture_output=True, text=True, timeout=600)
            end = datetime.now(UTC)
    if out.returncode != 0:
        raise SystemExit(f"e2e-latency failed: {out.stderr}")
    tool_p99 = float(re.search(r"99th = ([0-9.]+) ms", out.stdout).group(1))
    t = sink.read_dir(cfg.sli_dir).to_pylist()
    h = new_histogram()
    for row in t:
        if row["interval_start"] >= start and row["interval_end"] <= end:
            h.add(decode_hdr(row["e2e_latency_hdr"]))
    xm_p99 = h.get_value_at_percentile(99) / 1000 if h.get_total_count() else None
    r = ratio(xm_p99, tool_p99)
    ok = None if r is None else 0.9 <= r <= 1.1
    mode = sends_mode(a.spread)
    print(f"{a.broker}: at {a.partitions} partitions × {1000 / a.delay_ms:.0f}/s ({mode} sends): "
          f"xmonitor e2e p99 {fmt(xm_p99)} ms "
          f"({h.get_total_count()} records), kafkascope e2e-latency p99 {fmt(tool_p99)} ms ({a.records} records)")
    print(f"ratio xmonitor/e2e-latency: {fmt(r)} (target within 10%: {verdict(ok)})")
    emit_json("xmonitor_agreement", {"broker": a.broker, "partitions": a.partitions, "delay_ms": a.delay_ms,
                                     "sends": mode, "xmonitor_p99_ms": xm_p99, "e2e_latency_p99_ms": tool_p99,
                                     "ratio": r, "pass": ok,
                                     "xmonitor_records": h.get_total_count()})


if __name__ == "__main__":
    main()
