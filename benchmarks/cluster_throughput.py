"""Replication cost: acks=all on RF=3 versus acks=1 on RF=1, on one local three-broker cluster, same run.

    python -m benchmarks.cluster_throughput [--seconds 10] [--partitions 3] [--rate 1000]
                                            [--latency-seconds 10] [--repeat 1] [--quick]

One ZooKeeper and three brokers (the `kafkascope cluster` launcher, kafkascope/local/cluster.py) on loopback.
Two topics on that cluster:

* ``rf3``: replication factor 3, min.insync.replicas=2, produced with acks=all (a produce is answered once
  every ISR member has the batch: the leader's purgatory waits for the followers' fetches);
* ``rf1``: replication factor 1, produced with acks=1.

Both have ``--partitions`` partitions (default 3, so leadership is spread over the three brokers in both).
Before measuring, the script waits until every rf3 partition has all three replicas in its ISR, and has
__consumer_offsets created (the latency consumers have a group.id) with a full ISR.

1. Throughput: confluent-kafka, 1 KiB values, linger.ms=5 (the shared producer loop of
   benchmarks/_common.py), up to ``--seconds`` per case; the two cases are interleaved ``--repeat`` times
   and the median is kept. Prints MB/s, records/s and the ratio rf3-acks=all / rf1-acks=1.
2. End-to-end latency at ``--rate`` records/s (open-loop schedule, 1 partition topics of each kind, linger.ms=5 as
   in 1.): the value carries the send time; a consumer in this process records receive - send in an HDR histogram
   (``hdrhistogram``, µs resolution, 3 significant digits). A consumer only sees records below the high watermark,
   so for rf3 the figure includes replication to the ISR. Prints p50/p99/p99.9/max and the ratios.

Everything runs on one 2-core machine (client, three brokers and ZooKeeper compete for CPU): read the ratios.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, produce, ratio
from benchmarks.e2e_latency import _TS, _paced, _summary, latency_line
from common.hdr import BENCHMARK_US
from common.polling import WaitTimeout, wait_until
from kafkascope.local.cluster import Cluster

LINGER_MS = 5


def create_replicated_topic(bootstrap: str, topic: str, partitions: int, rf: int, configs: dict | None = None,
                            timeout_s: float = 60.0, client: dict | None = None) -> None:
    """Create `topic` and wait until every partition has a leader and a full ISR (all `rf` replicas).
    `client`: security settings for every client (librdkafka names), here and in the functions below."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({**(client or {}), "bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, rf, config=configs or {})],
                              operation_timeout=timeout_s)[topic]
    try:
        fut.result(timeout_s)
    except Exception as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise
    wait_full_isr(admin, topic, partitions, rf, timeout_s)


def wait_full_isr(admin, topic: str, partitions: int, rf: int, timeout_s: float) -> None:
    last: dict = {}

    def full() -> bool:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        last.update(t and {p: (m.leader, m.isrs) for p, m in t.partitions.items()} or {})
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 and len(p.replicas) == rf and len(p.isrs) == rf for p in t.partitions.values())

    try:   # metadata errors count as "not there yet"
        wait_until(full, timeout_s, 0.1, what=f"topic {topic}: {partitions} partitions led with a full ISR of {rf}",
                   retry_on=(Exception,))
    except WaitTimeout as e:
        raise TimeoutError(f"{e} (leaders, ISRs: {last})") from None


