"""Same-run before/after: produce, consume, replicated and e2e benchmarks on a git ref and on this checkout.

    python -m benchmarks.before_after --ref 4298b0a [--after REF] [--rounds 3] [--quick]

The ref (and --after, else this checkout as it is) is checked out into a temporary worktree; each round runs every benchmark once on the ref, then once here
(the order alternates between rounds, so drifting background load hits both alike). Each benchmark already measures
its own baseline (null broker, TCP echo) in the same process; this prints, per figure, the range over the rounds
for each side and the ratio of medians after/before. A refactor that costs nothing shows ratios near 1.0 within the
run-to-run spread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks._common import emit_json, fmt

ROOT = Path(__file__).resolve().parents[1]

# benchmark module, its arguments, and the figures taken from its JSON line (name, extractor, higher is better)
Figure = tuple[str, Callable[[dict], float], bool]
BENCHMARKS: dict[str, tuple[list[str], list[Figure]]] = {
    "produce_throughput": (["--partitions", "1", "6"], [
        ("produce 1 partition MB/s", lambda r: r["cases"]["p1"]["ours"]["mb_per_s"], True),
        ("produce 6 partitions MB/s", lambda r: r["cases"]["p6"]["ours"]["mb_per_s"], True),
        ("produce 1 partition ours/null", lambda r: r["cases"]["p1"]["ratio_ours_null"], True),
    ]),
    "consume_throughput": (["--no-kcat"], [
        ("consume MB/s", lambda r: r["ours"]["consume"]["mb_per_s"], True),
    ]),
    "cluster_throughput": ([], [
        ("3 brokers acks=all RF=3 MB/s", lambda r: r["throughput"]["rf3_acks_all"]["mb_per_s"], True),
        ("3 brokers acks=all RF=3 e2e p50 ms", lambda r: r["latency"]["rf3_acks_all"]["p50_ms"], False),
        ("3 brokers acks=all RF=3 e2e p99 ms", lambda r: r["latency"]["rf3_acks_all"]["p99_ms"], False),
    ]),
    "e2e_latency": ([], [
        ("e2e p50 ms", lambda r: r["ours"]["p50_ms"], False),
        ("e2e p99 ms", lambda r: r["ours"]["p99_ms"], False),
    ]),
}


def run_one(checkout: Path, module: str, args: list[str]) -> dict:
    """Run `python -m benchmarks.<module>` with `checkout` as the working directory (so its code is imported)."""
    p = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args], cwd=checkout, capture_output=True,
                       text=True, timeout=900)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('{"benchmark"')]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{module} in {checkout} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="the 'before' commit")
    ap.add_argument("--after", help="the 'after' commit (default: this checkout, uncommitted changes included)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    ap.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), help="a subset of the benchmarks")
    args = ap.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="kafkascope-before-") as tmp:
        before = Path(tmp) / "before"
        after = Path(tmp) / "after" if args.after else ROOT
        for path, ref in ((before, args.ref), (after, args.after)):
            if ref:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(path), ref],
                               check=True, capture_output=True)
        try:
            for rnd in range(args.rounds):
                sides = [("before", before), ("after", after)]
                for side, checkout in (sides if rnd % 2 == 0 else sides[::-1]):
                    for name in names:
                        bargs, extract = BENCHMARKS[name]
                        result = run_one(checkout, name, [*bargs, *(["--quick"] if args.quick else [])])
                        for label, get, _ in extract:
                            figures.setdefault(label, {"before": [], "after": []})[side].append(get(result))
                        print(f"round {rnd + 1} {side:>6} {name}: " + ", ".join(
                            f"{label} {fmt(get(result))}" for label, get, _ in extract), flush=True)
        finally:
            for path in {before, after} - {ROOT}:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False,
                               capture_output=True)
    summary = {}
    higher = {label: hb for name in names for label, _, hb in BENCHMARKS[name][1]}
    for label, sides in figures.items():
        b, a = statistics.median(sides["before"]), statistics.median(sides["after"])
        ratio = a / b if b else None
        summary[label] = {"before": sides["before"], "after": sides["after"], "ratio_after_before": ratio,
                          "higher_is_better": higher[label]}
        print(f"{label}: before {fmt(min(sides['before']))}–{fmt(max(sides['before']))}, after "
              f"{fmt(min(sides['after']))}–{fmt(max(sides['after']))}; after/before (medians) {fmt(ratio)}",
              flush=True)
    out = {"ref": args.ref, "after": args.after or "working tree", "rounds": args.rounds, "figures": summary}
    emit_json("before_after", out)
    return out


if __name__ == "__main__":
    main()
