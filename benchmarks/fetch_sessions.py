"""Per-request Fetch cost with an incremental fetch session (KIP-227) against a sessionless full fetch.

    python -m benchmarks.fetch_sessions [--partitions 30] [--iterations 2000]

One in-process standalone broker (no socket: each request frame goes through the server's dispatch, i.e.
parse, handler and response encoding, as a connection would), two topics of --partitions partitions, a
consumer caught up on all of them. Per iteration a 1 KiB batch is appended to one partition (in turn) of each
topic, then one Fetch v12 per mode reads it: "full" names every partition (epoch -1) and is answered with
every partition; "incremental" names only the partition whose position moved since the last request (the
session remembers the rest) and is answered with the partition that has news. A second case has no news at
all (max_wait 0): full answers every partition empty, incremental answers nothing. The modes alternate
within the run. Printed: median and p90 µs per request (total, and the handler's share), request and response
bytes, and full/incremental ratios. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shutil
import statistics
import tempfile
from pathlib import Path
from time import perf_counter

from kio.serial import entity_writer

from benchmarks._common import emit_json, fmt, ratio
from broker.broker import Broker
from broker.config import BrokerConfig
from broker.log.records import Record, build_batch
from broker.observer import RequestTiming
from broker.protocol.codec import build, request_class

FETCH, VERSION = 1, 12
BATCH = build_batch([Record(timestamp=1, value=b"v" * 1024)])


def request_frame(corr: int, body: dict) -> bytes:
    """A Fetch v12 request frame as a client writes it (header and body, without the size prefix)."""
    cls = request_class(FETCH, VERSION)
    out = io.BytesIO()
    hdr = {"request_api_key": FETCH, "request_api_version": VERSION, "correlation_id": corr, "client_id": "bench"}
    entity_writer(cls.__header_schema__)(out, build(cls.__header_schema__, hdr))
    entity_writer(cls)(out, build(cls, body))
    return out.getvalue()


def fetch_body(topic: str, offsets: dict[int, int], session_id: int, epoch: int, max_wait_ms: int) -> dict:
    return {"cluster_id": None, "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 52428800,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": off, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1048576} for p, off in offsets.items()]}]
            if offsets else [], "forgotten_topics_data": [], "rack_id": ""}


class Consumer:
    """A consumer's view of one topic: positions, and the session state of the incremental mode."""

    def __init__(self, topic: str, partitions: int, incremental: bool) -> None:
        self.topic = topic
        self.positions = dict.fromkeys(range(partitions), 0)
        self.incremental = incremental
        self.session_id, self.epoch = 0, (0 if incremental else -1)
        self.moved: set[int] = set(self.positions)   # named in the next request (all, the first time)

    def next_body(self, max_wait_ms: int) -> dict:
        named = self.positions if not self.incremental or self.epoch == 0 else \
            {p: self.positions[p] for p in sorted(self.moved)}
        return fetch_body(self.topic, named, self.session_id, self.epoch, max_wait_ms)

    def handle(self, body: dict) -> int:
        """Advance positions from what the broker handed back; returns how many partitions it answered."""
        sid = body["session_id"]
        if self.incremental:
            if self.epoch == 0:
                self.session_id = sid
                assert sid != 0, "no session opened"
            self.epoch += 1
        self.moved = set()
        answered = 0
        for t in body["responses"]:
            for p in t["partitions"]:
                answered += 1
                if p["records"]:
                    self.positions[p["partition_index"]] = p["high_watermark"]
                    self.moved.add(p["partition_index"])
        return answered


async def one(broker: Broker, c: Consumer, corr: int, max_wait_ms: int) -> dict:
    body = c.next_body(max_wait_ms)
    frame = request_frame(corr, body)
    stats = RequestTiming()
    t0 = perf_counter()
    out = await broker.server.dispatch(frame, "127.0.0.1", stats)
    t3 = perf_counter()
    answered = c.handle(stats.result)
    assert stats.result["error_code"] == 0, stats.result["error_code"]
    return {"total_us": (t3 - t0) * 1e6, "handler_us": (stats.t2 - stats.t1) * 1e6, "request_bytes": len(frame) + 4,
            "response_bytes": sum(len(b) for b in out), "answered": answered}


