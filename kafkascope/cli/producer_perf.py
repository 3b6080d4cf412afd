"""`kafkascope producer-perf-test`: Kafka's ProducerPerformance, same options and report lines."""

from __future__ import annotations

import argparse
import random
import string
import time

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError
from kafkascope.cli.latency import Latencies

MB = 1024 * 1024
REPORT_INTERVAL_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("producer-perf-test", help="producer throughput/latency (kafka-producer-perf-test.sh)")
    client.add_connection_args(p, "--producer.config")
    p.add_argument("--topic", required=True)
    p.add_argument("--num-records", type=int, required=True)
    p.add_argument("--record-size", type=int, required=True)
    p.add_argument("--throughput", type=float, required=True, help="records/sec cap; -1 for none")
    p.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE")
    p.set_defaults(run=run)


class Stats:
    """Kafka's windowed progress lines every 5 s and its final summary line."""

    def __init__(self, record_size: int) -> None:
        self.record_size = record_size
        self.start = time.monotonic()
        self.total = Latencies()
        self.window, self.window_start = Latencies(), self.start
        self.errors: list[str] = []

    def completed(self, sent_at: float, err) -> None:
        now = time.monotonic()
        if err is not None:
            self.errors.append(err.str())
            return
        self.total.record(now - sent_at)
        self.window.record(now - sent_at)
        if now - self.window_start >= REPORT_INTERVAL_S:
            print(self._line(self.window, now - self.window_start, "%.1f", "%.1f", "%.1f") + ".", flush=True)
            self.window, self.window_start = Latencies(), now

    def summary(self) -> None:
        t = self.total
        percentiles = ", ".join(f"{int(t.percentile_ms(p))} ms {name}"
                                for p, name in ((50, "50th"), (95, "95th"), (99, "99th"), (99.9, "99.9th")))
        print(f"{self._line(t, time.monotonic() - self.start, '%f', '%.2f', '%.2f')}, {percentiles}.")

    def _line(self, lat: Latencies, elapsed: float, rate_fmt: str, avg_fmt: str, max_fmt: str) -> str:
        rate = lat.count / elapsed if elapsed > 0 else 0.0
        return (f"{lat.count} records sent, {rate_fmt % rate} records/sec "
                f"({rate * self.record_size / MB:.2f} MB/sec), {avg_fmt % lat.mean_ms()} ms avg latency, "
                f"{max_fmt % lat.max_ms()} ms max latency")


def run(args: argparse.Namespace) -> int:
    producer = client.producer(args, client.parse_assignments(args.producer_props, "producer property"))
    # Kafka's payload: random uppercase letters.
    payload = "".join(random.choices(string.ascii_uppercase, k=args.record_size)).encode()
    stats = Stats(args.record_size)
    for i in range(args.num_records):
        # Throttle: record i goes out no earlier than i / throughput. poll() returns early when it
        # serves a delivery report, hence the loop.
        while args.throughput > 0 and (ahead := i / args.throughput - (time.monotonic() - stats.start)) > 0:
            producer.poll(ahead)
        sent_at = time.monotonic()
        client.produce(producer, args.topic, payload,
                       on_delivery=lambda err, _msg, t=sent_at: stats.completed(t, err))
    while producer.flush(client.TIMEOUT_S):
        pass
    stats.summary()
    if stats.errors:
        raise CliError(f"{len(stats.errors)} of {args.num_records} records failed: {stats.errors[0]}")
    return 0

