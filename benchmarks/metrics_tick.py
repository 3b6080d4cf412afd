"""How long the broker's metrics tick holds the event loop (issue 20): the whole tick against its longest step.

    python -m benchmarks.metrics_tick [--seconds 80] [--rate 1000] [--rounds 3]

Once a second the broker moves every latency recorded since the last tick into its timers' HDR windows, and every
ten seconds it takes the interval that leaves the window out again (exporter/timer.py). Nothing else runs on the
loop meanwhile. This drives two registries with the request timers a partition leader has under
`benchmarks.vs_apache`'s e2e load at ``--rate`` records/s (~5 records a batch: Produce at rate/5 a second, each
follower's and the consumer's Fetch as often, every Fetch timed under Fetch and under FetchFollower or
FetchConsumer, as Kafka does), with the same values, on a manual clock. One is ticked whole (`Registry.tick`, what
a scrape does), the other step by step (`Registry.tick_steps`, what the broker's tick loop does, serving
requests between the steps). Per tick: the whole tick's time and the longest step's, in ms, median and worst over
``--seconds`` ticks (the worst is a tick at which an interval leaves the window), best and worst of ``--rounds``.
A second table times the HDR recording itself: ``record_value`` per value against ``common.hdr.record_counts``
on the same values. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks._common import emit_json, fmt, print_table, ratio
from broker.metrics.requests import RequestGroup
from common.clock import ManualClock
from common.hdr import LATENCY_US, record_counts
from exporter.registry import Registry

# (request, share of the Produce rate, median ms of queue, local, remote, response queue, send): a partition
# leader's requests under the e2e load (remote: a follower's or consumer's fetch is parked until the next batch).
_LOAD = (("Produce", 1, 0.03, 0.15, 1.0, 0.02, 0.05),
         ("Fetch", 3, 0.03, 0.08, 4.0, 0.02, 0.05),
         ("FetchFollower", 2, 0.03, 0.08, 4.0, 0.02, 0.05),
         ("FetchConsumer", 1, 0.03, 0.08, 4.0, 0.02, 0.05))


def _second(rnd: random.Random, batches: int) -> list[tuple[str, tuple[float, ...]]]:
    """One second's requests: (request name, (queue, local, remote, respq, send, total) ms)."""
    out = []
    for name, share, *medians in _LOAD:
        for _ in range(batches * share):
            parts = tuple(rnd.lognormvariate(0, 0.8) * m for m in medians)
            out.append((name, (*parts, sum(parts))))
    return out


def _round(seconds: int, batches: int, seed: int) -> tuple[list[float], list[float]]:
    """(whole tick ms, longest step ms) per tick."""
    rnd = random.Random(seed)
    clocks = ManualClock(), ManualClock()
    regs = Registry(clocks[0]), Registry(clocks[1])
    groups = [{name: RequestGroup(r, name) for name, *_ in _LOAD} for r in regs]
    whole, longest = [], []
    for _ in range(seconds):
        for name, times in _second(rnd, batches):
            for g in groups:
                g[name].record(9, *times)
        for c in clocks:
            c.advance(1000.0)
        start = time.perf_counter()
        regs[0].tick()
        whole.append((time.perf_counter() - start) * 1e3)
        worst, steps, start = 0.0, regs[1].tick_steps(), time.perf_counter()
        for _ in steps:
            now = time.perf_counter()
            worst, start = max(worst, now - start), now
        longest.append(max(worst, time.perf_counter() - start) * 1e3)
    return whole, longest


def _recording(values: int, seed: int) -> tuple[float, float]:
    """(µs per value with record_value, with record_counts) on the same `values` distinct latencies."""
    rnd = random.Random(seed)
    items = [(int(rnd.lognormvariate(7, 1.2)), 1) for _ in range(values)]
    h = LATENCY_US.new(word_size=4)
    start = time.perf_counter()
    for v, c in items:
        h.record_value(v, c)
    one = time.perf_counter() - start
    h = LATENCY_US.new(word_size=4)
    start = time.perf_counter()
    record_counts(h, items)
    bulk = time.perf_counter() - start
    return one / values * 1e6, bulk / values * 1e6


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.metrics_tick", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=int, default=80)
    p.add_argument("--rate", type=int, default=1000, help="records/s of the e2e load (5 a batch)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    ticks = [_round(args.seconds, max(args.rate // 5, 1), seed) for seed in range(args.rounds)]
    rec = [_recording(20_000, seed) for seed in range(args.rounds)]

    def span(xs: list[float]) -> list[float]:
        return [round(min(xs), 3), round(max(xs), 3)]

    result = {
        "whole_tick_ms": {"median": span([statistics.median(w) for w, _ in ticks]), "worst": span([max(w) for w, _ in ticks])},
        "longest_step_ms": {"median": span([statistics.median(s) for _, s in ticks]),
                            "worst": span([max(s) for _, s in ticks])},
        "record_us": {"record_value": span([a for a, _ in rec]), "record_counts": span([b for _, b in rec])},
    }
    result["ratio_worst_step_to_whole"] = ratio(max(max(s) for _, s in ticks), max(max(w) for w, _ in ticks))
    result["ratio_record_counts_to_value"] = ratio(statistics.median(b for _, b in rec),
                                                   statistics.median(a for a, _ in rec))
    print(f"{args.rate} records/s in batches of 5, {args.seconds} ticks, {args.rounds} rounds (best–worst)")
    r = result
    print_table([("ms per tick", "whole tick", "longest step", "ratio step/whole"),
                 ("median", "–".join(map(fmt, r["whole_tick_ms"]["median"])),
                  "–".join(map(fmt, r["longest_step_ms"]["median"])),
                  fmt(ratio(r["longest_step_ms"]["median"][1], r["whole_tick_ms"]["median"][1]))),
                 ("worst (an interval expires)", "–".join(map(fmt, r["whole_tick_ms"]["worst"])),
                  "–".join(map(fmt, r["longest_step_ms"]["worst"])), fmt(r["ratio_worst_step_to_whole"]))])
    print()
    print_table([("µs per value", "record_value", "record_counts", "ratio"),
                 ("HDR recording", "–".join(map(fmt, r["record_us"]["record_value"])),
                  "–".join(map(fmt, r["record_us"]["record_counts"])), fmt(r["ratio_record_counts_to_value"]))])
    emit_json("metrics_tick", {"settings": vars(args), "results": result})
    return result


if __name__ == "__main__":
    main()
