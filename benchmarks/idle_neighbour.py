"""What an idle cluster takes from the machine: the neighbour each side of `vs_apache --interleave` is measured
beside.

    python -m benchmarks.idle_neighbour [--impls kafkascope,apache-kafka] [--seconds 30] [--settle 10]

In an interleaved run both clusters are up; while one is measured the other idles: ZooKeeper pings, replica
fetchers' long polls, its timers and, for a JVM, its reaper, scheduler and GC threads. On two shared cores
whatever the idle one runs is taken from the measured one. For each implementation a fresh cluster (3 brokers,
one ZooKeeper) gets the topics a `vs_apache` warm-up and three passes leave (four rounds of five topics, RF=3,
nine partitions a round), settles for ``--settle`` seconds, then its processes (every thread) are read from /proc
over ``--seconds``: CPU time per second, and voluntary context switches per second (a thread that blocked, so
woke: each is a chance to take a core or a cache from the measured cluster). Ratio: first over second.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks._common import emit_json, fmt, print_table, ratio
from benchmarks.cluster_throughput import create_replicated_topic, warm_up_offsets_topic
from benchmarks.vs_apache import PASS_TOPICS
from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka
from kafkascope.local.cluster import Cluster

TICK = os.sysconf("SC_CLK_TCK")


def process_counters(pid: int) -> tuple[float, int]:
    """(CPU seconds, voluntary context switches) of a process, summed over its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK   # utime, stime (fields 14 and 15 of stat)
    switches = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches += next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
        except (FileNotFoundError, StopIteration):   # a thread that ended meanwhile
            continue
    return cpu, switches


def sample(pids: list[int], seconds: float) -> dict:
    before = [process_counters(p) for p in pids]
    t0 = time.monotonic()
    time.sleep(seconds)   # the measurement is of what happens while nothing is asked of the cluster
    elapsed = time.monotonic() - t0
    after = [process_counters(p) for p in pids]
    cpu = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
    woke = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    return {"cpu ms/s": round(1000 * cpu / elapsed, 1), "wake-ups/s": round(woke / elapsed),
            "processes": len(pids)}


@contextlib.contextmanager
def fresh_cluster(impl: str, prefix: str) -> Iterator[Cluster]:
    """A new 3-broker cluster in a temporary directory, __consumer_offsets made (as vs_apache starts its own)."""
    with tempfile.TemporaryDirectory(prefix=f"{prefix}-{impl}-") as tmp, \
            Cluster(Path(tmp), brokers=3, impl=impl, group_initial_rebalance_delay_ms=0) as c:
        warm_up_offsets_topic(c.bootstrap)
        yield c


@contextlib.contextmanager
def idle(impl: str, settle: float) -> Iterator[Cluster]:
    """A fresh cluster with the topics a vs_apache warm-up and three passes leave, settled: the neighbour."""
    with fresh_cluster(impl, "idle") as c:
        for i in range(4):   # vs_apache's warm-up and three passes
            for k, parts in PASS_TOPICS.items():
                create_replicated_topic(c.bootstrap, f"run{i}-{k}", parts, 3, {"min.insync.replicas": "2"})
        time.sleep(settle)   # leaders elected, fetchers in their long polls: no condition marks "settled"
        yield c


def cluster_pids(c: Cluster) -> list[int]:
    pids = [p for p in (b.pid for b in c.brokers) if p is not None]
    zk = c.zookeeper.pid
    return pids + [zk] if zk is not None else pids


def idle_cluster(impl: str, seconds: float, settle: float) -> dict:
    with idle(impl, settle) as c:
        return sample(cluster_pids(c), seconds)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.idle_neighbour", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--settle", type=float, default=10.0)
    args = p.parse_args(argv)
    ensure_kafka(ZK_VERSION)
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    results = {impl: idle_cluster(impl, args.seconds, args.settle) for impl in impls}
    pair = len(impls) > 1
    rows = [("idle cluster (3 brokers + ZooKeeper)", *impls, *(["/".join(impls[:2])] if pair else []))]
    for k in ("cpu ms/s", "wake-ups/s"):
        vals = [results[i][k] for i in impls]
        rows.append((k, *(fmt(v) for v in vals), *([fmt(ratio(*vals[:2]))] if pair else [])))
    print_table(rows)
    emit_json("idle_neighbour", {"settings": vars(args), "results": results})
    return results


if __name__ == "__main__":
    main()
