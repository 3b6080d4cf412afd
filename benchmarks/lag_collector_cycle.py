"""The lag collector's log-end poll with and without kafka_exporter's topic metadata poll, on a few hundred
partitions (our broker, or a cluster with --brokers 3).

    python -m benchmarks.lag_collector_cycle [--topics 30] [--partitions 10] [--rounds 30] [--brokers 1]

Each round measures, alternately in the same run (a 2-core machine is noisy):
  alone      Collector.poll_broker_offsets (metadata refresh + ListOffsets latest), as before the change;
  overlapped the same while the MetadataPoller's poll (Metadata + ListOffsets earliest) runs in its thread,
             started at the same instant (its worst case: both on the same interval tick);
  inline     the log-end poll followed by the metadata poll in one thread: what the cycle would cost had the
             metadata been fetched on the collector's own loop;
and the time to render /metrics with and without the topic series.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import threading
import time

from benchmarks._common import create_topic, our_broker, our_cluster
from lagmonitor.api import LagAPI
from lagmonitor.collector import Collector, MetadataPoller, wall_ms
from lagmonitor.config import CollectorConfig, LagConfig
from lagmonitor.monitor import LagMonitor


def _ms(f) -> float:
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1000


def _overlapped(collector: Collector, poller: MetadataPoller) -> float:
    t = threading.Thread(target=poller.poll)
    t.start()
    ms = _ms(lambda: collector.poll_broker_offsets(wall_ms()))
    t.join(60)
    return ms


def measure(bootstrap: str, rounds: int) -> dict:
    # topic_refresh 0: every log-end poll also refreshes the topic list, as the first one after start does
    monitor = LagMonitor(LagConfig(collector=CollectorConfig(topic_refresh_s=0)))
    collector, poller = Collector(bootstrap, monitor), MetadataPoller(bootstrap, monitor)
    collector.poll_broker_offsets(wall_ms())
    poller.poll()   # warm both clients' connections
    runs: dict[str, list[float]] = {"alone": [], "overlapped": [], "inline": [], "poller": []}
    for _ in range(rounds):
        runs["alone"].append(_ms(lambda: collector.poll_broker_offsets(wall_ms())))
        runs["overlapped"].append(_overlapped(collector, poller))
        runs["inline"].append(_ms(lambda: (collector.poll_broker_offsets(wall_ms()), poller.poll())))
        runs["poller"].append(_ms(poller.poll))
    api = LagAPI(monitor, wall_ms)
    with_meta = statistics.median(_ms(api.metrics) for _ in range(rounds))
    meta, monitor.cluster_meta = monitor.cluster_meta, None
    without_meta = statistics.median(_ms(api.metrics) for _ in range(rounds))
    monitor.cluster_meta = meta
    collector.consumer.close()
    med = {k: round(statistics.median(v), 2) for k, v in runs.items()}
    p90 = {k: round(sorted(v)[int(0.9 * (len(v) - 1))], 2) for k, v in runs.items()}
    return {"median_ms": med, "p90_ms": p90, "metrics_render_ms": {"with_topic_series": round(with_meta, 2),
                                                                 "without": round(without_meta, 2)},
            "ratio_overlapped_alone": round(med["overlapped"] / med["alone"], 3),
            "ratio_inline_alone": round(med["inline"] / med["alone"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--brokers", type=int, default=1)
    args = ap.parse_args()
    target = our_broker() if args.brokers == 1 else our_cluster(args.brokers)
    with contextlib.ExitStack() as stack:
        b = stack.enter_context(target)
        for i in range(args.topics):
            create_topic(b.bootstrap, f"cycle-{i}", args.partitions)
        r = measure(b.bootstrap, args.rounds)
    n = args.topics * args.partitions
    print(f"{n} partitions on {args.brokers} broker(s), {args.rounds} rounds; median (p90) ms:")
    for k in ("alone", "overlapped", "inline", "poller"):
        print(f"  {k:<10} {r['median_ms'][k]:8.2f} ({r['p90_ms'][k]:.2f})")
    print(f"  overlapped/alone {r['ratio_overlapped_alone']}, inline/alone {r['ratio_inline_alone']}; /metrics "
          f"render {r['metrics_render_ms']['without']} -> {r['metrics_render_ms']['with_topic_series']} ms")
    print(json.dumps({"benchmark": "lag_collector_cycle", "partitions": n, "brokers": args.brokers, **r}))


if __name__ == "__main__":
    main()
