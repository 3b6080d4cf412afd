"""A throttled partition move, ours against Apache Kafka 3.9 (ZooKeeper mode), same run.

    python -m benchmarks.reassign_throttle [--mb 20] [--throttle 2000000] [--rounds 1]

Per implementation, a fresh 3-broker cluster (ZooKeeper and 3 brokers), one after the other (never both at once on
two cores):

1. a topic with one partition on broker A, filled with `--mb` MB of 1 KB records (acks=1);
2. `kafka-reassign-partitions.sh --execute --throttle R` (Kafka 3.9's own tool) adds a replica on broker B;
3. the move is done when B is in the partition's ISR (polled every 50 ms with Metadata): the **effective rate** is
   B's log size over that time, as a share of R; the **steady rate** is how fast B's copy grew (its segment files,
   sampled meanwhile) from a quarter to three quarters of its size, without the first fetch and the move's end;
   the **copy share** is the log's size over the copy itself (B's first byte to its last), without the time the
   controller takes to start the move, which is not the throttle's;
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

    admin = AdminClient({"bootstrap.servers": bootstrap})   # held until the result: a dropped client fails it
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[broker]])])[topic].result(60)
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


def _replica_bytes(data_dir: Path, broker: int, topic: str) -> int:
    """The size of the broker's copy of the partition, from its segment files (the same layout for both: the
    launcher's broker-<id> directory)."""
    return sum(f.stat().st_size for f in (data_dir / f"broker-{broker}").rglob(f"{topic}-0/*.log"))


def steady_rate(samples: list[tuple[float, int]]) -> float | None:
    """Bytes per second while the copy grew from a quarter to three quarters of its final size: the throttled
    rate itself, without the free first fetch and the end of the move."""
    if not samples or samples[-1][1] <= 0:
        return None
    final = samples[-1][1]
    lo = next(((t, n) for t, n in samples if n >= final / 4), None)
    hi = next(((t, n) for t, n in samples if n >= final * 3 / 4), None)
    if lo is None or hi is None or hi[0] <= lo[0]:
        return None
    return (hi[1] - lo[1]) / (hi[0] - lo[0])


def _phases(samples: list[tuple[float, int]], started: float) -> tuple[float | None, float | None]:
    """Seconds from --execute to the copy's first byte, and to its last (its final size)."""
    final = samples[-1][1] if samples else 0
    first = next((t - started for t, n in samples if n > 0), None)
    last = next((t - started for t, n in samples if n >= final > 0), None)
    return first, last


def _move(bootstrap: str, topic: str, source: int, target: int, throttle: int | None, work: Path,
          data_dir: Path) -> tuple[float, float | None, tuple[float | None, float | None]]:
    """Seconds from --execute until `target` is in the ISR, the steady rate of the copy meanwhile, and when its
    first and last bytes arrived."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    plan = work / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [source, target], "log_dirs": ["any", "any"]}]}))
    bs = ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)]
    started = time.monotonic()
    _tool(*bs, "--execute", *(["--throttle", str(throttle)] if throttle else []))
    deadline = started + 600
    samples: list[tuple[float, int]] = []
    while not _in_isr(admin, topic, target):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} not moved in 600 s")
        samples.append((time.monotonic(), _replica_bytes(data_dir, target, topic)))
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    samples.append((time.monotonic(), _replica_bytes(data_dir, target, topic)))
    for _ in range(60):   # --verify clears the throttles once the controller has finished the move
        if "is completed" in _tool(*bs, "--verify"):
            break
        time.sleep(1)
    return elapsed, steady_rate(samples), _phases(samples, started)


def one_impl(impl: str, mb: int, throttle: int) -> dict:
    from kafkascope.local.cluster import Cluster

    work = Path(tempfile.mkdtemp(prefix=f"kscope-reassign-{impl}-"))
    try:
        with Cluster(work / "cluster", brokers=3, impl=impl) as c:
            source, target, _ = c.broker_ids
            size = _fill(c.bootstrap, "throttled", source, mb)
            _fill(c.bootstrap, "free", source, mb)
            throttled_s, steady, (first_s, copied_s) = _move(c.bootstrap, "throttled", source, target, throttle,
                                                              work, c.data_dir)
            log_bytes = _replica_bytes(c.data_dir, target, "throttled")
            free_s, _, _ = _move(c.bootstrap, "free", source, target, None, work, c.data_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"payload_bytes": size, "log_bytes": log_bytes, "throttled_s": round(throttled_s, 2),
            "unthrottled_s": round(free_s, 2), "rate_share": round(log_bytes / throttled_s / throttle, 3),
            "steady_share": round(steady / throttle, 3) if steady else None,
            "first_byte_s": first_s and round(first_s, 2), "copied_s": copied_s and round(copied_s, 2),
            "copy_share": round(log_bytes / (copied_s - first_s) / throttle, 3) if first_s and copied_s else None}


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
        row["steady_ratio"] = ratio(row["kafkascope"]["steady_share"], row["apache-kafka"]["steady_share"])
        row["copy_ratio"] = ratio(row["kafkascope"]["copy_share"], row["apache-kafka"]["copy_share"])
        rounds.append(row)
        print(f"  round {rnd}: ours {row['kafkascope']}, Kafka {row['apache-kafka']}, ours/Kafka {row['ratio']}",
              flush=True)
    def pair(r: dict, key: str) -> str:
        return f"{fmt(r['kafkascope'][key])} / {fmt(r['apache-kafka'][key])}"

    print_table([("round", "move s ours / Kafka", "free s ours / Kafka", "whole move share", "ours/Kafka",
                  "copy share", "ours/Kafka", "steady share", "ours/Kafka")] + [
        (str(i), pair(r, "throttled_s"), pair(r, "unthrottled_s"), pair(r, "rate_share"), fmt(r["ratio"]),
         pair(r, "copy_share"), fmt(r["copy_ratio"]), pair(r, "steady_share"), fmt(r["steady_ratio"]))
        for i, r in enumerate(rounds, 1)])
    emit_json("reassign_throttle", {"mb": args.mb, "throttle": args.throttle, "rounds": rounds})


if __name__ == "__main__":
    main()
