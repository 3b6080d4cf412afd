"""Does an idle neighbour cluster move a cluster's latency? The question behind `vs_apache --interleave`'s bias.

    python -m benchmarks.neighbour_effect [--impls kafkascope,apache-kafka] [--cycles 3] [--seconds 8]

For each implementation M (measured) and the other one N (neighbour): a fresh cluster of M (3 brokers, RF=3,
min.insync.replicas=2) gets vs_apache's e2e load (1,000 records/s, linger.ms=5, 5 in flight, acks=all) twice as a
warm-up, then ``--cycles`` cycles of: N started as `benchmarks.idle_neighbour` leaves it (its topics made, settled),
M's e2e measured beside it; N shut down, M's e2e measured alone. The two measurements of a cycle are a minute
apart, the order the same in every cycle. Printed per M: e2e p50 beside N and alone, cycle by cycle, and the
median of the ratios beside/alone (> 1: the neighbour slows M down).
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks._common import emit_json
from benchmarks.cluster_throughput import create_replicated_topic, e2e_latency
from benchmarks.idle_neighbour import fresh_cluster, idle
from benchmarks.vs_apache import E2E_PRODUCER, E2E_WARMUP_S, VALUE
from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka


def measured(impl: str, neighbour: str, cycles: int, seconds: float, settle: float) -> dict:
    with fresh_cluster(impl, "measured") as c:
        bs = c.bootstrap
        n = 0

        def e2e() -> float:
            nonlocal n
            n += 1
            topic = f"lat-{n}"
            create_replicated_topic(bs, topic, 1, 3, {"min.insync.replicas": "2"})
            return e2e_latency(bs, topic, "all", 1000, seconds, E2E_WARMUP_S, VALUE, E2E_PRODUCER)["p50_ms"]

        e2e(), e2e()   # warm-up (a JVM's request path compiles under load)
        beside, alone = [], []
        for i in range(cycles):
            with idle(neighbour, settle):
                beside.append(e2e())
            alone.append(e2e())
            print(f"  {impl}: cycle {i + 1}/{cycles}: e2e p50 beside {neighbour} {beside[-1]:.3f} ms, "
                  f"alone {alone[-1]:.3f} ms", flush=True)
        ratios = [b / a for b, a in zip(beside, alone, strict=True)]
        return {"neighbour": neighbour, "beside_ms": beside, "alone_ms": alone,
                "beside_over_alone_median": round(statistics.median(ratios), 3),
                "beside_over_alone": [round(r, 3) for r in ratios]}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.neighbour_effect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    p.add_argument("--cycles", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--settle", type=float, default=10.0)
    args = p.parse_args(argv)
    ensure_kafka(ZK_VERSION)
    a, b = [i.strip() for i in args.impls.split(",")][:2]
    results = {a: measured(a, b, args.cycles, args.seconds, args.settle),
               b: measured(b, a, args.cycles, args.seconds, args.settle)}
    for impl, r in results.items():
        print(f"{impl}: e2e p50 beside an idle {r['neighbour']} / alone: median {r['beside_over_alone_median']} "
              f"(cycles {', '.join(map(str, r['beside_over_alone']))})")
    emit_json("neighbour_effect", {"settings": vars(args), "results": results})
    return results


if __name__ == "__main__":
    main()
