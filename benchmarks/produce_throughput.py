"""Produce throughput: confluent-kafka Producer, 1 KiB values, acks=1, linger.ms=5, batch.size=1 MiB.

    python -m benchmarks.produce_throughput [--seconds 10] [--records 5000000] [--partitions 1 6]
                                            [--value-size 1024] [--repeat 1] [--with-apache] [--profile DIR]

For each partition count, and for each target — our broker (a fresh `python -m broker` in a temp dir),
the NULL broker (`benchmarks.null_broker`: decodes Produce with the same codec and stores nothing) and,
with ``--with-apache``, real Apache Kafka — it produces up to ``--records`` records, stopping early after
``--seconds`` (the default is time-bounded: ~10 s per case), and reports MB/s (decimal) and records/s
measured from the first produce() to the last delivery report.

``--repeat N`` runs each target N times (interleaved) and uses the median — advisable on a busy machine.
Ratios printed, all measured in the same run: ours/null (target >= 0.5) and ours/apache; the absolute
target is >= 100 MB/s. The producer runs in this process, so on a 2-core machine client and broker compete
for CPU: compare ratios, not absolute numbers across machines.

``--profile DIR`` runs ``py-spy record`` (speedscope format, or collapsed stacks with ``--profile-format raw``) against our broker during each measured run.
The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from benchmarks._common import apache_kafka, create_topic, emit_json, fmt, our_broker, produce, ratio, verdict
from benchmarks.null_broker import NullBroker

TARGET_MB_S = 100.0
TARGET_RATIO_NULL = 0.5


def start_profiler(pid: int, out: Path, seconds: float) -> subprocess.Popen | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        print("  (py-spy not installed; not profiling)")
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt_ = "raw" if out.suffix == ".txt" else "speedscope"  # raw: collapsed stacks (flamegraph.pl input)
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--rate", "200", "--format", fmt_,
                             "--duration", str(int(seconds) + 30), "--nonblocking", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profiler(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def run_case(target: str, partitions: int, args: argparse.Namespace) -> dict:
    topic = f"bench-p{partitions}"
    kw = dict(records=args.records, seconds=args.seconds, value_size=args.value_size)
    if target == "null":
        with NullBroker(partitions=partitions, topic=topic) as nb:
            return produce(nb.bootstrap, topic, partitions, **kw)
    if target == "ours":
        with our_broker() as b:
            create_topic(b.bootstrap, topic, partitions)
            prof = None
            if args.profile:
                prof = start_profiler(b.proc.pid, Path(args.profile) / f"produce-p{partitions}.{args.profile_ext}",
                                      args.seconds)
            try:
                return produce(b.bootstrap, topic, partitions, **kw)
            finally:
                stop_profiler(prof)
    if target == "apache":
        with apache_kafka() as k:
            create_topic(k.bootstrap, topic, partitions)
            return produce(k.bootstrap, topic, partitions, **kw)
    raise ValueError(target)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks.produce_throughput", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="time bound per case (default 10)")
    p.add_argument("--records", type=int, default=5_000_000, help="record bound per case (default 5M)")
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--partitions", type=int, nargs="+", default=[1, 6])
    p.add_argument("--repeat", type=int, default=1, help="runs per target, interleaved; the median is used")
    p.add_argument("--with-apache", action="store_true", help="also measure real Apache Kafka")
    p.add_argument("--profile", metavar="DIR", help="py-spy record our broker into DIR")
    p.add_argument("--profile-format", choices=["speedscope", "raw"], default="speedscope",
                   help="py-spy output format (raw = collapsed stacks)")
    p.add_argument("--quick", action="store_true", help="3 s per case")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 3.0)
    args.profile_ext = "speedscope.json" if args.profile_format == "speedscope" else "txt"
    targets = ["null", "ours"] + (["apache"] if args.with_apache else [])
    result: dict = {"value_size": args.value_size, "cases": {}}
    print(f"# produce throughput: {args.value_size} B values, acks=1, linger.ms=5, batch.size=1MiB, "
          f"<= {args.seconds:g} s / {args.records:,} records per case")
    for n in args.partitions:
        case: dict = {}
        runs: dict[str, list[dict]] = {t: [] for t in targets}
        for i in range(args.repeat):  # targets interleaved, so drifting background load hits all alike
            for t in targets:
                r = run_case(t, n, args)
                runs[t].append(r)
                rep = f" run {i + 1}/{args.repeat}" if args.repeat > 1 else ""
                print(f"  partitions={n} {t:>6}{rep}: {fmt(r['mb_per_s'])} MB/s  {fmt(r['records_per_s'])} rec/s "
                      f"({fmt(r['records'])} records in {r['seconds']} s)", flush=True)
        for t in targets:
            case[t] = sorted(runs[t], key=lambda r: r["mb_per_s"])[len(runs[t]) // 2]  # median run
            if args.repeat > 1:
                case[t]["all_mb_per_s"] = [r["mb_per_s"] for r in runs[t]]
                print(f"  partitions={n} {t:>6} median: {fmt(case[t]['mb_per_s'])} MB/s", flush=True)
        ours = case["ours"]["mb_per_s"]
        case["ratio_ours_null"] = ratio(ours, case["null"]["mb_per_s"])
        case["ratio_ours_apache"] = ratio(ours, case["apache"]["mb_per_s"]) if "apache" in case else None
        case["pass"] = ours >= TARGET_MB_S and (case["ratio_ours_null"] or 0) >= TARGET_RATIO_NULL
        print(f"  partitions={n} ratio ours/null = {fmt(case['ratio_ours_null'])} (target >= {TARGET_RATIO_NULL}), "
              f"ours/apache = {fmt(case['ratio_ours_apache'])}; ours {fmt(ours)} MB/s (target >= "
              f"{TARGET_MB_S:g}) -> {verdict(case['pass'])}", flush=True)
        result["cases"][f"p{n}"] = case
    emit_json("produce_throughput", result)
    return result


if __name__ == "__main__":
    main()
