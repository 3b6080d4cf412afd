"""The scheduled SLO report (`slo report --every`) on live-shaped SLI files: report time for a stack 1 hour, 1 day
and 14 days old.

Live-shaped = what xmonitor writes: one Parquet file per cluster and interval (`--interval`, 10 s) holding one row
per partition (`up` probes 3), here from slo.generate(per_interval=True), ending at the current minute. Each run is
what one scheduled run does: the shipped SLOs over their 14-day window ending now (slo.live.window_end_ms), Parquet
tables, report.json, report.html, into a temp dir published as a new report, with one Spark session for all runs
(as `--every` keeps it), closed days compacted as the scheduler does (the first run builds the cache, its time
shown apart; --no-compact reads every file). Prints each run, then one JSON line. The data is generated once
per age and kept with --data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from slo import live
from slo.generate import GenConfig, generate
from slo.jobs.slo_report import slo_report
from slo.spark import session
from slo.specs import load_specs


def _dataset(root: Path, hours: float, now_ms: int, args: argparse.Namespace) -> tuple[Path, dict]:
    """`hours` of per-interval files ending at the current minute (reused when already there)."""
    path = root / f"sli-{hours:g}h"
    info_file = path / "_bench.json"
    if info_file.exists():
        return path, json.loads(info_file.read_text())
    shutil.rmtree(path, ignore_errors=True)
    end_s = now_ms // 60_000 * 60
    cfg = GenConfig(days=hours / 24, clusters=args.clusters, partitions=args.partitions, interval_s=args.interval,
                    start=dt.datetime.fromtimestamp(end_s - hours * 3600, dt.UTC))
    t = time.perf_counter()
    info = generate(cfg, path, per_interval=True)
    info["generate_seconds"] = round(time.perf_counter() - t, 1)
    (path / live.SYNTHETIC_MARKER).unlink()   # stands in for the probe's files
    info_file.write_text(json.dumps(info))
    return path, info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hours", default="1,24,336", help="comma-separated stack ages in hours")
    ap.add_argument("--clusters", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--interval", type=int, default=10, help="seconds (xmonitor's sli.interval.ms)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per age (the schedule's steady state)")
    ap.add_argument("--data", help="keep generated data here (default: a temp dir, removed)")
    ap.add_argument("--master", help="Spark master (default local[*])")
    ap.add_argument("--no-compact", action="store_true", help="read the per-interval files of closed days too "
                    "(the scheduler compacts them: slo.live.compact)")
    args = ap.parse_args()
    hours = [float(h) for h in args.hours.split(",")]
    root = Path(args.data or tempfile.mkdtemp(prefix="kscope-slo-live-"))
    root.mkdir(parents=True, exist_ok=True)
    now_ms = int(time.time() * 1000)
    data = {}
    for h in hours:
        data[h] = _dataset(root, h, now_ms, args)
        print(f"{h:g} h: {data[h][1]['files']:,} files, {data[h][1]['rows']:,} rows "
              f"(generated in {data[h][1].get('generate_seconds', '?')} s)", flush=True)
    specs, reports = load_specs(), root / "reports"
    t = time.perf_counter()
    spark = session("bench-slo-live", args.master)
    start_s = round(time.perf_counter() - t, 1)
    runs = []
    try:
        for h in hours:
            path, info = data[h]
            cache = None if args.no_compact else root / f"cache-{h:g}h"
            for k in range(args.repeat):
                tmp = live.temp_dir(reports)
                t = time.perf_counter()
                if cache is not None:   # closed days to one file each (once; later runs find them built)
                    live.compact(path, cache, now_ms)
                compact_s = time.perf_counter() - t
                r = slo_report(spark, path, specs, tmp, end_ms=live.window_end_ms(now_ms), sli_cache=cache)
                live.publish(reports, tmp, int(time.time() * 1000))
                secs = time.perf_counter() - t
                live.prune(reports, 2)
                c = r["completeness"]
                runs.append({"hours": h, "run": k + 1, "files": info["files"], "rows": c["rows"],
                             "hours_with_data": round(c["hours_with_data"], 2), "coverage": round(c["coverage"], 4),
                             "compact_seconds": round(compact_s, 1), "seconds": round(secs, 1)})
                print(f"{h:>6g} h  run {k + 1}  {info['files']:>8,} files  {c['rows']:>9,} rows  {secs:6.1f} s "
                      f"(compaction {compact_s:.1f} s)  coverage {c['coverage'] * 100:.2f}%", flush=True)
    finally:
        spark.stop()
        if not args.data:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"benchmark": "slo_live", "clusters": args.clusters, "partitions": args.partitions,
                      "interval_s": args.interval, "compact": not args.no_compact,
                      "spark_session_seconds": start_s, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
