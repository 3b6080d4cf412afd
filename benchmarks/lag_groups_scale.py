"""The lag monitor's cost in consumer groups (issue 20: "the lag monitor with 1,000 groups"), on our broker and
on Apache Kafka in the same run.

    python -m benchmarks.lag_groups_scale [--groups 100,1000] [--partitions 10] [--rounds 3] [--impls ...]

Per implementation and group count, a fresh single broker and one topic of `--partitions` partitions; every group
commits an offset for every partition `--rounds` times (AdminClient.alter_consumer_group_offsets, the way
kafka-consumer-groups.sh --reset-offsets writes). Then a fresh lag monitor (in process) is started and measured:
  commit      time for the brokers to take all the commits (the group coordinator's side, for the ratio)
  catch-up    time for the monitor to poll the log ends, then read __consumer_offsets from the beginning and know
              every group's commits
  log-end     one log-end/LSO poll (ListOffsets twice), median of 5
  evaluate    the Burrow status of every group through the HTTP API's handler, all groups, median of 3
  /metrics    the render of the monitor's page, evaluations afresh (time, median of 5, and size)
  RSS         the process' resident memory growth during catch-up, per group (includes the consumer's buffers)
Ratios ours/Kafka per figure (the monitor-side figures run the same code: a ratio far from 1 means the backend
changed what the monitor sees), and the growth exponent between group counts (1 = linear).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator

from benchmarks._common import create_topic, emit_json, fmt, our_broker, print_table, ratio
from common.polling import wait_until

TOPIC = "lag-scale"


def _ms(f: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1000


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4   # pages of 4 KiB


def commit_all(bootstrap: str, groups: list[str], partitions: int, rounds: int) -> float:
    """Each group commits offsets r*10 for every partition, rounds times; seconds until all are acknowledged."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    t0 = time.perf_counter()
    for r in range(1, rounds + 1):
        futures = []
        for g in groups:   # the admin call takes one group per request
            tps = [TopicPartition(TOPIC, p, r * 10) for p in range(partitions)]
            futures += admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)],
                                                          request_timeout=60).values()
        for f in futures:
            f.result(120)
    return time.perf_counter() - t0


def measure_monitor(bootstrap: str, groups: int, partitions: int, rounds: int) -> dict:
    from lagmonitor.api import LagAPI
    from lagmonitor.collector import Collector, wall_ms
    from lagmonitor.config import LagConfig
    from lagmonitor.monitor import LagMonitor

    monitor = LagMonitor(LagConfig())
    collector = Collector(bootstrap, monitor)
    expected = groups * partitions * rounds
    seen = 0

    def caught_up() -> bool:
        nonlocal seen
        seen += collector.consume(0.2)
        with monitor.lock:
            return seen >= expected and len(monitor.storage.groups) >= groups

    t0 = time.perf_counter()
    collector.poll_broker_offsets(wall_ms())   # as Collector.run: commits to partitions not yet polled are dropped
    rss0 = _rss_kib()   # after the clients' connections: what grows with the groups
    wait_until(caught_up, 600.0, 0.0, what=f"lag monitor reading {expected} commits of {groups} groups")
    catch_up = time.perf_counter() - t0
    rss = _rss_kib() - rss0
    log_end = statistics.median(_ms(lambda: collector.poll_broker_offsets(wall_ms())) for _ in range(5))
    api = LagAPI(monitor, wall_ms)
    names = [f"/v3/kafka/local/consumer/{g}/status" for g in sorted(monitor.storage.groups)]

    def evaluate_all() -> None:
        monitor.evaluator.invalidate()   # every pass evaluates afresh (Burrow's cache would answer the repeats)
        for url in names:
            code, _ = api.handle("GET", url)
            assert code == 200, url
    evaluate = statistics.median(_ms(evaluate_all) for _ in range(3))
    page = api.metrics()

    def render_afresh() -> None:
        monitor.evaluator.invalidate()   # a 15 s scrape outlives the 10 s evaluation cache
        api.metrics()
    render = statistics.median(_ms(render_afresh) for _ in range(5))
    collector.consumer.close()
    return {"catch_up_s": round(catch_up, 3), "log_end_ms": round(log_end, 2), "evaluate_ms": round(evaluate, 1),
            "metrics_ms": round(render, 1), "metrics_kib": round(len(page.encode()) / 1024, 1),
            "rss_kib_per_group": round(rss / groups, 1)}


@contextlib.contextmanager
def backend(impl: str) -> Iterator[object]:
    if impl == "kafkascope":
        with our_broker() as b:
            yield b
    else:
        from kafkascope.local.apache_kafka import ApacheKafka

        with ApacheKafka(log_level="WARN") as k:
            yield k


def run(impl: str, groups: int, partitions: int, rounds: int) -> dict:
    with backend(impl) as b:
        bootstrap = b.bootstrap   # type: ignore[attr-defined]
        create_topic(bootstrap, TOPIC, partitions)
        names = [f"scale-group-{i:05d}" for i in range(groups)]
        commit_s = commit_all(bootstrap, names, partitions, rounds)
        result = {"commit_s": round(commit_s, 3), **measure_monitor(bootstrap, groups, partitions, rounds)}
    print(f"  {impl} {groups} groups: " + ", ".join(f"{k} {fmt(v)}" for k, v in result.items()), flush=True)
    return result


def exponent(small: float | None, large: float | None, n_small: int, n_large: int) -> float | None:
    """Growth exponent k in figure ∝ n^k between two sizes."""
    if not small or not large or n_small == n_large:
        return None
    return round(math.log(large / small) / math.log(n_large / n_small), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", default="100,1000", help="group counts, comma-separated")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="commits per group and partition")
    ap.add_argument("--impls", default="kafkascope,apache-kafka")
    args = ap.parse_args()
    sizes = [int(s) for s in args.groups.split(",")]
    impls = args.impls.split(",")
    results = {(i, n): run(i, n, args.partitions, args.rounds) for n in sizes for i in impls}
    keys = list(next(iter(results.values())))
    header = ("figure", *[f"{i} {n}" for n in sizes for i in impls])
    rows = [header, *[(k, *[fmt(results[(i, n)][k]) for n in sizes for i in impls]) for k in keys]]
    print_table(rows)
    ratios = {}
    if len(impls) == 2:
        ours, theirs = impls
        ratios = {f"{k}@{n}": ratio(results[(ours, n)][k], results[(theirs, n)][k]) for n in sizes for k in keys}
        print(f"ratio {ours}/{theirs}: " + ", ".join(f"{k} {fmt(v)}" for k, v in ratios.items()))
    growth = {f"{i}:{k}": exponent(results[(i, sizes[0])][k], results[(i, sizes[-1])][k], sizes[0], sizes[-1])
              for i in impls for k in keys} if len(sizes) > 1 else {}
    if growth:
        print("growth exponent (1 = linear): " + ", ".join(f"{k} {fmt(v)}" for k, v in growth.items()))
    emit_json("lag_groups_scale", {"partitions": args.partitions, "rounds": args.rounds,
                                   "results": {f"{i}@{n}": r for (i, n), r in results.items()},
                                   "ratios": ratios, "growth": growth})


if __name__ == "__main__":
    main()
