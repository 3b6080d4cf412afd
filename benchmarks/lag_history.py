"""Spark lag-history over N days of history for P partitions at 10 s resolution; time and linearity in days.

Synthetic history in the sink's layout and schemas (history.COMMITS / history.BROKER, one file per table and date,
written with numpy + pyarrow: Spark took longer to write it than to replay it): log-end offsets every 10 s per
partition, consumers committing every 60 s (lag 50), 10 partitions per group/topic; evaluated every 60 s. The
longest history is written once; shorter runs get its first days as hard links. After an untimed warm-up run
(JVM, Python workers), prints each run's time, rows/s, the load average, and two same-run ratios: time / previous
run's time against the day ratio (2.00 per doubling = linear), and (time / first run's time) / (days / first
run's days) (1.00 = linear).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._common import emit_json
from lagmonitor import history
from slo.jobs.lag_history import lag_history
from slo.spark import session

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


POLLS_PER_DAY = 8640   # every 10 s
COMMIT_EVERY = 6       # polls


def generate(root: Path, partitions: int, days: int) -> None:
    """Write `days` of history for `partitions` partitions (topic/group t<i>/g<i> owns partitions 10i..10i+9)."""
    j = np.arange(partitions)

    def names(prefix: str, n: int) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(np.tile(j // 10, n), pa.int32()),
                                              [f"{prefix}{i}" for i in range(-(-partitions // 10))]).cast(pa.string())

    for d in range(days):
        date = history.date_of(START + d * 86_400_000)
        i = np.repeat(np.arange(d * POLLS_PER_DAY, (d + 1) * POLLS_PER_DAY), partitions)
        ids = i * partitions + np.tile(j, POLLS_PER_DAY)
        n = len(ids)
        broker = pa.table([ids * 2, START + i * 10_000, pa.repeat(history.BROKER_OFFSET, n), names("t", POLLS_PER_DAY),
                           np.tile(j % 10, POLLS_PER_DAY).astype(np.int32), i * 100, np.full(n, 10, np.int32)],
                          schema=history.BROKER)
        per_day = POLLS_PER_DAY // COMMIT_EVERY
        k = np.repeat(np.arange(d * per_day, (d + 1) * per_day), partitions)
        ids = k * partitions + np.tile(j, per_day)
        n = len(ids)
        commits = pa.table([ids * 2 + 1, START + 1 + k * 60_000, pa.repeat(history.COMMIT, n), names("g", per_day),
                            names("t", per_day), np.tile(j % 10, per_day).astype(np.int32), k * 600 - 50, ids,
                            START + k * 60_000], schema=history.COMMITS)
        for name, table in (("broker", broker), ("commits", commits)):
            (root / name / f"date={date}").mkdir(parents=True)
            pq.write_table(table, root / name / f"date={date}" / "part-0.parquet")


def first_days(src: Path, dst: Path, days: int) -> int:
    """Hard-link the first `days` dates of `src` into `dst`; returns their row count."""
    rows = 0
    for name in ("broker", "commits"):
        for part in sorted((src / name).iterdir())[:days]:
            (dst / name / part.name).mkdir(parents=True)
            for f in part.iterdir():
                (dst / name / part.name / f.name).hardlink_to(f)
                rows += pq.ParquetFile(f).metadata.num_rows
    return rows


def run(spark, tmp: Path, days: int) -> dict:
    """Time the job on the first `days` of the generated history."""
    rows = first_days(tmp / "hist", tmp / f"hist-{days}", days)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    counts = lag_history(spark, tmp / f"hist-{days}", tmp / f"out-{days}")
    secs = time.perf_counter() - t0
    return {"days": days, "rows": rows, "seconds": round(secs, 2), "rows_per_s": round(rows / secs),
            "load_1m": [round(load, 2), round(os.getloadavg()[0], 2)], **counts}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--days", default="7,14,28")
    ap.add_argument("--master")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kscope-lag-hist-"))
    spark = session("bench-lag-history", args.master)
    runs: list[dict] = []
    try:
        generate(tmp / "warm-up" / "hist", 10, 1)
        run(spark, tmp / "warm-up", 1)
        all_days = [int(d) for d in args.days.split(",")]
        generate(tmp / "hist", args.partitions, max(all_days))
        for days in all_days:
            r = run(spark, tmp, days)
            prev, first = (runs[-1] if runs else r), (runs[0] if runs else r)
            r["ratio_vs_previous"] = round(r["seconds"] / prev["seconds"], 3)
            r["linearity_ratio"] = round((r["seconds"] / first["seconds"]) / (days / first["days"]), 3)
            runs.append(r)
            print(f"{days:3d} days, {args.partitions} partitions, {r['rows']:,} history rows: {r['seconds']:.1f} s "
                  f"({r['rows_per_s']:,} rows/s, {r['seconds'] / days:.1f} s/day; load {r['load_1m'][0]:.1f}→"
                  f"{r['load_1m'][1]:.1f}); time ×{r['ratio_vs_previous']:.2f} for days ×{days / prev['days']:.2f}; "
                  f"vs {first['days']} days per day {r['linearity_ratio']:.2f}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    emit_json("lag_history", {"partitions": args.partitions, "cpus": os.cpu_count(), "runs": runs})


if __name__ == "__main__":
    main()
