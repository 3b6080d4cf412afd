"""Scrape time of a broker hosting 1,000 partitions (target: under 250 ms).

    python -m benchmarks.scrape_time [--partitions 1000] [--scrapes 20] [--naming strimzi|confluent|rules:FILE]
    python -m benchmarks.scrape_time --in-process [--partitions 1000,3000,10000] [--scrapes 9] [--kept]

Creates one topic with ``--partitions`` partitions on a fresh broker with ``prometheus.listener``, produces one
record to every partition (so per-topic meters and request timers are live), then times ``GET /metrics`` end to
end from this process. Prints the median and max, the page size and series count, and a same-run baseline: the
scrape of the same broker before the topic existed (ratio = 1,000-partition scrape / baseline scrape). The first
scrape after the topic exists names the new MBeans by the rule file: it is reported apart, not in median and max.
The last line is one JSON object.

``--in-process`` times the page alone (issue 20): a standalone broker in this process, the partitions as topics
of 100, the page rendered ``--scrapes`` times 0.6 s apart (so the partition states are read afresh each time, as at
Prometheus' pace), after a first render that names the new rows (reported apart). No HTTP, no network, no other process:
what is left is the exporter and the broker's row producers. Prints min and median per size, and the longest of
the render's steps (``exporter.collector.render_steps``: a broker's loop serves requests between them, so the
longest step, not the whole render, is how long a scrape can hold a request back), and the longest collection of
Python's cyclic collector from the first render to the last (the broker's thresholds, ``broker.__main__.tune_gc``);
``--no-freeze`` leaves out what keeps a first render's new objects out of the young collections
(``exporter.collector.freeze_until_full_collection``), for a same-run comparison. ``--kept`` instead prints the
memory the exporter keeps after two renders (tracemalloc, so no timing): what naming costs per partition.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Generator
from pathlib import Path

from benchmarks._common import create_topic, emit_json, fmt, our_broker, ratio, verdict
from kafkascope.local.broker_process import free_port

TARGET_MS = 250.0
PER_TOPIC = 100  # partitions per topic in --in-process, as benchmarks.partition_scale creates them


def scrape(port: int) -> tuple[float, bytes]:
    t = time.perf_counter()
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
    return (time.perf_counter() - t) * 1000, body


def timed(port: int, n: int) -> tuple[list[float], bytes]:
    times, body = [], b""
    for _ in range(n):
        ms, body = scrape(port)
        times.append(ms)
    return times, body


def timed_steps(steps: Generator[None, None, bytes]) -> tuple[float, float, int, bytes]:
    """A stepped render run whole: its time and its longest step (ms; what holds a broker's loop), the steps, the
    page."""
    longest, n, start = 0.0, 0, time.perf_counter()
    t = start
    while True:
        try:
            next(steps)
        except StopIteration as done:
            end = time.perf_counter()
            return (end - start) * 1000, max(longest, end - t) * 1000, n + 1, done.value
        now = time.perf_counter()
        longest, n, t = max(longest, now - t), n + 1, now


@contextlib.asynccontextmanager
async def standalone_broker(partitions: int) -> AsyncIterator[object]:
    """A started standalone broker in this process with `partitions` in topics of `PER_TOPIC`, metrics on (the
    registry is read in process, the listener unused); stopped and its logs removed on exit."""
    from broker.broker import Broker
    from broker.config import BrokerConfig

    with tempfile.TemporaryDirectory(prefix="kscope-scrape-") as d:
        b = Broker(BrokerConfig.from_properties({"log.dirs": str(Path(d) / "logs"),
                                                 "listeners": "PLAINTEXT://127.0.0.1:0",
                                                 "prometheus.listener": "127.0.0.1:0",
                                                 "offsets.topic.num.partitions": "1"}))
        await b.start()
        try:
            for i in range(0, partitions, PER_TOPIC):
                b.create_topic(f"scrape-{i // PER_TOPIC:05d}", min(PER_TOPIC, partitions - i), 1)
            yield b
        finally:
            await b.stop()


async def render_times(partitions: int, scrapes: int, naming: str
                       ) -> tuple[tuple[float, float], list[float], list[float], int, bytes, tuple[int, float]]:
    """The first render's time and longest step (ms; it names every row), then `scrapes` in-process render times
    and longest steps of a fresh standalone broker with `partitions`, the last render's steps, its page, and the
    collections from the first render to the last: how many, the longest (ms; broker.metrics.runtime.GcStats)."""
    from broker.metrics.runtime import GcStats
    from exporter.collector import build_prometheus_registry, render_steps

    async with standalone_broker(partitions) as b:
        prom = build_prometheus_registry(b.metrics.registry, naming)  # type: ignore[attr-defined]
        collections = GcStats()
        collections.install()
        try:
            first = timed_steps(render_steps(prom))[:2]   # names every new row: reported apart
            times, longest, steps = [], [], 0
            for _ in range(scrapes):
                await asyncio.sleep(0.6)
                whole, step, steps, body = timed_steps(render_steps(prom))
                times.append(whole)
                longest.append(step)
        finally:
            collections.uninstall()
        n = sum(count for count, _ in collections.per_generation.values())
        return first, times, longest, steps, body, (n, collections.longest_s * 1000)


async def kept_bytes(partitions: int, naming: str) -> int:
    """Bytes the exporter keeps (tracemalloc, after a collection) from two renders of a fresh standalone broker
    with `partitions`: what naming and line starts hold, the page itself freed."""
    import tracemalloc

    from exporter.collector import build_prometheus_registry, render

    async with standalone_broker(partitions) as b:
        prom = build_prometheus_registry(b.metrics.registry, naming)  # type: ignore[attr-defined]
        gc.collect()
        tracemalloc.start()
        try:
            render(prom)
            render(prom)
            gc.collect()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()


def in_process(sizes: list[int], scrapes: int, naming: str, freeze: bool = True) -> dict:
    from broker.__main__ import tune_gc
    from exporter import collector

    kept, thresholds = collector.FREEZE_AFTER_NAMED, gc.get_threshold()
    tune_gc()   # as the broker process
    if not freeze:
        collector.FREEZE_AFTER_NAMED = 1 << 62
    try:
        out = _in_process(sizes, scrapes, naming, freeze)
    finally:
        collector.FREEZE_AFTER_NAMED = kept
        gc.set_threshold(*thresholds)
    emit_json("scrape_time", out)
    return out


def _in_process(sizes: list[int], scrapes: int, naming: str, freeze: bool) -> dict:
    import os

    out: dict = {"in_process": True, "naming": naming, "freeze": freeze, "sizes": {}}
    for n in sizes:
        load = os.getloadavg()[0]
        first, times, longest, steps, body, collected = asyncio.run(render_times(n, scrapes, naming))
        row = {"min_ms": round(min(times), 1), "median_ms": round(statistics.median(times), 1),
               "longest_step_median_ms": round(statistics.median(longest), 2),
               "longest_step_max_ms": round(max(longest), 2), "steps": steps,
               "first_ms": round(first[0], 1), "first_longest_step_ms": round(first[1], 1),
               "collections": collected[0], "collection_max_ms": round(collected[1], 1),
               "series": sum(1 for line in body.splitlines() if line and not line.startswith(b"#")),
               "bytes": len(body), "loadavg_1m": round(load, 2)}
        out["sizes"][n] = row
        print(f"render, {n:,} partitions in process ({naming}): min {fmt(row['min_ms'])} ms, median "
              f"{fmt(row['median_ms'])} ms of {scrapes}; in {steps} steps, the longest (what holds the loop) median "
              f"{fmt(row['longest_step_median_ms'])} ms, max {fmt(row['longest_step_max_ms'])} ms, ratio to the "
              f"whole {fmt(ratio(row['longest_step_median_ms'], row['median_ms']))}; {row['series']:,} series, "
              f"{len(body) / 1e6:.1f} MB (load {load:.1f}); the first render, naming every row: "
              f"{fmt(row['first_ms'])} ms, longest step {fmt(row['first_longest_step_ms'])} ms; "
              f"{row['collections']} collections, the longest {fmt(row['collection_max_ms'])} ms", flush=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.scrape_time", description=__doc__.splitlines()[0])
    p.add_argument("--partitions", default="1000", help="a number; with --in-process, a comma-separated list")
    p.add_argument("--scrapes", type=int, default=None, help="timed scrapes (default 20; 9 with --in-process)")
    p.add_argument("--naming", default="strimzi", help="prometheus.naming: strimzi, confluent or rules:/path/file.yml")
    p.add_argument("--in-process", action="store_true", help="time render() in this process, no HTTP (see above)")
    p.add_argument("--no-freeze", action="store_true", help="with --in-process: a first render's objects not frozen")
    p.add_argument("--kept", action="store_true", help="with --in-process: memory the exporter keeps instead")
    args = p.parse_args(argv)
    try:
        sizes = [int(x) for x in args.partitions.split(",")]
    except ValueError:
        p.error(f"--partitions: not a number or list of numbers: {args.partitions!r}")
    if any(n < 1 for n in sizes) or (len(sizes) > 1 and not args.in_process):
        p.error("--partitions: positive, and a list only with --in-process")
    if args.in_process and args.kept:
        kept = {n: asyncio.run(kept_bytes(n, args.naming)) for n in sizes}
        for n, nbytes in kept.items():
            print(f"kept by the exporter after two renders, {n:,} partitions ({args.naming}): {nbytes / 1e6:.1f} MB, "
                  f"{nbytes / n / 1024:.1f} KiB a partition")
        out = {"kept_bytes": kept, "naming": args.naming}
        emit_json("scrape_time", out)
        return out
    if args.in_process:
        return in_process(sizes, args.scrapes or 9, args.naming, freeze=not args.no_freeze)
    args.partitions, args.scrapes = sizes[0], args.scrapes or 20
    from confluent_kafka import Producer

    mport = free_port()
    with our_broker(**{"prometheus.listener": f"127.0.0.1:{mport}", "prometheus.naming": args.naming}) as b:
        base, _ = timed(mport, args.scrapes)
        create_topic(b.bootstrap, "scrape-bench", args.partitions, timeout_s=120)
        prod = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
        for part in range(args.partitions):
            prod.produce("scrape-bench", b"v" * 100, partition=part)
        assert prod.flush(60) == 0
        times, body = timed(mport, args.scrapes)
    first, times = times[0], times[1:]   # the first names every new row (exporter.jmx_engine): reported apart
    med, worst, med_base = statistics.median(times), max(times), statistics.median(base)
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    passed = med < TARGET_MS
    print(f"scrape with {args.partitions} partitions ({args.naming}): median {fmt(med)} ms, max {fmt(worst)} ms, "
          f"{len(body) / 1e6:.2f} MB, {series:,} series  [{verdict(passed)}: median < {TARGET_MS:.0f} ms]")
    print(f"baseline (same broker, no topic): median {fmt(med_base)} ms; ratio {fmt(ratio(med, med_base))}")
    print(f"the first scrape after the partitions were made (naming every new row): {fmt(first)} ms")
    result = {"partitions": args.partitions, "naming": args.naming, "median_ms": round(med, 1),
              "max_ms": round(worst, 1), "first_ms": round(first, 1), "baseline_median_ms": round(med_base, 1), "ratio": ratio(med, med_base),
              "bytes": len(body), "series": series, "pass": passed}
    emit_json("scrape_time", result)
    return result


if __name__ == "__main__":
    main()
