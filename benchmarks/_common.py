"""Shared plumbing for the benchmark scripts: targets (our broker, null broker, Apache Kafka),
a bounded confluent-kafka produce loop, and result printing (human lines + one JSON line)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from common.polling import wait_until
from kafkascope.local.broker_process import BrokerProcess

ROOT = Path(__file__).resolve().parents[1]

MB = 1_000_000  # throughput figures are decimal MB/s (as kafka-producer-perf-test prints)

# Our broker as the benchmarks run it: production-like, nothing tuned for the benchmark.
OUR_BROKER_PROPS = {"offsets_topic_num_partitions": 1}


@contextlib.contextmanager
def our_broker(**props: object) -> Iterator[BrokerProcess]:
    tmp = Path(tempfile.mkdtemp(prefix="kscope-bench-"))
    b = BrokerProcess(tmp, **{**OUR_BROKER_PROPS, **props})
    try:
        b.start()
        yield b
    finally:
        b.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def our_cluster(brokers: int) -> Iterator[object]:
    """ZooKeeper and `brokers` of our brokers (kafkascope's cluster launcher); `.bootstrap` as the others."""
    from kafkascope.local.launcher import ClusterLauncher

    tmp = Path(tempfile.mkdtemp(prefix="kscope-bench-cluster-"))
    c = ClusterLauncher(tmp, brokers=brokers, broker_props=OUR_BROKER_PROPS)
    try:
        c.prepare().start_all()
        yield c
    finally:
        c.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def sli_e2e_p99(rows: list[dict], start: datetime, end: datetime | None = None) -> tuple[float | None, int]:
    """(e2e p99 in ms or None, records) over xmonitor's SLI rows whose interval starts at `start` or later and,
    with `end`, ends by then; the HDR histograms are merged exactly."""
    from xmonitor.sli_schema import decode_hdr, new_histogram

    h = new_histogram()
    for row in rows:
        if row["interval_start"] >= start and (end is None or row["interval_end"] <= end):
            h.add(decode_hdr(row["e2e_latency_hdr"]))
    n = h.get_total_count()
    return (h.get_value_at_percentile(99) / 1000 if n else None), n


@contextlib.contextmanager
def apache_kafka() -> Iterator[object]:
    from kafkascope.local.apache_kafka import ApacheKafka

    with ApacheKafka(log_level="WARN") as k:
        yield k


def create_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout_s)[topic]
    try:
        fut.result(timeout_s)
    except Exception as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise
    # wait until metadata shows all partitions with a leader
    def led() -> bool:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values())

    wait_until(led, timeout_s, 0.1, what=f"topic {topic} ready on {bootstrap}")


def producer_config(bootstrap: str, **extra: object) -> dict:
    cfg = {
        "bootstrap.servers": bootstrap,
        "acks": 1,
        "linger.ms": 5,
        "batch.size": 1048576,
        "batch.num.messages": 1000000,
        "queue.buffering.max.kbytes": 2097151,  # librdkafka maximum (~2 GiB)
        "queue.buffering.max.messages": 2000000,
        "message.max.bytes": 2000000,
        "enable.idempotence": False,
        "compression.type": "none",
    }
    cfg.update(extra)
    return cfg


def produce(bootstrap: str, topic: str, partitions: int, *, records: int, seconds: float,
            value_size: int = 1024, config: dict | None = None) -> dict:
    """Produce up to `records` values of `value_size` bytes round-robin over the partitions, stopping
    early after `seconds`; flush; return delivered count, bytes, elapsed and rates.

    The clock runs from the first produce() to the last delivery report (flush())."""
    from confluent_kafka import Producer

    p = Producer(producer_config(bootstrap, **(config or {})))
    # warm up: metadata + connection, not timed
    p.produce(topic, b"w" * value_size, partition=0)
    if p.flush(30) != 0:
        raise RuntimeError(f"warm-up produce to {bootstrap} not delivered")
    stats = {"ok": 0, "err": 0, "first_error": None}

    def on_delivery(err, msg):
        if err is None:
            stats["ok"] += 1
        else:
            stats["err"] += 1
            stats["first_error"] = stats["first_error"] or str(err)

    value = b"x" * value_size
    produce_ = p.produce
    poll = p.poll
    sent = 0
    t0 = time.perf_counter()
    stop_at = t0 + seconds
    while sent < records:
        try:
            produce_(topic, value, partition=sent % partitions, on_delivery=on_delivery)
        except BufferError:
            poll(0.01)
            continue
        sent += 1
        if sent & 1023 == 0:
            poll(0)
            if time.perf_counter() >= stop_at:
                break
    remaining = p.flush(max(60.0, seconds * 3))
    elapsed = time.perf_counter() - t0
    if remaining or stats["err"]:
        raise RuntimeError(f"produce to {bootstrap}: {remaining} undelivered, {stats['err']} failed "
                           f"(first: {stats['first_error']})")
    nbytes = stats["ok"] * value_size
    return {"records": stats["ok"], "bytes": nbytes, "seconds": round(elapsed, 3),
            "mb_per_s": round(nbytes / elapsed / MB, 2), "records_per_s": round(stats["ok"] / elapsed)}


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by `pid`, from /proc/PID/stat (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def fmt(x: object) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:,.3f}" if abs(x) < 100 else f"{x:,.1f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def median_of_passes(passes: list[dict]) -> dict:
    """Each figure's median over the passes (None where a pass has no value for it)."""
    import statistics

    return {k: statistics.median(p[k] for p in passes) if all(p[k] is not None for p in passes) else None
            for k in passes[0]}


def print_table(rows: list[tuple[str, ...]]) -> None:
    """A header row, a rule, then the rows; the first column left-aligned, the figures right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def emit_json(name: str, result: dict) -> None:
    print(json.dumps({"benchmark": name, **result}, sort_keys=False), flush=True)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")
