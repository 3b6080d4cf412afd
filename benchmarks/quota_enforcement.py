"""Client quotas as a client feels them: ours against Apache Kafka 3.9, same run.

    python -m benchmarks.quota_enforcement [--quota-kib 512] [--seconds 50]

Per implementation (one standalone broker of ours; one single-node Apache Kafka 3.9, KRaft):

1. AlterClientQuotas sets producer_byte_rate for client-id `quota-bench-producer` and consumer_byte_rate for
   `quota-bench-consumer` (the same request on both, over the wire);
2. a confluent-kafka producer with that client-id sends 1 KiB records as fast as it can (acks=1) for `--seconds`;
3. an unthrottled producer fills a second topic, then a consumer with the throttled client-id reads it as fast as
   it may for `--seconds`.

A throttled client moves in bursts: the quota's rate is taken over at least 10 one-second windows, so a client
gets about 10 s of its quota at once, then is throttled until that burst leaves the window (~11 s later). A
fixed measuring window catches one burst more or less depending on where it falls, so the figure is the
**steady rate**: the payload of whole cycles (from the first burst's start to the last burst's start) over
their length, as a share of the quota. Kafka counts request or response bytes, so the payload share sits a
little below 1.0. Also printed: the largest average throttle time librdkafka reported. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator

from benchmarks._common import apache_kafka, create_topic, emit_json, our_broker, produce
from kafkascope.local.wire import WireClient

PRODUCER, CONSUMER = "quota-bench-producer", "quota-bench-consumer"
VALUE = b"q" * 1024


def set_quota(port: int, client_id: str, key: str, value: float) -> None:
    with WireClient(port) as w:
        resp = w.call(49, 1, {"entries": [{"entity": [{"entity_type": "client-id", "entity_name": client_id}],
                                           "ops": [{"key": key, "value": value, "remove": False}]}],
                              "validate_only": False})
    code = resp.entries[0].error_code
    if code:
        raise RuntimeError(f"AlterClientQuotas for {client_id}: {code!r} {resp.entries[0].error_message}")


def _throttle_avg(stats_json: str) -> float:
    stats = json.loads(stats_json)
    avgs = [b["throttle"]["avg"] for b in stats.get("brokers", {}).values() if b.get("throttle", {}).get("cnt")]
    return max(avgs, default=0) / 1000.0     # librdkafka reports microseconds here


def steady_rate(events: list[tuple[float, int]], gap_s: float = 0.5) -> float:
    """Bytes per second over whole burst cycles: from the first burst's start to the last one's (a burst starts
    after `gap_s` without an event); with fewer than two bursts, over the events' whole span."""
    events = sorted(events)
    if len(events) < 2:
        return 0.0
    starts = [t for i, (t, _) in enumerate(events) if i == 0 or t - events[i - 1][0] >= gap_s]
    if len(starts) >= 2:
        first, last = starts[0], starts[-1]
        return sum(n for t, n in events if first <= t < last) / (last - first)
    return sum(n for _, n in events) / max(events[-1][0] - events[0][0], 1e-3)


def measure_produce(bootstrap: str, seconds: float) -> tuple[float, float]:
    """(steady payload bytes/s acknowledged, the producer's largest average throttle time in ms)."""
    from confluent_kafka import Producer

    acked: list[tuple[float, int]] = []
    throttle = [0.0]
    # 64 KiB batches and fetches: a 1 MB request would be a quarter of the window's quota at once.
    p = Producer({"bootstrap.servers": bootstrap, "client.id": PRODUCER, "acks": 1, "linger.ms": 5,
                  "batch.size": 65536,
                  "statistics.interval.ms": 1000, "queue.buffering.max.messages": 20_000,
                  "stats_cb": lambda s: throttle.__setitem__(0, max(throttle[0], _throttle_avg(s)))})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with contextlib.suppress(BufferError):
            p.produce("quota-in", VALUE,
                      on_delivery=lambda err, _m: err is None and acked.append((time.monotonic(), len(VALUE))))
        p.poll(0.0005)
    p.flush(60)
    return steady_rate(acked), throttle[0]


def measure_consume(bootstrap: str, seconds: float) -> tuple[float, float]:
    from confluent_kafka import Consumer

    throttle = [0.0]
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": CONSUMER, "group.id": "quota-bench",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "statistics.interval.ms": 1000,
                  "max.partition.fetch.bytes": 65536,
                  "stats_cb": lambda s: throttle.__setitem__(0, max(throttle[0], _throttle_avg(s)))})
    c.subscribe(["quota-out"])
    end = time.monotonic() + seconds
    got: list[tuple[float, int]] = []
    while (now := time.monotonic()) < end:
        got += [(now, len(m.value() or b"")) for m in c.consume(500, 0.1) if m.error() is None]
    c.close()
    return steady_rate(got), throttle[0]


@contextlib.contextmanager
def _target(impl: str) -> Iterator[tuple[str, int]]:
    if impl == "kafkascope":
        with our_broker() as b:
            yield b.bootstrap, b.port
    else:
        with apache_kafka() as k:
            yield k.bootstrap, k.port


def run_one(impl: str, quota: float, seconds: float) -> dict:
    with _target(impl) as (bootstrap, port):
        create_topic(bootstrap, "quota-in", 1)
        create_topic(bootstrap, "quota-out", 1)
        set_quota(port, PRODUCER, "producer_byte_rate", quota)
        set_quota(port, CONSUMER, "consumer_byte_rate", quota)
        fill = int(quota * (seconds + 15) * 1.5 / len(VALUE))
        produce(bootstrap, "quota-out", 1, records=fill, seconds=120, value_size=len(VALUE))
        p_rate, p_throttle = measure_produce(bootstrap, seconds)
        c_rate, c_throttle = measure_consume(bootstrap, seconds)
    out = {"impl": impl, "produce_share": p_rate / quota, "consume_share": c_rate / quota,
           "produce_throttle_ms": p_throttle, "consume_throttle_ms": c_throttle}
    print(f"{impl:12s} produce {p_rate / 1024:7.1f} KiB/s ({out['produce_share']:.3f} of the quota, "
          f"throttle avg {p_throttle:.0f} ms)  consume {c_rate / 1024:7.1f} KiB/s "
          f"({out['consume_share']:.3f}, throttle avg {c_throttle:.0f} ms)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quota-kib", type=float, default=512)
    ap.add_argument("--seconds", type=float, default=50)
    ap.add_argument("--impls", default="kafkascope,apache-kafka")
    args = ap.parse_args()
    quota = args.quota_kib * 1024
    results = {r["impl"]: r for r in (run_one(i, quota, args.seconds) for i in args.impls.split(","))}
    ours, kafka = results.get("kafkascope"), results.get("apache-kafka")
    summary: dict = {"quota_bytes_per_s": quota, "results": list(results.values())}
    if ours and kafka:
        summary["ratio_produce"] = ours["produce_share"] / kafka["produce_share"]
        summary["ratio_consume"] = ours["consume_share"] / kafka["consume_share"]
        print(f"ours/Kafka: produce {summary['ratio_produce']:.3f}, consume {summary['ratio_consume']:.3f}")
    emit_json("quota_enforcement", summary)


if __name__ == "__main__":
    main()
