"""What SASL_SSL costs: the same traffic over PLAINTEXT and over SASL_SSL (SCRAM-SHA-512 clients, TLS, PLAIN
between brokers, ACL authorizer on), on our brokers and on Apache Kafka 3.9, same run.

    python -m benchmarks.security_overhead [--brokers 3] [--records 200000] [--seconds 8] [--rate 1000]
                                           [--repeat 3] [--impls kafkascope,apache-kafka]

Each (implementation, security) pair gets a fresh cluster from the `kafkascope cluster` launcher (`--security
sasl_ssl` is the kit of kafkascope/local/security.py: the same server.properties entries for both
implementations, the clients authenticating as the super user with the kit's client.properties). On topics with
RF=min(3, brokers), min.insync.replicas=2, acks=all, 1 KiB values: confluent-kafka produce throughput, consume
throughput of those records, and end-to-end latency (p50/p99) at ``--rate`` records/s with 5 in flight, as
benchmarks/vs_apache.py measures them. One discarded warm-up pass at half size, then ``--repeat`` passes; the
median is reported. The four clusters run one after the other on the same 2 cores; read the ratios
(SASL_SSL / PLAINTEXT per implementation: < 1 is the cost for throughput, > 1 for latency). The last line is a
JSON object with every figure.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, median_of_passes, print_table, produce, ratio
from benchmarks.cluster_throughput import create_replicated_topic, e2e_latency, warm_up_offsets_topic
from benchmarks.consume_throughput import consume
from common.client_properties import librdkafka_config
from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka
from kafkascope.local.launcher import ClusterLauncher
from kafkascope.local.security import SecurityKit

VALUE = 1024
PARTITIONS = 3
E2E_WARMUP_S = 2.0
E2E_PRODUCER = {"max.in.flight.requests.per.connection": 5}
MODES = ("plaintext", "sasl_ssl")


def measure(bs: str, client: dict, prefix: str, rf: int, records: int, seconds: float, rate: int) -> dict:
    """One pass on fresh topics `prefix`-tput and `prefix`-lat."""
    cfg = {"min.insync.replicas": str(min(2, rf))}
    create_replicated_topic(bs, f"{prefix}-tput", PARTITIONS, rf, cfg, client=client)
    create_replicated_topic(bs, f"{prefix}-lat", 1, rf, cfg, client=client)
    p = produce(bs, f"{prefix}-tput", PARTITIONS, records=records, seconds=seconds, value_size=VALUE,
                config={**client, "acks": "all"})
    c = consume(bs, f"{prefix}-tput", PARTITIONS, p["records"] + 1, 120, client=client)
    lat = e2e_latency(bs, f"{prefix}-lat", "all", rate, seconds, E2E_WARMUP_S, VALUE, E2E_PRODUCER, client=client)
    return {"produce MB/s": p["mb_per_s"], "consume MB/s": c["mb_per_s"],
            "e2e p50 ms": lat.get("p50_ms"), "e2e p99 ms": lat.get("p99_ms")}


def run_cluster(impl: str, mode: str, args: argparse.Namespace) -> dict:
    rf = min(3, args.brokers)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix=f"sec-{impl}-{mode}-") as tmp:
        launcher = ClusterLauncher(Path(tmp), brokers=args.brokers, impl=impl,
                                   broker_props={"group.initial.rebalance.delay.ms": 0},
                                   security=None if mode == "plaintext" else mode)
        try:
            launcher.prepare().start_all(timeout_s=120)
            bs = launcher.bootstrap
            client = ({} if mode == "plaintext" else
                      librdkafka_config(SecurityKit.load(launcher.data_dir / "security").client_properties()))
            if rf == 3:
                warm_up_offsets_topic(bs, client=client)
            t0 = time.monotonic()
            measure(bs, client, "warm-up", rf, args.records // 2, args.seconds / 2, args.rate)
            print(f"  {impl} {mode}: warm-up pass done ({time.monotonic() - t0:.0f} s, discarded)", flush=True)
            passes = []
            for i in range(args.repeat):
                os.sync()   # write the previous pass back off the clock (see benchmarks/vs_apache.py)
                passes.append(measure(bs, client, f"run{i}", rf, args.records, args.seconds, args.rate))
                print(f"  {impl} {mode}: pass {i + 1}/{args.repeat}: "
                      + ", ".join(f"{k} {fmt(v)}" for k, v in passes[-1].items()), flush=True)
        finally:
            launcher.shutdown()
    load.append(os.getloadavg()[0])
    return {"median": median_of_passes(passes), "passes": passes, "loadavg_1m_start_end": load}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.security_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--rate", type=int, default=1000, help="e2e latency: records/s (open loop)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    if "apache-kafka" in impls:
        ensure_kafka(ZK_VERSION)
    runs = {f"{impl} {mode}": run_cluster(impl, mode, args) for impl in impls for mode in MODES}
    med = {k: r["median"] for k, r in runs.items()}
    keys = list(next(iter(med.values())))
    header = ("metric", *med, *(f"{i} SASL_SSL/PLAINTEXT" for i in impls))
    rows = [header]
    for k in keys:
        cost = [ratio(med[f"{i} sasl_ssl"][k], med[f"{i} plaintext"][k]) for i in impls]
        rows.append((k, *(fmt(m[k]) for m in med.values()), *(fmt(c) for c in cost)))
    rf = min(3, args.brokers)
    print(f"\nSASL_SSL vs PLAINTEXT: {args.brokers} brokers, RF={rf}, acks=all, {VALUE} B values, e2e at {args.rate}/s; "
          f"median of {args.repeat} pass(es); 1-min load average "
          + ", ".join(f"{k} {a:.1f}->{b:.1f}" for k, (a, b) in ((k, r["loadavg_1m_start_end"]) for k, r in runs.items())))
    print_table(rows)
    if len(impls) == 2:
        print("\nours/Kafka over SASL_SSL: " + ", ".join(
            f"{k} {fmt(ratio(med['kafkascope sasl_ssl'][k], med['apache-kafka sasl_ssl'][k]))}" for k in keys))
    emit_json("security_overhead", {"settings": vars(args), "results": med, "runs": runs})
    return med


if __name__ == "__main__":
    main()
