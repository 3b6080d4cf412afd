"""Full Burrow evaluation pass over 2,000 groups × 50 partitions (100,000 windows); target < 2 s.

Prints the figure and a same-run ratio: the full pass vs. one group's pass scaled by the number of groups.
"""

from __future__ import annotations

import argparse
import json
import time

from lagmonitor.evaluator import Evaluator, EvaluatorConfig
from lagmonitor.storage import LagStorage, StorageConfig

NOW = 1_700_000_000_000


def build(groups: int, partitions: int, intervals: int = 10) -> LagStorage:
    s = LagStorage(StorageConfig(intervals=intervals))
    for t in range(groups):
        for p in range(partitions):
            s.set_broker_offset(f"topic-{t}", p, 1_000_000, NOW - 5000, partitions)
    order = 0
    for g in range(groups):
        for p in range(partitions):
            for i in range(intervals):
                order += 1
                s.add_commit(f"group-{g}", f"topic-{g}", p, 990_000 + i * 100 + (g * p) % 7, NOW - (intervals - i)
                             * 60_000, order, NOW)
    return s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=50)
    args = ap.parse_args()
    storage = build(args.groups, args.partitions)
    ev = Evaluator("bench", storage, EvaluatorConfig(expire_cache_s=0))
    names = sorted(storage.groups)
    t0 = time.perf_counter()
    ev.group(names[0], NOW)
    single = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = [ev.group(n, NOW) for n in names]
    full = time.perf_counter() - t0
    windows = sum(r.partition_count for r in results)
    ratio = full / (single * len(names))
    print(f"full evaluation pass: {len(names)} groups × {args.partitions} partitions = {windows} windows "
          f"in {full:.3f} s ({windows / full:,.0f} windows/s; target < 2 s)")
    print(f"ratio vs one group's pass × {len(names)}: {ratio:.2f}")
    print(json.dumps({"benchmark": "lag_eval", "windows": windows, "seconds": round(full, 4),
                      "single_group_seconds": round(single, 6), "ratio_vs_scaled_single": round(ratio, 3)}))


if __name__ == "__main__":
    main()