def summary(rows: list[dict]) -> dict:
    tot = sorted(r["total_us"] for r in rows)
    hnd = sorted(r["handler_us"] for r in rows)
    return {"total_us_median": round(statistics.median(tot), 1), "total_us_p90": round(tot[int(len(tot) * 0.9)], 1),
            "handler_us_median": round(statistics.median(hnd), 1),
            "request_bytes": round(statistics.mean(r["request_bytes"] for r in rows)),
            "response_bytes": round(statistics.mean(r["response_bytes"] for r in rows)),
            "partitions_answered": round(statistics.mean(r["answered"] for r in rows), 1)}


async def run(partitions: int, iterations: int, data_dir: Path) -> dict:
    cfg = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir),
                                        "offsets.topic.num.partitions": "1"})
    broker = Broker(cfg)
    await broker.start()
    try:
        consumers = {}
        for mode in ("full", "incremental"):
            topic = f"bench-{mode}"
            broker.create_topic(topic, partitions, 1)
            for p in range(partitions):
                broker.replicas.append(topic, p, BATCH, required_acks=1)
            consumers[mode] = c = Consumer(topic, partitions, mode == "incremental")
            for _ in range(2):  # open the session / catch up everywhere
                await one(broker, c, 0, 0)
        cases = {"one new batch": {m: [] for m in consumers}, "no news": {m: [] for m in consumers}}
        corr = 1
        for i in range(iterations):
            for mode, c in consumers.items():
                broker.replicas.append(c.topic, i % partitions, BATCH, required_acks=1)
                row = await one(broker, c, corr, 500)
                assert row["answered"] == (partitions if mode == "full" else 1), row
                cases["one new batch"][mode].append(row)
                row = await one(broker, c, corr + 1, 0)
                assert row["answered"] == (partitions if mode == "full" else 0), row
                cases["no news"][mode].append(row)
                corr += 2
        return {case: {m: summary(rows) for m, rows in by_mode.items()} for case, by_mode in cases.items()}
    finally:
        await broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--iterations", type=int, default=2000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kscope-bench-fetch-sessions-"))
    try:
        result = asyncio.run(run(args.partitions, args.iterations, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"partitions": args.partitions, "iterations": args.iterations, "cases": {}}
    for case, by_mode in result.items():
        f, n = by_mode["full"], by_mode["incremental"]
        ratios = {"total": ratio(f["total_us_median"], n["total_us_median"]),
                  "handler": ratio(f["handler_us_median"], n["handler_us_median"]),
                  "response_bytes": ratio(f["response_bytes"], n["response_bytes"]),
                  "request_bytes": ratio(f["request_bytes"], n["request_bytes"])}
        out["cases"][case] = {**by_mode, "full_over_incremental": ratios}
        print(f"{args.partitions} partitions, {case}:")
        for mode, s in by_mode.items():
            print(f"  {mode:11s} {fmt(s['total_us_median'])} µs median (p90 {fmt(s['total_us_p90'])}), handler "
                  f"{fmt(s['handler_us_median'])} µs; request {fmt(s['request_bytes'])} B, response "
                  f"{fmt(s['response_bytes'])} B, {fmt(s['partitions_answered'])} partitions answered")
        print(f"  full/incremental: total {fmt(ratios['total'])}x, handler {fmt(ratios['handler'])}x, "
              f"response bytes {fmt(ratios['response_bytes'])}x, request bytes {fmt(ratios['request_bytes'])}x")
    emit_json("fetch_sessions", out)


if __name__ == "__main__":
    main()
