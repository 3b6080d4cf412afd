"""Scrape time of a broker hosting 1,000 partitions (target: under 250 ms).

    python -m benchmarks.scrape_time [--partitions 1000] [--scrapes 20] [--naming strimzi|confluent|rules:FILE]

Creates one topic with ``--partitions`` partitions on a fresh broker with ``prometheus.listener``, produces one
record to every partition (so per-topic meters and request timers are live), then times ``GET /metrics`` end to
end from this process. Prints the median and max, the page size and series count, and a same-run baseline: the
scrape of the same broker before the topic existed (ratio = 1,000-partition scrape / baseline scrape). The max
is the first scrape after the topic exists, which matches the new MBeans against the rule file.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request

from benchmarks._common import create_topic, emit_json, fmt, our_broker, ratio, verdict
from kafkascope.local.broker_process import free_port

TARGET_MS = 250.0


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


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.scrape_time", description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--scrapes", type=int, default=20)
    p.add_argument("--naming", default="strimzi", help="prometheus.naming: strimzi, confluent or rules:/path/file.yml")
    args = p.parse_args(argv)
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
