"""End-to-end latency: produce at a fixed rate, consume, histogram (consume time - send time).

    python -m benchmarks.e2e_latency [--rate 1000] [--seconds 10] [--value-size 1024] [--linger-ms 0]
                                     [--with-apache]

A confluent-kafka Producer (acks=1) sends ``--rate`` records/s for ``--seconds`` s to a fresh 1-partition
topic; a Consumer in a thread of the same process (assign() at the end offset, fetch.wait.max.ms=100,
fetch.min.bytes=1) receives them. Each value carries the send time (time.monotonic_ns() just before
produce()); latency = receive time - send time, recorded in an HDR histogram (``hdrhistogram``, 1 µs
resolution, 3 significant digits). The first second is warm-up and not recorded.

Prints p50/p99/p99.9/max for our broker (target p99 <= 5 ms) and for the baseline measured in the same run:

* default: a pure loopback TCP echo round trip (a thread echoing ``--value-size`` bytes over 127.0.0.1,
  same rate) — the floor the network stack and this Python process impose;
* ``--with-apache``: Apache Kafka, same clients and settings (the ratio then is ours/apache).

The NULL broker cannot serve Fetch, so it is not a baseline here. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import socket
import struct
import threading
import time

from hdrh.histogram import HdrHistogram

from benchmarks._common import apache_kafka, create_topic, emit_json, fmt, our_broker, ratio, verdict
from common.hdr import BENCHMARK_US

TARGET_P99_MS = 5.0
_TS = struct.Struct(">q")
MAX_US = BENCHMARK_US.highest


def _summary(h: HdrHistogram) -> dict:
    return {"count": h.get_total_count(),
            "p50_ms": h.get_value_at_percentile(50) / 1000, "p99_ms": h.get_value_at_percentile(99) / 1000,
            "p99_9_ms": h.get_value_at_percentile(99.9) / 1000, "max_ms": h.get_max_value() / 1000,
            "mean_ms": round(h.get_mean_value() / 1000, 3)}


def _paced(rate: int, seconds: float, warmup_s: float, fn) -> None:
    """Call fn(recorded: bool) `rate` times a second for warmup+seconds (open-loop schedule)."""
    total = int(rate * (seconds + warmup_s))
    warm = int(rate * warmup_s)
    interval = 1.0 / rate
    t0 = time.monotonic()
    for i in range(total):
        due = t0 + i * interval
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        fn(i >= warm)


def kafka_latency(bootstrap: str, args: argparse.Namespace) -> dict:
    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

    topic = f"latency-{time.time_ns()}"
    create_topic(bootstrap, topic, 1)
    hist = BENCHMARK_US.new()
    pad = b"p" * max(0, args.value_size - 9)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": args.linger_ms,
                         "enable.idempotence": False})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{time.time_ns()}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1,
                         "auto.offset.reset": "latest"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    # make sure the consumer is positioned before timing anything
    producer.produce(topic, b"\0" + _TS.pack(0) + pad)
    producer.flush(30)
    expected = int(args.rate * (args.seconds + args.warmup))
    got = {"n": 0, "errors": 0}
    done = threading.Event()

    def consume_loop() -> None:
        deadline = time.monotonic() + args.seconds + args.warmup + 60
        while not done.is_set() and time.monotonic() < deadline:
            # poll(), not consume(n, timeout): consume() waits for n messages or the timeout
            m = consumer.poll(0.05)
            now = time.monotonic_ns()
            if m is not None:
                if m.error() is not None:
                    got["errors"] += 1
                    continue
                v = m.value()
                if v[0] == 1:  # recorded (post warm-up) sample
                    hist.record_value(max(1, (now - _TS.unpack_from(v, 1)[0]) // 1000))
                if v[0] in (1, 2):
                    got["n"] += 1
                    if got["n"] >= expected:
                        done.set()

    th = threading.Thread(target=consume_loop, daemon=True)
    th.start()
    time.sleep(1.0)  # let the consumer start fetching

    def send(recorded: bool) -> None:
        producer.produce(topic, (b"\1" if recorded else b"\2") + _TS.pack(time.monotonic_ns()) + pad)
        producer.poll(0)

    _paced(args.rate, args.seconds, args.warmup, send)
    producer.flush(30)
    done.wait(30)
    done.set()
    th.join(10)
    consumer.close()
    r = _summary(hist)
    r["received"], r["expected"] = got["n"], expected
    return r


def echo_latency(args: argparse.Namespace) -> dict:
    """Loopback TCP echo RTT of a value-sized message, same rate and same process."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    size = max(9, args.value_size)

    def serve() -> None:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while True:
                buf = b""
                while len(buf) < size:
                    chunk = conn.recv(size - len(buf))
                    if not chunk:
                        return
                    buf += chunk
                conn.sendall(buf)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    cli = socket.create_connection(("127.0.0.1", port), timeout=5)
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hist = BENCHMARK_US.new()
    payload = b"e" * size

    def once(recorded: bool) -> None:
        t = time.monotonic_ns()
        cli.sendall(payload)
        n = 0
        while n < size:
            n += len(cli.recv(size - n))
        if recorded:
            hist.record_value(max(1, (time.monotonic_ns() - t) // 1000))

    try:
        _paced(args.rate, args.seconds, args.warmup, once)
    finally:
        cli.close()
        th.join(5)
        srv.close()
    return _summary(hist)


def latency_line(name: str, r: dict, width: int = 10) -> str:
    """One printed row of HDR latency figures (with received/expected when the run counted them)."""
    received = f", received {r['received']:,}/{r['expected']:,}" if "received" in r else ""
    return (f"  {name:>{width}}: p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms  p99.9 {r['p99_9_ms']:.3f} ms  "
            f"max {r['max_ms']:.3f} ms  (n={r['count']:,}{received})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks.e2e_latency", description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, default=1000, help="records per second (default 1000)")
    p.add_argument("--seconds", type=float, default=10.0, help="recorded duration (default 10)")
    p.add_argument("--warmup", type=float, default=1.0, help="unrecorded warm-up seconds (default 1)")
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--linger-ms", type=float, default=0.0, help="producer linger.ms (default 0)")
    p.add_argument("--with-apache", action="store_true", help="use Apache Kafka as the ratio baseline")
    p.add_argument("--quick", action="store_true", help="3 s")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 3.0)
    print(f"# e2e latency: {args.rate} rec/s x {args.seconds:g} s (+{args.warmup:g} s warm-up), "
          f"{args.value_size} B, acks=1, linger.ms={args.linger_ms:g}, consumer in-process (monotonic clock)")
    result: dict = {"rate": args.rate, "seconds": args.seconds}
    with our_broker() as b:
        result["ours"] = kafka_latency(b.bootstrap, args)
    print(latency_line("ours", result["ours"]), flush=True)
    if args.with_apache:
        base_name = "apache"
        with apache_kafka() as k:
            result["apache"] = kafka_latency(k.bootstrap, args)
    else:
        base_name = "tcp_echo"
        result["tcp_echo"] = echo_latency(args)
    base = result[base_name]
    print(latency_line(base_name, base), flush=True)
    result["baseline"] = base_name
    result["ratio_p99"] = ratio(result["ours"]["p99_ms"], base["p99_ms"])
    result["ratio_p50"] = ratio(result["ours"]["p50_ms"], base["p50_ms"])
    ok_count = result["ours"]["received"] >= result["ours"]["expected"]
    result["pass"] = ok_count and result["ours"]["p99_ms"] <= TARGET_P99_MS
    print(f"  ratio ours/{base_name}: p50 {fmt(result['ratio_p50'])}x  p99 {fmt(result['ratio_p99'])}x; "
          f"ours p99 {result['ours']['p99_ms']:.3f} ms (target <= {TARGET_P99_MS:g} ms), received "
          f"{result['ours']['received']:,}/{result['ours']['expected']:,} -> {verdict(result['pass'])}", flush=True)
    emit_json("e2e_latency", result)
    return result


if __name__ == "__main__":
    main()
