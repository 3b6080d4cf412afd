"""`kafkascope slo generate | report | lag-history`: the PySpark SLO jobs."""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import sys
import threading
import time
from pathlib import Path

from kafkascope.cli.common import time_ms
from kafkascope.cli.lag import add_tombstone_flag, lag_config
from lagmonitor.config import ConfigError
from slo.specs import SpecError, load_specs, parse_duration


def _generate(args: argparse.Namespace) -> int:
    from slo.generate import GenConfig, Incident, generate

    try:
        incidents = tuple(Incident.parse(s) for s in args.incident)
        start = datetime.datetime.fromtimestamp(time_ms(args.start) / 1000, datetime.UTC)
        cfg = GenConfig(days=args.days, clusters=args.clusters, topics=args.topics, partitions=args.partitions,
                        brokers=args.brokers, interval_s=int(parse_duration(args.interval)), records=args.records,
                        start=start, incidents=incidents)
    except ValueError as e:
        print(f"kafkascope slo generate: error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    info = generate(cfg, args.out)
    info["seconds"] = round(time.perf_counter() - t0, 3)
    print(json.dumps(info))
    return 0


def _report(args: argparse.Namespace) -> int:
    from slo.jobs.slo_report import slo_report
    from slo.spark import session

    try:
        specs = load_specs(args.spec)
        window_s = int(parse_duration(args.window)) if args.window else None
    except (OSError, SpecError, ValueError) as e:
        print(f"kafkascope slo report: error: {e}", file=sys.stderr)
        return 2
    if args.every:
        return _report_every(args, specs, window_s)
    spark = session("kafkascope-slo-report", args.master)
    try:
        report = slo_report(spark, args.sli_dir, specs, args.out, end_ms=args.end, window_s=window_s,
                            lag_dir=args.lag_dir)
    finally:
        spark.stop()
    print(json.dumps({"out": str(Path(args.out)), "window": report["window"], "overall": report["overall"],
                      "slos": {s["name"]: {"sli": s["sli"], "met": s["met"],
                                           "budget_remaining": s["occurrences"]["remaining_ratio"]}
                               for s in report["slos"]}}))
    return 0


def _report_every(args: argparse.Namespace, specs: list, window_s: int | None) -> int:
    """Reports on a schedule into the reports root --out (slo.live), one Spark session for all runs."""
    from slo import live
    from slo.jobs.slo_report import slo_report
    from slo.spark import session

    try:
        every_s = parse_duration(args.every)
        if every_s <= 0 or args.keep < 1:
            raise ValueError("--every must be positive and --keep at least 1")
    except ValueError as e:
        print(f"kafkascope slo report: error: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    spark = session("kafkascope-slo-report", args.master)

    cache = Path(args.out) / live.SLI_CACHE

    def build(tmp: Path, now_ms: int) -> None:
        t0 = time.perf_counter()
        live.compact(args.sli_dir, cache, now_ms)   # closed days: one file each instead of 8640
        r = slo_report(spark, args.sli_dir, specs, tmp, end_ms=args.end or live.window_end_ms(now_ms),
                       window_s=window_s, lag_dir=args.lag_dir, sli_cache=cache)
        print(json.dumps({"report": live.report_name(now_ms), "as_of": r["window"]["as_of"],
                          "seconds": round(time.perf_counter() - t0, 1),
                          "coverage": r["completeness"]["coverage"], "met": r["overall"]["met"],
                          "slos": r["overall"]["slos"], "synthetic": r["source"]["synthetic"]}), flush=True)

    try:
        live.run_schedule(args.out, build, every_s, args.keep, lambda: int(time.time() * 1000), stop.wait,
                          args.runs, log=lambda m: print(f"kafkascope slo report: {m}", file=sys.stderr, flush=True))
    finally:
        spark.stop()
    return 0


def _add_jobs(slo_sub: argparse._SubParsersAction) -> None:
    """`slo generate` and `slo report`."""
    gen = slo_sub.add_parser("generate", help="synthetic SLI interval files with scripted incidents")
    gen.add_argument("--days", type=float, default=14)
    gen.add_argument("--clusters", type=int, default=1)
    gen.add_argument("--topics", type=int, default=1)
    gen.add_argument("--partitions", type=int, default=3)
    gen.add_argument("--brokers", type=int, default=3, help="leader of partition p is p %% brokers")
    gen.add_argument("--interval", default="10s")
    gen.add_argument("--records", type=int, default=10, help="produce attempts per partition and interval")
    gen.add_argument("--start", default="2026-01-01T00:00:00", metavar="T", help="epoch ms or ISO time (UTC)")
    gen.add_argument("--incident", action="append", default=[], metavar="SPEC",
                     help="KIND@START+DURATION[:key=value,...], e.g. broker-down@2d3h+30m:cluster=c0,broker=1 "
                          "(kinds: broker-down, latency-spike, loss, no-traffic, gap)")
    gen.add_argument("--out", required=True, metavar="DIR")
    gen.set_defaults(run=_generate)

    rep = slo_sub.add_parser("report", help="14-day SLO report: Parquet tables, report.json, report.html")
    rep.add_argument("--sli-dir", required=True, metavar="DIR", help="xmonitor's SLI interval files")
    rep.add_argument("--spec", metavar="slos.yaml", help="OpenSLO v1 specs (default: the shipped SLOs)")
    rep.add_argument("--lag-dir", metavar="DIR", help="the lag monitor's history-dir (replayed at each report) "
                     "or the output of `slo lag-history` (consumer-lag SLO)")
    rep.add_argument("--end", type=time_ms, metavar="T", help="window end, epoch ms or ISO (default: last data)")
    rep.add_argument("--window", metavar="DURATION", help="e.g. 14d (default: the specs' timeWindow)")
    rep.add_argument("--out", required=True, metavar="DIR")
    rep.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    rep.add_argument("--every", metavar="DURATION", help="report on a schedule (e.g. 5m), window ending at each "
                     "run: --out is then a reports root (report-<time>/ directories, `latest`, schedule.json)")
    rep.add_argument("--keep", type=int, default=8, metavar="N", help="with --every: reports kept (8)")
    rep.add_argument("--runs", type=int, metavar="N", help="with --every: stop after N runs (default: until "
                     "SIGTERM/SIGINT)")
    rep.set_defaults(run=_report)


def _lag_history(args: argparse.Namespace) -> int:
    from slo.jobs.lag_history import lag_history
    from slo.spark import session

    try:
        config = lag_config(args)
    except (OSError, ConfigError) as e:
        print(f"kafkascope slo lag-history: error: {e}", file=sys.stderr)
        return 2
    spark = session("kafkascope-lag-history", args.master)
    try:
        counts = lag_history(spark, args.input, args.out, args.from_ms, args.to_ms, args.step, config)
    finally:
        spark.stop()
    print(json.dumps(counts))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """`kafkascope slo generate | report | lag-history`."""
    slo = subparsers.add_parser("slo", help="SLO batch jobs (PySpark)")
    slo_sub = slo.add_subparsers(dest="slo_command", metavar="JOB", required=True)
    hist = slo_sub.add_parser("lag-history", help="replay lag history through Burrow's rules: status intervals, "
                                                  "daily summary")
    hist.add_argument("--input", required=True, metavar="DIR", help="the lag monitor's history-dir")
    hist.add_argument("--out", required=True, metavar="DIR")
    hist.add_argument("--from", dest="from_ms", type=time_ms, metavar="T", help="epoch ms or ISO time")
    hist.add_argument("--to", dest="to_ms", type=time_ms, metavar="T", help="epoch ms or ISO time")
    hist.add_argument("--step", type=int, default=60, metavar="S", help="seconds between evaluations (60)")
    hist.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    hist.add_argument("--config", metavar="lag.yaml", help="the monitor's storage/evaluator settings")
    add_tombstone_flag(hist)
    hist.set_defaults(run=_lag_history)
    _add_jobs(slo_sub)
