"""How long a Prometheus scrape holds back the requests a broker serves meanwhile (issue 20).

    python -m benchmarks.scrape_pause [--partitions 10000] [--seconds 15] [--rounds 2] [--every-ms 5]
                                      [--scrape-every 2]

One of our brokers (standalone, ``prometheus.listener`` on) with ``--partitions`` partitions in topics of 100
(``benchmarks.partition_scale.topic_plan``). A
probe sends an ApiVersions request every ``--every-ms`` on one connection and times each answer from the moment
it was due; ApiVersions costs the broker almost nothing, so that time is how long a request arriving then waited
for the event loop. Phases of ``--seconds`` alternate, ``--rounds`` of each: *quiet* (no scrape) and *scraped* (a
thread GETs /metrics every ``--scrape-every`` seconds, as Prometheus would). Two scrapes before the first phase
name the new rows, so the figure is the steady state; the probe also runs through the first of them (*naming*:
every new row named by the rules, exporter.collector.NAMING_PAUSE_SHARE), whose time is printed too. Prints p50 / p99 / max of the probe's latencies per phase
kind, and the ratios scraped / quiet (the same run's baseline). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import threading
import time
import urllib.request

from benchmarks._common import emit_json, fmt, our_broker, ratio
from benchmarks.partition_scale import topic_plan
from common.wire import recv_frame
from kafkascope.local.broker_process import free_port


def api_versions_request(correlation_id: int) -> bytes:
    """A size-prefixed ApiVersions v0 request (header v1, empty body): the cheapest request a broker answers."""
    body = struct.pack(">hhih", 18, 0, correlation_id, 5) + b"probe"
    return struct.pack(">i", len(body)) + body


def probe(host: str, port: int, seconds: float, every_s: float,
          until: threading.Event | None = None) -> list[float]:
    """Latencies (ms) of ApiVersions due every `every_s` for `seconds` on one connection, each from the moment it
    was due: a probe held up by a stalled broker delays the ones behind it, and those count their wait too (no
    coordinated omission; a probe timed from its actual send would hide all but one of a long stall's victims).
    `until`: stop early once it is set."""
    out: list[float] = []
    with socket.create_connection((host, port), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.perf_counter()
        n = int(seconds / every_s)
        for i in range(n):
            if until is not None and until.is_set():
                break
            t = start + i * every_s   # when this probe was due
            s.sendall(api_versions_request(i))
            if struct.unpack(">i", recv_frame(s)[:4])[0] != i:
                raise ConnectionError(f"answer {i} out of order")
            out.append((time.perf_counter() - t) * 1000)
            pause = start + (i + 1) * every_s - time.perf_counter()
            if pause > 0:
                time.sleep(pause)   # pacing the probe, not waiting for a condition
    return out


def summary(rtts: list[float]) -> dict:
    """p50, p99 and max (ms) of round trips, and their count."""
    ordered = sorted(rtts)
    return {"count": len(ordered), "p50_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
            "max_ms": round(ordered[-1], 3)}


def _scraper(port: int, every_s: float, stop: threading.Event, times: list[float]) -> None:
    while not stop.wait(every_s):
        t = time.perf_counter()
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read()
        times.append((time.perf_counter() - t) * 1000)


def _first_scrape(port: int, took: list[float], done: threading.Event) -> None:
    t = time.perf_counter()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=600).read()
        took.append((time.perf_counter() - t) * 1000)
    finally:
        done.set()


def create_partitions(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(name, n, 1) for name, n in topic_plan(partitions, prefix="pause")]
    for fut in admin.create_topics(topics, operation_timeout=300, request_timeout=300).values():
        fut.result(300)


def run(args: argparse.Namespace) -> dict:
    mport = free_port()
    load = [os.getloadavg()[0]]
    with our_broker(**{"prometheus.listener": f"127.0.0.1:{mport}"}) as b:
        create_partitions(b.bootstrap, args.partitions)
        host, port = b.bootstrap.split(":")
        first: list[float] = []
        done = threading.Event()
        t = threading.Thread(target=_first_scrape, args=(mport, first, done), daemon=True)
        t.start()   # names every new row: probed throughout
        naming = probe(host, int(port), 600, args.every_ms / 1000, until=done)
        t.join(600)
        urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=600).read()  # makes the line starts
        phases: dict[str, list[float]] = {"quiet": [], "scraped": []}
        scrapes: list[float] = []
        for _ in range(args.rounds):
            phases["quiet"] += probe(host, int(port), args.seconds, args.every_ms / 1000)
            stop = threading.Event()
            t = threading.Thread(target=_scraper, args=(mport, args.scrape_every, stop, scrapes), daemon=True)
            t.start()
            phases["scraped"] += probe(host, int(port), args.seconds, args.every_ms / 1000)
            stop.set()
            t.join(120)
    load.append(os.getloadavg()[0])
    out = {kind: summary(rtts) for kind, rtts in phases.items()}
    out["naming"] = {**(summary(naming) if naming else {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}),
                     "scrape_ms": round(first[0], 1) if first else None}
    out["scrapes"] = len(scrapes)
    out["scrape_median_ms"] = round(statistics.median(scrapes), 1) if scrapes else None
    out["ratios"] = {k: ratio(out["scraped"][k], out["quiet"][k]) for k in ("p50_ms", "p99_ms", "max_ms")}
    out["loadavg_1m_start_end"] = [round(x, 2) for x in load]
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="benchmarks.scrape_pause", description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=10_000)
    p.add_argument("--seconds", type=float, default=15.0, help="per phase")
    p.add_argument("--rounds", type=int, default=2, help="quiet + scraped phases")
    p.add_argument("--every-ms", type=float, default=5.0, help="probe interval")
    p.add_argument("--scrape-every", type=float, default=2.0, help="seconds between scrapes")
    args = p.parse_args(argv)
    if args.partitions < 1 or args.seconds <= 0 or args.rounds < 1 or args.every_ms <= 0 or args.scrape_every <= 0:
        p.error("--partitions, --seconds, --rounds, --every-ms and --scrape-every must be positive")
    out = run(args)
    print(f"ApiVersions due every {fmt(args.every_ms)} ms, {args.partitions:,} partitions, "
          f"{args.rounds} x {fmt(args.seconds)} s per phase; {out['scrapes']} scrapes, median "
          f"{fmt(out['scrape_median_ms'])} ms; load {out['loadavg_1m_start_end']}")
    for kind in ("quiet", "scraped"):
        r = out[kind]
        print(f"  {kind:8s} p50 {fmt(r['p50_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, max {fmt(r['max_ms'])} ms "
              f"({r['count']:,} probes)")
    r = out["naming"]
    print(f"  naming   p50 {fmt(r['p50_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, max {fmt(r['max_ms'])} ms "
          f"({r['count']:,} probes), during the first scrape: {fmt(r['scrape_ms'])} ms")
    q = out["ratios"]
    print(f"  scraped / quiet: p50 {fmt(q['p50_ms'])}, p99 {fmt(q['p99_ms'])}, max {fmt(q['max_ms'])}")
    emit_json("scrape_pause", {"settings": vars(args), **out})
    return out


if __name__ == "__main__":
    main()
