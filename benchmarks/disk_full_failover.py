"""Failover when a partition leader's disk fills: ours against Apache Kafka 3.9 (ZooKeeper mode), same run.

    python -m benchmarks.disk_full_failover [--rounds 3] [--impls kafkascope,apache-kafka]

Per implementation: one ZooKeeper and three brokers (the `kafkascope cluster` launcher, `--impl`), one topic of
1 partition, RF=3, min.insync.replicas=2, the launcher's zookeeper.session.timeout.ms (6 s; Kafka's default is
18 s). Each round:

1. the leader's files may grow 1 MiB more (RLIMIT_FSIZE set on its running process: a write past the limit fails
   with EFBIG, as one on a full disk fails with ENOSPC, and only that broker is affected);
2. one acks=all producer sends a 100-byte record every 20 ms (as `benchmarks.failover`), while a second one
   writes 64 KiB records to the partition until the leader's write fails;
3. the figure is the **outage**: the longest gap between two acknowledgements the first producer saw. Kafka takes
   the log dir offline and, with one log dir, halts the broker (without closing its ZooKeeper session, so the
   controller moves the leadership once the session expires); ours closes the session before halting;
4. the halted broker is started again (no limit) and the round waits for a full ISR.

Prints each round, the p50/max per implementation and the ratio ours/Kafka. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import resource
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json
from benchmarks.cluster_throughput import create_replicated_topic, wait_full_isr
from benchmarks.failover import TOPIC, Sender, partition_state
from kafkascope.local.cluster import Cluster, wait_for

ROOM = 1 << 20
BIG = b"x" * (64 << 10)
HALT_LINE = "Shutdown broker because all log dirs"


def _largest_file(root: Path) -> int:
    return max((p.stat().st_size for p in root.rglob("*") if p.is_file()), default=0)


def _fill(bootstrap: str, deadline_s: float, stop) -> int:
    """64 KiB acks=all records to the partition until `stop()` (the leader halted) or the deadline."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "message.timeout.ms": 30_000,
                  "log_level": 2})
    sent, end = 0, time.monotonic() + deadline_s
    while not stop() and time.monotonic() < end:
        try:
            p.produce(TOPIC, BIG, partition=0)
            sent += 1
        except BufferError:
            pass
        p.poll(0.01)
    p.flush(1)
    return sent


def one_round(c: Cluster, zk, sender: Sender, rnd: int) -> dict:
    leader = int(partition_state(zk, TOPIC, 0)["leader"])
    victim = c.broker(leader)
    pid = victim.pid
    assert pid is not None
    limit = _largest_file(victim.data_dir) + ROOM
    with sender.lock:
        sender.acked_at.clear()
    t0 = time.perf_counter()
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, limit))
    halted_at: list[float] = []

    def stop() -> bool:
        if not halted_at and victim.state != "running":
            halted_at.append(time.perf_counter())
        return bool(halted_at)

    filler = concurrent.futures.ThreadPoolExecutor(1).submit(_fill, c.bootstrap, 60, stop)
    deadline = time.perf_counter() + 120
    new = leader
    while time.perf_counter() < deadline:   # the steady stream, until the new leader acknowledges it
        sender.send(rnd)
        if stop():
            new = int(partition_state(zk, TOPIC, 0)["leader"])
            with sender.lock:
                if new not in (leader, -1) and sender.acked_at and sender.acked_at[-1] > halted_at[0]:
                    break
        time.sleep(0.02)
    else:
        raise TimeoutError(f"round {rnd}: no new leader acknowledging within 120 s")
    filled = filler.result()
    for _ in range(25):   # half a second more of sends, so the gap closes on a steady stream
        sender.send(rnd)
        time.sleep(0.02)
    sender.producer.flush(30)
    with sender.lock:
        times = sorted(t for t in sender.acked_at if t >= t0)
    outage = max((b - a for a, b in zip(times, times[1:], strict=False)), default=float("nan"))
    halted = HALT_LINE in victim.log_tail(400)
    victim.start()
    from confluent_kafka.admin import AdminClient

    wait_full_isr(AdminClient({"bootstrap.servers": c.bootstrap}), TOPIC, 1, 3, 120)
    return {"round": rnd, "leader": leader, "new_leader": new, "big_records": filled, "halt_logged": halted,
            "outage_s": round(outage, 3)}


def run_impl(impl: str, rounds: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix=f"diskfull-{impl}-") as tmp, \
            Cluster(Path(tmp), brokers=3, impl=impl) as c:
        create_replicated_topic(c.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "2"})
        zk = c.kazoo(chroot=False)
        sender = Sender(c.bootstrap)
        out = []
        for rnd in range(1, rounds + 1):
            wait_for(lambda: sender.sync_once(10), 60, what="the partition writable before the round")
            r = one_round(c, zk, sender, rnd)
            print(f"  {impl}: round {rnd}: leader {r['leader']} -> {r['new_leader']}, outage {r['outage_s']:.3f} s, "
                  f"halt logged {r['halt_logged']}, {r['big_records']} fill records", flush=True)
            out.append(r)
        return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="benchmarks.disk_full_failover", description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--impls", default="kafkascope,apache-kafka")
    args = ap.parse_args(argv)
    print(f"# disk-full failover: 3 brokers, RF=3, min.insync.replicas=2, {args.rounds} rounds each", flush=True)
    result: dict = {}
    for impl in args.impls.split(","):
        rounds = run_impl(impl, args.rounds)
        outages = [r["outage_s"] for r in rounds]
        result[impl] = {"p50_s": round(statistics.median(outages), 3), "max_s": max(outages), "rounds": rounds}
        print(f"  {impl}: outage p50 {result[impl]['p50_s']:.3f} s, max {result[impl]['max_s']:.3f} s", flush=True)
    if {"kafkascope", "apache-kafka"} <= result.keys():
        ours, kafka = result["kafkascope"], result["apache-kafka"]
        result["ratio_p50"] = round(ours["p50_s"] / kafka["p50_s"], 3)
        result["ratio_max"] = round(ours["max_s"] / kafka["max_s"], 3)
        print(f"  outage ours/Kafka: p50 {result['ratio_p50']}x, max {result['ratio_max']}x", flush=True)
    emit_json("disk_full_failover", result)
    return result


if __name__ == "__main__":
    main()
