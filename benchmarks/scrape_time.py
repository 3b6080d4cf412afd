"""Scrape time of a broker hosting 1,000 partitions (target: under 250 ms).

    python -m benchmarks.scrape_time [--partitions 1000] [--scrapes 20] [--naming strimzi|confluent|rules:FILE]
    python -m benchmarks.scrape_time --in-process [--partitions 1000,3000,10000] [--scrapes 9]

Creates one topic with ``--partitions`` partitions on a fresh broker with ``prometheus.listener``, produces one
record to every partition (so per-topic meters and request timers are live), then times ``GET /metrics`` end to
end from this process. Prints the median and max, the page size and series count, and a same-run baseline: the
scrape of the same broker before the topic existed (ratio = 1,000-partition scrape / baseline scrape). The max
is the first scrape after the topic exists, which matches the new MBeans against the rule file.
The last line is one JSON object.

``--in-process`` times the page alone (issue 20): a standalone broker in this process, the partitions as topics
of 100, ``render`` called ``--scrapes`` times 0.6 s apart (so the partition states are read afresh each time, as at
Prometheus' pace), after one unrecorded render that names the new rows. No HTTP, no network, no other process:
what is left is the exporter and the broker's row producers. Prints min and median per size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import urllib.request
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


async def render_times(partitions: int, scrapes: int, naming: str) -> tuple[list[float], bytes]:
    """`scrapes` in-process render times (ms) of a fresh standalone broker with `partitions`, and the last page."""
    from broker.broker import Broker
    from broker.config import BrokerConfig
    from exporter.collector import build_prometheus_registry, render

    with tempfile.TemporaryDirectory(prefix="kscope-scrape-") as d:
        b = Broker(BrokerConfig.from_properties({"log.dirs": str(Path(d) / "logs"),
                                                 "listeners": "PLAINTEXT://127.0.0.1:0",
                                                 "prometheus.listener": "127.0.0.1:0",  # metrics on (unused)
                                                 "offsets.topic.num.partitions": "1"}))
        await b.start()
        try:
            for i in range(0, partitions, PER_TOPIC):
                b.create_topic(f"scrape-{i // PER_TOPIC:05d}", min(PER_TOPIC, partitions - i), 1)
            prom = build_prometheus_registry(b.metrics.registry, naming)
            body = render(prom)
            times = []
            for _ in range(scrapes):
                await asyncio.sleep(0.6)
                t = time.perf_counter()
                body = render(prom)
                times.append((time.perf_counter() - t) * 1000)
            return times, body
        finally:
            await b.stop()


def in_process(sizes: list[int], scrapes: int, naming: str) -> dict:
    import os

    out: dict = {"in_process": True, "naming": naming, "sizes": {}}
    for n in sizes:
        load = os.getloadavg()[0]
        times, body = asyncio.run(render_times(n, scrapes, naming))
        row = {"min_ms": round(min(times), 1), "median_ms": round(statistics.median(times), 1),
               "series": sum(1 for line in body.splitlines() if line and not line.startswith(b"#")),
               "bytes": len(body), "loadavg_1m": round(load, 2)}
        out["sizes"][n] = row
        print(f"render, {n:,} partitions in process ({naming}): min {fmt(row['min_ms'])} ms, median "
              f"{fmt(row['median_ms'])} ms of {scrapes}, {row['series']:,} series, {len(body) / 1e6:.1f} MB "
              f"(load {load:.1f})", flush=True)
    emit_json("scrape_time", out)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.scrape_time", description=__doc__.splitlines()[0])
    p.add_argument("--partitions", default="1000", help="a number; with --in-process, a comma-separated list")
    p.add_argument("--scrapes", type=int, default=None, help="timed scrapes (default 20; 9 with --in-process)")
    p.add_argument("--naming", default="strimzi", help="prometheus.naming: strimzi, confluent or rules:/path/file.yml")
    p.add_argument("--in-process", action="store_true", help="time render() in this process, no HTTP (see above)")
    args = p.parse_args(argv)
    try:
        sizes = [int(x) for x in args.partitions.split(",")]
    except ValueError:
        p.error(f"--partitions: not a number or list of numbers: {args.partitions!r}")
    if any(n < 1 for n in sizes) or (len(sizes) > 1 and not args.in_process):
        p.error("--partitions: positive, and a list only with --in-process")
    if args.in_process:
        return in_process(sizes, args.scrapes or 9, args.naming)
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
    med, worst, med_base = statistics.median(times), max(times), statistics.median(base)
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    passed = med < TARGET_MS
    print(f"scrape with {args.partitions} partitions ({args.naming}): median {fmt(med)} ms, max {fmt(worst)} ms, "
          f"{len(body) / 1e6:.2f} MB, {series:,} series  [{verdict(passed)}: median < {TARGET_MS:.0f} ms]")
    print(f"baseline (same broker, no topic): median {fmt(med_base)} ms; ratio {fmt(ratio(med, med_base))}")
    result = {"partitions": args.partitions, "naming": args.naming, "median_ms": round(med, 1),
              "max_ms": round(worst, 1), "baseline_median_ms": round(med_base, 1), "ratio": ratio(med, med_base),
              "bytes": len(body), "series": series, "pass": passed}
    emit_json("scrape_time", result)
    return result


if __name__ == "__main__":
    main()
