"""Pool several `benchmarks.vs_apache --interleave` runs: how far apart two implementations really are.

    python -m benchmarks.pooled_ratio RUN.log [RUN.log ...] [--metric NAME ...] [--resamples 5000]

Each file is a run's output (or a .jsonl of result lines); every `{"benchmark": "vs_apache", ...}` line in it is
one run. An interleaved run has rounds: one pass of each implementation, minutes apart at most, so the pass of
the first label over the pass of the second in the same round is a *paired* ratio, with the machine's slow and
fast minutes mostly on both sides. For each metric this prints:

* the ratio of each run's medians (what vs_apache prints), their range and how many are at or below 1;
* the median of the paired round ratios over every run, with a bootstrap interval (rounds resampled with
  replacement, ``--resamples`` times, a fixed seed: the same files give the same interval);
* the same two for every A/A run in the files (one implementation against itself, `--impls X,X`): the spread a
  ratio of two equal clusters shows on this machine, which is the resolution of the A/B figures.

Runs are grouped by label pair and arrangement (interleaved, or one cluster after the other): a pair in the other
order, or the other arrangement, is its own group. In a run without ``--interleave`` a "round" is pass i of each
cluster, minutes apart rather than side by side: its pairing is weaker, and its run ratios say more.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

DEFAULT_METRICS = ("confluent e2e p50 ms", "confluent e2e p99 ms", "EndToEndLatency avg ms",
                   "EndToEndLatency p99 ms")


def runs_in(path: Path) -> list[dict]:
    """Every vs_apache result object in a file, in order."""
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{") and '"benchmark": "vs_apache"' in line:
            out.append(json.loads(line))
    return out


def pair_of(run: dict) -> tuple[str, str]:
    labels = list(run["runs"])
    if len(labels) < 2:
        raise ValueError(f"a vs_apache run of one implementation ({labels}) has no ratio")
    return labels[0], labels[1]


def round_ratios(run: dict, metric: str) -> list[float]:
    """First label's pass over the second's, round by round (pass i of each)."""
    a, b = pair_of(run)
    out = []
    for pa, pb in zip(run["runs"][a]["passes"], run["runs"][b]["passes"], strict=False):
        x, y = pa.get(metric), pb.get(metric)
        if x is not None and y:
            out.append(x / y)
    return out


def run_ratio(run: dict, metric: str) -> float | None:
    a, b = pair_of(run)
    x, y = run["results"][a].get(metric), run["results"][b].get(metric)
    return x / y if x is not None and y else None


def bootstrap_median(values: list[float], resamples: int, seed: int = 20) -> tuple[float, float]:
    """A 90% percentile interval of the median of `values` (resampled with replacement)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return meds[int(0.05 * (resamples - 1))], meds[int(0.95 * (resamples - 1))]


def summarise(runs: list[dict], metric: str, resamples: int) -> dict:
    per_run = [r for r in (run_ratio(run, metric) for run in runs) if r is not None]
    rounds = [x for run in runs for x in round_ratios(run, metric)]
    out: dict = {"runs": len(per_run), "rounds": len(rounds)}
    if per_run:
        out.update(run_min=min(per_run), run_max=max(per_run), runs_at_or_below_1=sum(r <= 1 for r in per_run))
    if rounds:
        low, high = bootstrap_median(rounds, resamples)
        out.update(round_median=statistics.median(rounds), interval_90=(low, high))
    return out


def arrangement(run: dict) -> str:
    return "interleaved" if run.get("settings", {}).get("interleave") else "one after the other"


def groups(paths: list[Path]) -> dict[tuple[str, str, str], list[dict]]:
    """(first label, second label, arrangement) -> the runs, in file order."""
    out: dict[tuple[str, str, str], list[dict]] = {}
    for path in paths:
        for run in runs_in(path):
            out.setdefault((*pair_of(run), arrangement(run)), []).append(run)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.pooled_ratio", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--metric", action="append", help=f"repeatable; default {', '.join(DEFAULT_METRICS)}")
    p.add_argument("--resamples", type=int, default=5000)
    args = p.parse_args(argv)
    metrics = args.metric or list(DEFAULT_METRICS)
    found = groups(args.files)
    if not found:
        raise SystemExit("pooled_ratio: no vs_apache result line in " + ", ".join(map(str, args.files)))
    report: dict = {}
    for (a, b, how), runs in found.items():
        print(f"\n{a} / {b}, {how}: {len(runs)} run(s)")
        print(f"  {'metric':<28} {'runs':>4} {'run ratios':>13} {'<=1':>4} {'rounds':>6} {'paired median':>13}"
              f" {'90% interval':>15}")
        for m in metrics:
            s = summarise(runs, m, args.resamples)
            report[f"{a}/{b}, {how}: {m}"] = s
            if not s["rounds"]:
                continue
            lo, hi = s["interval_90"]
            print(f"  {m:<28} {s['runs']:>4} {s['run_min']:>6.3f}-{s['run_max']:<6.3f} {s['runs_at_or_below_1']:>4}"
                  f" {s['rounds']:>6} {s['round_median']:>13.3f} {lo:>7.3f}-{hi:<7.3f}")
    print(json.dumps({"benchmark": "pooled_ratio", "files": [str(f) for f in args.files], "groups": report}))
    return report


if __name__ == "__main__":
    main()
