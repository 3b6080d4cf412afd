"""Run every benchmark and print a summary table (``make bench``).

    python -m benchmarks.run_all [--quick] [--with-apache] [--json results.jsonl]

Runs, in order, produce_throughput, consume_throughput, e2e_latency, startup_recovery, cluster_throughput
(three-broker cluster: acks=all RF=3 vs acks=1 RF=1) and failover (10 leader kills; 3 with ``--quick``), each in
this process with default sizes (~10 s per measured case; a few minutes in all) or, with ``--quick``,
shrunk sizes (the whole run takes about 3 minutes). Every figure is printed next to a ratio against a
baseline measured in the same run, because a 2-core machine is noisy. ``--json FILE`` also writes the
JSON line of each benchmark to FILE. A benchmark that fails is reported and the others still run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

from benchmarks import (
    cluster_throughput,
    consume_throughput,
    e2e_latency,
    failover,
    produce_throughput,
    startup_recovery,
)
from benchmarks._common import fmt, verdict


def _rows(name: str, r: dict) -> list[tuple[str, str, str, str, str]]:
    """(benchmark, figure, value, ratio (baseline), target/verdict)."""
    rows = []
    if name == "produce_throughput":
        for case, c in r["cases"].items():
            apache = f", ours/apache {fmt(c['ratio_ours_apache'])}" if c.get("ratio_ours_apache") else ""
            rows.append((name, f"produce {case} MB/s", f"{fmt(c['ours']['mb_per_s'])} ({fmt(c['ours']['records_per_s'])} rec/s)",
                         f"ours/null {fmt(c['ratio_ours_null'])}{apache}", f">=100 MB/s & >=0.5: {verdict(c['pass'])}"))
    elif name == "consume_throughput":
        o = r["ours"]
        apache = (f", ours/apache {fmt(r['ratio_consume_ours_apache'])}" if r.get("ratio_consume_ours_apache")
                  else "")
        rows.append((name, "consume MB/s", f"{fmt(o['consume']['mb_per_s'])} (produce {fmt(o['produce']['mb_per_s'])})",
                     f"consume/produce {fmt(o['ratio_consume_produce'])}{apache}", f">=2x: {verdict(r['pass'])}"))
        if "consume_kcat" in o:
            rows.append((name, "consume MB/s (kcat, C)", fmt(o["consume_kcat"]["mb_per_s"]),
                         f"consume/produce {fmt(o['ratio_consume_kcat_produce'])}", "(broker-side figure)"))
    elif name == "e2e_latency":
        o = r["ours"]
        rows.append((name, "e2e p50/p99/p99.9/max ms",
                     f"{o['p50_ms']:.2f}/{o['p99_ms']:.2f}/{o['p99_9_ms']:.2f}/{o['max_ms']:.2f}",
                     f"p99 ours/{r['baseline']} {fmt(r['ratio_p99'])}", f"p99<=5ms: {verdict(r['pass'])}"))
    elif name == "startup_recovery":
        for key, label in (("many_partitions", "start, many partitions s"), ("crash_recovery", "kill -9 recovery s")):
            c = r[key]
            rows.append((name, label, f"{c['ready_s']:.2f}", f"vs empty start {fmt(c['ratio_vs_baseline'])}x",
                         f"<10s: {verdict(c['pass'])}"))
    elif name == "cluster_throughput":
        t3, t1 = r["throughput"]["rf3_acks_all"], r["throughput"]["rf1_acks_1"]
        l3, l1 = r["latency"]["rf3_acks_all"], r["latency"]["rf1_acks_1"]
        rows.append((name, "produce MB/s rf3 acks=all | rf1 acks=1", f"{fmt(t3['mb_per_s'])} | {fmt(t1['mb_per_s'])}",
                     f"rf3/rf1 {fmt(r['ratio_throughput_rf3_rf1'])}", "(cost of replication)"))
        rows.append((name, "e2e p99/p99.9 ms rf3 | rf1",
                     f"{l3['p99_ms']:.2f}/{l3['p99_9_ms']:.2f} | {l1['p99_ms']:.2f}/{l1['p99_9_ms']:.2f}",
                     f"p99 rf3/rf1 {fmt(r['ratio_p99_rf3_rf1'])}", f"all received: {verdict(r['complete'])}"))
    elif name == "failover":
        rows.append((name, f"leader kill -> acks=all ok s ({r['kills']} kills)",
                     f"min {r['min_s']:.2f} p50 {r['p50_s']:.2f} max {r['max_s']:.2f}",
                     f"max/session timeout {fmt(r['ratio_max_to_session_timeout'])}",
                     f"<{r['target_s']:g}s: {verdict(r['pass'])}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.run_all", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="shrunk sizes; whole run ~3 minutes")
    p.add_argument("--with-apache", action="store_true", help="also measure Apache Kafka where supported")
    p.add_argument("--json", metavar="FILE", help="append each benchmark's JSON line to FILE")
    args = p.parse_args(argv)
    common = (["--quick"] if args.quick else []) + (["--with-apache"] if args.with_apache else [])
    plan = [
        ("produce_throughput", produce_throughput.main, common),
        ("consume_throughput", consume_throughput.main, common),
        ("e2e_latency", e2e_latency.main, common),
        ("startup_recovery", startup_recovery.main, ["--quick"] if args.quick else []),
        ("cluster_throughput", cluster_throughput.main, ["--quick"] if args.quick else []),
        ("failover", failover.main, ["--quick"] if args.quick else []),
    ]
    results: dict[str, dict] = {}
    failed: list[str] = []
    t0 = time.monotonic()
    for name, fn, fargs in plan:
        print(f"\n=== {name} {' '.join(fargs)}", flush=True)
        try:
            results[name] = fn(fargs)
        except Exception:  # keep going: one broken benchmark should not hide the others
            traceback.print_exc()
            failed.append(name)
    rows = [("benchmark", "figure", "value", "ratio (same-run baseline)", "target")]
    for name, r in results.items():
        rows.extend(_rows(name, r))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    print(f"\n=== summary ({time.monotonic() - t0:.0f} s{', quick' if args.quick else ''})")
    for i, row in enumerate(rows):
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths))
    for name in failed:
        print(f"  {name}: ERROR (see traceback above)")
    if args.json:
        with open(args.json, "a") as f:
            for name, r in results.items():
                f.write(json.dumps({"benchmark": name, **r}) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