def warm_up_offsets_topic(bootstrap: str, timeout_s: float = 60.0, client: dict | None = None) -> None:
    """The consumers below have a group.id, so their first FindCoordinator creates __consumer_offsets (RF=3, 10
    partitions: elections, new fetchers, coordinator loads). Do it now, not inside a measurement."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    c = Consumer({**(client or {}), "bootstrap.servers": bootstrap, "group.id": "warm-up",
                  "enable.auto.commit": False})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                c.committed([TopicPartition("lat-rf1_acks_1", 0)], timeout=10)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()
    admin = AdminClient({**(client or {}), "bootstrap.servers": bootstrap})
    n = len(admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions)
    wait_full_isr(admin, "__consumer_offsets", n, 3, timeout_s)


def e2e_latency(bootstrap: str, topic: str, acks: str, rate: int, seconds: float, warmup: float,
                value_size: int, producer_config: dict | None = None, client: dict | None = None) -> dict:
    """Open-loop produce at `rate`/s to partition 0 of `topic`; an in-process consumer records receive - send.
    The schedule starts once the consumer has received a record (its end offset resolved, fetching)."""
    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

    hist = BENCHMARK_US.new()
    pad = b"p" * max(0, value_size - 9)
    producer = Producer({**(client or {}), "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": LINGER_MS,
                         "enable.idempotence": False, **(producer_config or {})})
    consumer = Consumer({**(client or {}), "bootstrap.servers": bootstrap, "group.id": f"lat-{time.time_ns()}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1,
                         "auto.offset.reset": "latest"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    expected = int(rate * (seconds + warmup))
    expected_recorded = expected - int(rate * warmup)
    got = {"n": 0, "errors": 0}
    ready = threading.Event()
    done = threading.Event()

    def consume_loop() -> None:
        deadline = time.monotonic() + seconds + warmup + 90
        while not done.is_set() and time.monotonic() < deadline:
            m = consumer.poll(0.05)
            now = time.monotonic_ns()
            if m is None:
                continue
            if m.error() is not None:
                got["errors"] += 1
                continue
            v = m.value()
            if v[0] == 0:
                ready.set()
            elif v[0] == 1:
                hist.record_value(max(1, (now - _TS.unpack_from(v, 1)[0]) // 1000))
                if hist.get_total_count() >= expected_recorded:
                    done.set()
            if v[0] in (1, 2):
                got["n"] += 1

    th = threading.Thread(target=consume_loop, daemon=True)
    th.start()
    # Marker records until one arrives: a consumer still resolving its end offset would skip the first records,
    # and one not yet fetching would charge its start-up to them.
    deadline = time.monotonic() + 30
    while not ready.is_set():
        producer.produce(topic, b"\0" + _TS.pack(0) + pad, partition=0)
        if producer.flush(30) != 0 or time.monotonic() > deadline:
            done.set()
            th.join(10)
            consumer.close()
            raise RuntimeError(f"e2e latency on {topic}: the consumer received no marker record within 30 s")
        ready.wait(0.2)

    def send(recorded: bool) -> None:
        producer.produce(topic, (b"\1" if recorded else b"\2") + _TS.pack(time.monotonic_ns()) + pad, partition=0)
        producer.poll(0)

    _paced(rate, seconds, warmup, send)
    producer.flush(30)
    done.wait(30)
    done.set()
    th.join(10)
    consumer.close()
    r = _summary(hist)
    r["received"], r["expected"] = got["n"], expected
    return r


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks.cluster_throughput", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="time bound per throughput case (default 10)")
    p.add_argument("--records", type=int, default=5_000_000, help="record bound per throughput case")
    p.add_argument("--partitions", type=int, default=3, help="partitions of each throughput topic (default 3)")
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=1, help="interleaved runs per case; the median is kept")
    p.add_argument("--rate", type=int, default=1000, help="latency: records per second (default 1000)")
    p.add_argument("--latency-seconds", type=float, default=10.0, help="latency: recorded seconds (default 10)")
    p.add_argument("--warmup", type=float, default=1.0, help="latency: unrecorded warm-up seconds (default 1)")
    p.add_argument("--quick", action="store_true", help="3 s per throughput case, 3 s of latency")
    p.add_argument("--data-dir", help="cluster directory (default: a temp dir, removed afterwards)")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 3.0)
        args.latency_seconds = min(args.latency_seconds, 3.0)
    tmp = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="kscope-cluster-bench-"))
    cases = {"rf3_acks_all": {"rf": 3, "acks": "all", "configs": {"min.insync.replicas": "2"}},
             "rf1_acks_1": {"rf": 1, "acks": "1", "configs": {}}}
    print(f"# cluster throughput: 3 brokers + ZooKeeper on loopback; {args.value_size} B values, linger.ms={LINGER_MS}; "
          f"rf3 acks=all (min.insync.replicas=2) vs rf1 acks=1; {args.partitions} partitions, "
          f"<= {args.seconds:g} s per case; latency {args.rate} rec/s x {args.latency_seconds:g} s")
    result: dict = {"brokers": 3, "value_size": args.value_size, "partitions": args.partitions,
                    "linger_ms": LINGER_MS, "rate": args.rate, "latency_seconds": args.latency_seconds,
                    "throughput": {}, "latency": {}}
    try:
        with Cluster(tmp, brokers=3) as c:
            boot = c.bootstrap
            for name, spec in cases.items():
                create_replicated_topic(boot, f"tput-{name}", args.partitions, spec["rf"], spec["configs"])
                create_replicated_topic(boot, f"lat-{name}", 1, spec["rf"], spec["configs"])
            warm_up_offsets_topic(boot)
            for name, spec in cases.items():
                r = e2e_latency(boot, f"lat-{name}", spec["acks"], args.rate, args.latency_seconds, args.warmup,
                                args.value_size)
                result["latency"][name] = r
                print(latency_line(name, r, width=14), flush=True)
            runs: dict[str, list[dict]] = {n: [] for n in cases}
            for i in range(args.repeat):
                for name, spec in cases.items():
                    r = produce(boot, f"tput-{name}", args.partitions, records=args.records, seconds=args.seconds,
                                value_size=args.value_size, config={"acks": spec["acks"], "linger.ms": LINGER_MS})
                    runs[name].append(r)
                    rep = f" run {i + 1}/{args.repeat}" if args.repeat > 1 else ""
                    print(f"  throughput {name:>12}{rep}: {fmt(r['mb_per_s'])} MB/s  {fmt(r['records_per_s'])} rec/s "
                          f"({fmt(r['records'])} records in {r['seconds']} s)", flush=True)
            for name in cases:
                rs = sorted(runs[name], key=lambda r: r["mb_per_s"])
                result["throughput"][name] = rs[len(rs) // 2]
                if args.repeat > 1:
                    result["throughput"][name]["all_mb_per_s"] = [r["mb_per_s"] for r in runs[name]]
    finally:
        if not args.data_dir:
            shutil.rmtree(tmp, ignore_errors=True)
    t3, t1 = result["throughput"]["rf3_acks_all"], result["throughput"]["rf1_acks_1"]
    l3, l1 = result["latency"]["rf3_acks_all"], result["latency"]["rf1_acks_1"]
    result["ratio_throughput_rf3_rf1"] = ratio(t3["mb_per_s"], t1["mb_per_s"])
    result["ratio_p50_rf3_rf1"] = ratio(l3["p50_ms"], l1["p50_ms"])
    result["ratio_p99_rf3_rf1"] = ratio(l3["p99_ms"], l1["p99_ms"])
    result["ratio_p99_9_rf3_rf1"] = ratio(l3["p99_9_ms"], l1["p99_9_ms"])
    # every recorded (post warm-up) record was received; early warm-up records may precede the consumer's position
    result["complete"] = all(r["count"] >= int(args.rate * args.latency_seconds) for r in result["latency"].values())
    print(f"  ratio rf3-acks=all / rf1-acks=1: throughput {fmt(result['ratio_throughput_rf3_rf1'])}x "
          f"({fmt(t3['mb_per_s'])} vs {fmt(t1['mb_per_s'])} MB/s); e2e p50 {fmt(result['ratio_p50_rf3_rf1'])}x  "
          f"p99 {fmt(result['ratio_p99_rf3_rf1'])}x  p99.9 {fmt(result['ratio_p99_9_rf3_rf1'])}x "
          f"(p99 {l3['p99_ms']:.2f} vs {l1['p99_ms']:.2f} ms; p99.9 {l3['p99_9_ms']:.2f} vs {l1['p99_9_ms']:.2f} ms)",
          flush=True)
    emit_json("cluster_throughput", result)
    return result


if __name__ == "__main__":
    main()
