"""`kafkascope consumer-perf-test`: Kafka's ConsumerPerformance, same options and CSV-style report."""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import datetime

from confluent_kafka import KafkaError

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError

MB = 1024 * 1024
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consumer-perf-test", help="consumer throughput (kafka-consumer-perf-test.sh)")
    client.add_connection_args(p, "--consumer.config")
    p.add_argument("--topic", required=True)
    p.add_argument("--messages", type=int, required=True)
    p.add_argument("--group")
    p.add_argument("--timeout", type=int, default=10000, help="ms without records before giving up")
    p.add_argument("--from-latest", action="store_true")
    p.add_argument("--hide-header", action="store_true")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    defaults = {"group.id": args.group or f"perf-consumer-{random.randrange(100000)}",
                "enable.auto.commit": True,
                "auto.offset.reset": "latest" if args.from_latest else "earliest"}
    consumer = client.consumer(args, defaults=defaults)
    assigned_at: list[float] = []
    try:
        start = time.time()
        consumer.subscribe([args.topic], on_assign=lambda *_: assigned_at.append(time.time()))
        count, size, end = _consume(consumer, args)
    finally:
        consumer.close()
    if count < args.messages:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({args.timeout} ms) "
              "exceeded. You can use the --timeout option to increase the timeout.", file=sys.stderr)
    elapsed = max(end - start, 1e-9)
    rebalance = (assigned_at[0] - start) if assigned_at else 0.0
    fetch = max(elapsed - rebalance, 1e-9)
    mb = size / MB
    if not args.hide_header:
        print(HEADER)
    print(f"{_stamp(start)}, {_stamp(end)}, {mb:.4f}, {mb / elapsed:.4f}, {count}, {count / elapsed:.4f}, "
          f"{int(rebalance * 1000)}, {int(fetch * 1000)}, {mb / fetch:.4f}, {count / fetch:.4f}")
    return 0


def _consume(consumer, args: argparse.Namespace) -> tuple[int, int, float]:
    """Read up to --messages records; stop after --timeout ms without any. Returns count, bytes, end."""
    count = size = 0
    last = end = time.time()
    while count < args.messages and time.time() - last < args.timeout / 1000:
        for msg in consumer.consume(min(500, args.messages - count), timeout=0.5):
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise CliError(msg.error().str())
            count += 1
            size += len(msg.value() or b"") + len(msg.key() or b"")
            last = end = time.time()
    return count, size, end


def _stamp(t: float) -> str:
    """Kafka's yyyy-MM-dd HH:mm:ss:SSS."""
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S:") + f"{int(t * 1000) % 1000:03d}"
