"""`kafkascope e2e-latency`: kafka.tools.EndToEndLatency, one record at a time, HDR percentiles."""

from __future__ import annotations

import argparse
import os
import time

from confluent_kafka import KafkaError, TopicPartition

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError
from kafkascope.cli.latency import Latencies


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("e2e-latency", help="produce-to-consume latency (kafka.tools.EndToEndLatency)")
    client.add_connection_args(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--num-records", type=int, required=True)
    p.add_argument("--producer-acks", default="1", choices=["0", "1", "all", "-1"])
    p.add_argument("--record-size", type=int, default=100)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Like EndToEndLatency: no batching delays on either side.
    producer = client.producer(args, defaults={"acks": args.producer_acks, "linger.ms": 0})
    consumer = client.consumer(args, defaults={"group.id": f"e2e-latency-{int(time.time() * 1000)}",
                                               "enable.auto.commit": False, "fetch.wait.max.ms": 0,
                                               "fetch.error.backoff.ms": 0})
    latencies = Latencies()
    try:
        _assign_at_end(consumer, args.topic)
        for i in range(args.num_records):
            payload = os.urandom(args.record_size)
            start = time.perf_counter()
            client.produce(producer, args.topic, payload)
            producer.flush(client.TIMEOUT_S)
            _await_record(consumer, payload)
            elapsed = time.perf_counter() - start
            latencies.record(elapsed)
            if i % 1000 == 0:
                print(f"{i}\t{elapsed * 1000:.3f}", flush=True)
    finally:
        consumer.close()
    print(f"Avg latency: {latencies.mean_ms():.4f} ms")
    print("Percentiles: " + ", ".join(f"{name} = {latencies.percentile_ms(p):.3f} ms"
                                      for p, name in ((50, "50th"), (99, "99th"), (99.9, "99.9th")))
          + f", max = {latencies.max_ms():.3f} ms")
    return 0


def _assign_at_end(consumer, topic: str) -> None:
    """Start every partition at its current end, resolved now: a lazily resolved end could skip record 0."""
    metadata = consumer.list_topics(topic, timeout=client.TIMEOUT_S).topics[topic]
    if metadata.error is not None:
        raise CliError(f"topic '{topic}': {metadata.error.str()}")
    tps = []
    for p in sorted(metadata.partitions):
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=client.TIMEOUT_S)
        tps.append(TopicPartition(topic, p, high))
    consumer.assign(tps)


def _await_record(consumer, payload: bytes) -> None:
    deadline = time.monotonic() + client.TIMEOUT_S
    while time.monotonic() < deadline:
        msg = consumer.poll(0.1)
        if msg is None or (msg.error() and msg.error().code() == KafkaError._PARTITION_EOF):
            continue
        if msg.error():
            raise CliError(msg.error().str())
        if msg.value() != payload:
            raise CliError("consumed a record that is not the one just produced (is another producer "
                           "writing to the topic?)")
        return
    raise CliError(f"poll() timed out before finding a result (timeout:[{int(client.TIMEOUT_S * 1000)}])")
