"""Consume throughput from page cache, against produce throughput measured in the same run.

    python -m benchmarks.consume_throughput [--gb 1.0] [--seconds 10] [--partitions 1]
                                            [--value-size 1024] [--with-apache] [--profile DIR]

Preloads a fresh topic on our broker with confluent-kafka (1 KiB values, acks=1, linger.ms=5,
batch.size=1 MiB) until ``--gb`` GB or ``--seconds`` s, whichever comes first — that preload *is* the
produce measurement — then reads it all back with a confluent-kafka Consumer (assign() from earliest,
no group commits, fetch.max.bytes 100 MiB, max.partition.fetch.bytes 50 MiB). The data was just written,
so reads come from the page cache. Clock: assign() to the last record.

Prints MB/s for both and the ratio consume/produce (target >= 2). Because a Python consumer loop is often
the bottleneck (check: the broker is mostly idle under py-spy), the same data is then also read with
``kcat`` (librdkafka in C, output to /dev/null) when installed — skip with ``--no-kcat``. With ``--with-apache`` the same is
done against Apache Kafka, and ours/apache consume is printed. The consumer runs in this process (Python
per-message overhead included), so compare ratios. ``--profile DIR`` records our broker with py-spy
during the consume phase. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

from benchmarks._common import (
    MB,
    apache_kafka,
    create_topic,
    emit_json,
    fmt,
    our_broker,
    produce,
    ratio,
    verdict,
)
from benchmarks.produce_throughput import start_profiler, stop_profiler

TARGET_RATIO = 2.0


def consume(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float,
            client: dict | None = None) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({
        **(client or {}),
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{time.time_ns()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.max.bytes": 104857600,
        "max.partition.fetch.bytes": 52428800,
        "receive.message.max.bytes": 209715200,
        "queued.max.messages.kbytes": 1048576,
        "fetch.wait.max.ms": 100,
    })
    try:
        n = nbytes = 0
        t0 = time.perf_counter()
        deadline = t0 + timeout_s
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        while n < expected and time.perf_counter() < deadline:
            for m in c.consume(num_messages=10000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        continue
                    raise RuntimeError(f"consume from {bootstrap}: {m.error()}")
                n += 1
                nbytes += len(m.value())
        elapsed = time.perf_counter() - t0
    finally:
        c.close()
    if n < expected:
        raise RuntimeError(f"consumed {n} of {expected} records from {bootstrap} in {timeout_s} s")
    return {"records": n, "bytes": nbytes, "seconds": round(elapsed, 3),
            "mb_per_s": round(nbytes / elapsed / MB, 2), "records_per_s": round(n / elapsed)}


def consume_kcat(bootstrap: str, topic: str, partitions: int, expected: int, value_size: int,
                 timeout_s: float) -> dict | None:
    """Same read with kcat (librdkafka, C; no per-message Python): the broker-side figure when the
    Python consumer is the bottleneck. None if kcat is not installed."""
    exe = shutil.which("kcat")
    if exe is None:
        return None
    cmd = [exe, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(expected), "-q", "-e",
           "-X", "fetch.max.bytes=104857600", "-X", "max.partition.fetch.bytes=52428800",
           "-X", "receive.message.max.bytes=209715200", "-X", "queued.max.messages.kbytes=1048576"]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_s, check=True)
    elapsed = time.perf_counter() - t0
    nbytes = expected * value_size
    return {"records": expected, "bytes": nbytes, "seconds": round(elapsed, 3),
            "mb_per_s": round(nbytes / elapsed / MB, 2), "records_per_s": round(expected / elapsed)}


def run_target(name: str, bootstrap: str, args: argparse.Namespace, pid: int | None = None) -> dict:
    topic = "bench-consume"
    create_topic(bootstrap, topic, args.partitions)
    records = int(args.gb * 1e9 / args.value_size)
    prod = produce(bootstrap, topic, args.partitions, records=records, seconds=args.seconds,
                   value_size=args.value_size)
    prof = start_profiler(pid, Path(args.profile) / ("consume.txt" if args.profile_format == "raw" else "consume.speedscope.json"), args.seconds) \
        if (args.profile and pid) else None
    try:
        # +1: the produce() warm-up record
        cons = consume(bootstrap, topic, args.partitions, prod["records"] + 1, timeout_s=max(60.0, 6 * args.seconds))
    finally:
        stop_profiler(prof)
    r = {"produce": prod, "consume": cons, "ratio_consume_produce": ratio(cons["mb_per_s"], prod["mb_per_s"])}
    print(f"  {name:>6}: produce {fmt(prod['mb_per_s'])} MB/s ({fmt(prod['records'])} records), "
          f"consume {fmt(cons['mb_per_s'])} MB/s {fmt(cons['records_per_s'])} rec/s -> "
          f"consume/produce = {fmt(r['ratio_consume_produce'])}", flush=True)
    if not args.no_kcat:
        k = consume_kcat(bootstrap, topic, args.partitions, prod["records"] + 1, args.value_size,
                         timeout_s=max(60.0, 6 * args.seconds))
        if k is not None:
            r["consume_kcat"] = k
            r["ratio_consume_kcat_produce"] = ratio(k["mb_per_s"], prod["mb_per_s"])
            print(f"  {name:>6}: consume with kcat (C client, incl. its ~startup) {fmt(k['mb_per_s'])} MB/s -> "
                  f"consume/produce = {fmt(r['ratio_consume_kcat_produce'])}", flush=True)
    return r


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks.consume_throughput", description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=1.0, help="preload size bound in GB (default 1)")
    p.add_argument("--seconds", type=float, default=10.0, help="preload time bound (default 10)")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--with-apache", action="store_true")
    p.add_argument("--profile", metavar="DIR", help="py-spy record our broker (consume phase) into DIR")
    p.add_argument("--no-kcat", action="store_true", help="skip the extra kcat (C client) consume")
    p.add_argument("--profile-format", choices=["speedscope", "raw"], default="speedscope")
    p.add_argument("--quick", action="store_true", help="preload <= 3 s / 0.3 GB")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.seconds, args.gb = min(args.seconds, 3.0), min(args.gb, 0.3)
    print(f"# consume throughput: preload <= {args.gb:g} GB / {args.seconds:g} s of {args.value_size} B values "
          f"into {args.partitions} partition(s), then consume from earliest")
    result: dict = {"value_size": args.value_size, "partitions": args.partitions}
    with our_broker() as b:
        result["ours"] = run_target("ours", b.bootstrap, args, b.proc.pid)
    if args.with_apache:
        with apache_kafka() as k:
            result["apache"] = run_target("apache", k.bootstrap, args)
        result["ratio_consume_ours_apache"] = ratio(result["ours"]["consume"]["mb_per_s"],
                                                    result["apache"]["consume"]["mb_per_s"])
    rc = result["ours"]["ratio_consume_produce"]
    result["pass"] = rc is not None and rc >= TARGET_RATIO
    print(f"  ratio consume/produce (ours) = {fmt(rc)} (target >= {TARGET_RATIO:g}) -> {verdict(result['pass'])}; "
          f"consume ours/apache = {fmt(result.get('ratio_consume_ours_apache'))}", flush=True)
    emit_json("consume_throughput", result)
    return result


if __name__ == "__main__":
    main()
