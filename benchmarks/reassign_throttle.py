"""A throttled partition move, ours against Apache Kafka 3.9 (ZooKeeper mode), same run.

    python -m benchmarks.reassign_throttle [--mb 20] [--throttle 2000000] [--rounds 1]

Per implementation, a fresh 3-broker cluster (ZooKeeper and 3 brokers), one after the other (never both at once on
two cores):

1. a topic with one partition on broker A, filled with `--mb` MB of 1 KB records (acks=1);
2. `kafka-reassign-partitions.sh --execute --throttle R` (Kafka 3.9's own tool) adds a replica on broker B;
3. the move is done when B is in the partition's ISR (polled every 50 ms with Metadata): the **effective rate** is
   the log's size over that time, as a share of R. The first fetch of up to replica.fetch.max.bytes (1 MiB) and the
   first windows of the rate are free, so a move of a few seconds sits above 1.0; the longer the move, the closer.
4. `--verify` then clears the throttles; the unthrottled move of the same log (another topic) is the baseline the
   throttle must slow.

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, print_table, ratio

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
SIZE = 1000


def _tool(*args: str) -> str:
    from kafkascope.local.apache_kafka import tool_command

    res = subprocess.run(tool_command(REASSIGN, *args), capture_output=True, text=True, timeout=300)
    if res.returncode:
        raise RuntimeError(f"{args}: {res.stdout}\n{res.stderr[-2000:]}")
    return res.stdout


def _fill(bootstrap: str, topic: str, broker: int, mb: int) -> int:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    AdminClient({"bootstrap.servers": bootstrap}).create_topics(
        [NewTopic(topic, num_partitions=1, replica_assignment=[[broker]])])[topic].result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1})
    records = mb * 1_000_000 // SIZE
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=bytes([i % 256]) * SIZE)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("records left unsent")
    return records * SIZE


def _in_isr(admin, topic: str, broker: int) -> bool:
    md = admin.list_topics(topic, timeout=10)
    return broker in md.topics[topic].partitions[0].isrs


def _move(bootstrap: str, topic: str, source: int, target: int, throttle: int | None, work: Path) -> float:
    """Seconds from --execute until `target` is in the ISR."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    plan = work / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [source, target], "log_dirs": ["any", "any"]}]}))
    bs = ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)]
    started = time.monotonic()
    _tool(*bs, "--execute", *(["--throttle", str(throttle)] if throttle else []))
    deadline = started + 600
    while not _in_isr(admin, topic, target):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} not moved in 600 s")
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    for _ in range(60):   # --verify clears the throttles once the controller has finished the move
        if "is completed" in _tool(*bs, "--verify"):
            break
        time.sleep(1)
    return elapsed


def one_impl(impl: str, mb: int, throttle: int) -> dict:
    from kafkascope.local.cluster import Cluster

    work = Path(tempfile.mkdtemp(prefix=f"kscope-reassign-{impl}-"))
    try:
        with Cluster(work / "cluster", brokers=3, impl=impl) as c:
            source, target, _ = c.broker_ids
            size = _fill(c.bootstrap, "throttled", source, mb)
            _fill(c.bootstrap, "free", source, mb)
            throttled_s = _move(c.bootstrap, "throttled", source, target, throttle, work)
            free_s = _move(c.bootstrap, "free", source, target, None, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"bytes": size, "throttled_s": round(throttled_s, 2), "unthrottled_s": round(free_s, 2),
            "rate_share": round(size / throttled_s / throttle, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--throttle", type=int, default=2_000_000, help="bytes/s")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    print(f"# reassign_throttle: {args.mb} MB moved to a new replica with --throttle {args.throttle} B/s; "
          f"3 brokers each, {args.rounds} round(s)", flush=True)
    rounds = []
    for rnd in range(1, args.rounds + 1):
        row = {impl: one_impl(impl, args.mb, args.throttle) for impl in ("kafkascope", "apache-kafka")}
        row["ratio"] = ratio(row["kafkascope"]["rate_share"], row["apache-kafka"]["rate_share"])
        rounds.append(row)
        print(f"  round {rnd}: ours {row['kafkascope']}, Kafka {row['apache-kafka']}, ours/Kafka {row['ratio']}",
              flush=True)
    print_table([("round", "ours s (free s)", "Kafka s (free s)", "ours share", "Kafka share", "ours/Kafka")] + [
        (str(i), f"{fmt(r['kafkascope']['throttled_s'])} ({fmt(r['kafkascope']['unthrottled_s'])})",
         f"{fmt(r['apache-kafka']['throttled_s'])} ({fmt(r['apache-kafka']['unthrottled_s'])})",
         fmt(r["kafkascope"]["rate_share"]), fmt(r["apache-kafka"]["rate_share"]), fmt(r["ratio"]))
        for i, r in enumerate(rounds, 1)])
    emit_json("reassign_throttle", {"mb": args.mb, "throttle": args.throttle, "rounds": rounds})


if __name__ == "__main__":
    main()
