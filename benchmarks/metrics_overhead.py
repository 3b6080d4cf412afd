"""Produce throughput with broker metrics on vs off, in the same run (target: at most 5% apart).

    python -m benchmarks.metrics_overhead [--seconds 6] [--repeat 3] [--partitions 6] [--value-size 1024]

"on" is a broker with ``prometheus.listener`` set (every request timed into HDR timers, errors counted,
BrokerTopicMetrics marked) and scraped once a second during the run, as Prometheus would; "off" has no
listener (no BrokerMetrics at all). Runs are interleaved on/off and the median of ``--repeat`` is used.
Two producer shapes: ``bulk`` (the produce benchmark's: linger.ms=5, 1 MiB batches) and ``small``
(linger.ms=0, at most 50 records per batch: many small requests, where per-request cost shows most).
The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import urllib.request

from benchmarks._common import create_topic, emit_json, fmt, our_broker, produce, ratio, verdict
from kafkascope.local.broker_process import free_port

MAX_GAP = 0.05
SHAPES = {"bulk": {"queue.buffering.max.messages": 50000},
          "small": {"linger.ms": 0, "batch.num.messages": 50, "queue.buffering.max.messages": 20000}}


def _scraper(port: int, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        except OSError:
            pass


def run(metrics_on: bool, shape: str, args: argparse.Namespace) -> float:
    props = {}
    mport = free_port()
    if metrics_on:
        props["prometheus.listener"] = f"127.0.0.1:{mport}"
    topic = "bench-metrics"
    with our_broker(**props) as b:
        create_topic(b.bootstrap, topic, args.partitions)
        stop = threading.Event()
        t = threading.Thread(target=_scraper, args=(mport, stop), daemon=True)
        if metrics_on:
            t.start()
        try:
            r = produce(b.bootstrap, topic, args.partitions, records=args.records, seconds=args.seconds,
                        value_size=args.value_size, config=SHAPES[shape])
        finally:
            stop.set()
        return r["mb_per_s"]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.metrics_overhead", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--records", type=int, default=5_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = p.parse_args(argv)
    result: dict = {}
    ok = True
    for shape in args.shapes:
        on, off = [], []
        for _ in range(args.repeat):
            off.append(run(False, shape, args))
            on.append(run(True, shape, args))
        m_on, m_off = statistics.median(on), statistics.median(off)
        r = ratio(m_on, m_off)
        passed = r is not None and r >= 1 - MAX_GAP
        ok &= passed
        print(f"{shape:5s}: metrics on {fmt(m_on)} MB/s, off {fmt(m_off)} MB/s (median of {args.repeat}; "
              f"runs on={on} off={off}); on/off = {fmt(r)}  [{verdict(passed)}: >= {1 - MAX_GAP}]", flush=True)
        result[shape] = {"on_mb_s": m_on, "off_mb_s": m_off, "ratio_on_off": r, "runs_on": on, "runs_off": off}
    result["pass"] = ok
    emit_json("metrics_overhead", result)
    return result


if __name__ == "__main__":
    main()
