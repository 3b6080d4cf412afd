"""The 14-day SLO report (PySpark, local mode) on synthetic SLI intervals: time, rows/s, linearity in days.

Generates `--clusters` x `--partitions` partitions at `--interval` over the longest window once (slo.generate,
with a broker-down and a latency spike), then runs the full report (all shipped SLOs, merged-HDR percentiles,
HTML) for each window ending at the data's end. Prints each run and time(N)/time(first) against N/first
(1.0 = linear), then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from slo.generate import GenConfig, Incident, generate
from slo.jobs.slo_report import slo_report
from slo.spark import session
from slo.specs import load_specs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--days", default="7,14,28", help="comma-separated windows in days")
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--interval", type=int, default=10, help="seconds")
    ap.add_argument("--data", help="reuse/keep generated data here (default: a temp dir, removed)")
    ap.add_argument("--data-days", type=int, help="days of data to generate (default: the longest window)")
    ap.add_argument("--master", help="Spark master (default local[*])")
    ap.add_argument("--no-warmup", action="store_true", help="skip the uncounted 1-day warm-up run")
    args = ap.parse_args()
    days = [int(d) for d in args.days.split(",")]
    longest = max(days + [args.data_days or 0])
    tmp = Path(args.data or tempfile.mkdtemp(prefix="kscope-slo-bench-"))
    cfg = GenConfig(days=longest, clusters=args.clusters, partitions=args.partitions, interval_s=args.interval,
                    incidents=(Incident.parse(f"broker-down@{max(0, longest - 3)}d1h+30m:cluster=c0,broker=1"),
                               Incident.parse(f"latency-spike@{max(0, longest - 2)}d+1h")))
    t0 = time.perf_counter()
    if not any(tmp.glob("date=*/*.parquet")):
        info = generate(cfg, tmp)
        print(f"generated {info['rows']:,} rows in {time.perf_counter() - t0:.1f} s")
    spark = session("bench-slo-report", args.master)
    specs = load_specs()
    runs = []
    try:
        if not args.no_warmup:  # JVM/JIT and Python-worker start-up, not counted
            t = time.perf_counter()
            slo_report(spark, tmp, specs, tempfile.mkdtemp(prefix="kscope-slo-warm-"), end_ms=cfg.end_ms,
                       window_s=86400)
            print(f"warm-up (1 day, not counted): {time.perf_counter() - t:.1f} s", flush=True)
        for d in days:
            out = Path(tempfile.mkdtemp(prefix="kscope-slo-bench-out-"))
            t = time.perf_counter()
            r = slo_report(spark, tmp, specs, out, end_ms=cfg.end_ms, window_s=d * 86400)
            secs = time.perf_counter() - t
            rows = r["completeness"]["rows"]
            runs.append({"days": d, "rows": rows, "seconds": round(secs, 1), "rows_per_s": round(rows / secs)})
            print(f"{d:>3} days  {rows:>12,} rows  {secs:7.1f} s  {rows / secs:>12,.0f} rows/s", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
        if not args.data:
            shutil.rmtree(tmp, ignore_errors=True)
    first = runs[0]
    for r in runs:
        r["time_ratio"] = round(r["seconds"] / first["seconds"], 2)
        r["size_ratio"] = round(r["days"] / first["days"], 2)
        print(f"{r['days']:>3} days: time x{r['time_ratio']} for size x{r['size_ratio']}")
    print(json.dumps({"benchmark": "slo_report", "clusters": args.clusters, "partitions": args.partitions,
                      "interval_s": args.interval, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
