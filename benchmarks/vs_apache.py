"""Side by side: our broker vs Apache Kafka 3.9 (ZooKeeper mode), same machine, same run, same load generators.

    python -m benchmarks.vs_apache [--seconds 8] [--records 300000] [--rate 1000] [--perf-records 200000]
                                   [--e2e-records 2000] [--repeat 3] [--warmup-fraction 1]
                                   [--brokers 3] [--impls kafkascope,apache-kafka] [--interleave]

``--impls apache-kafka,apache-kafka`` (or ``kafkascope,kafkascope``) measures one implementation against itself
(an A/A run): the second cluster is labelled ``apache-kafka#2``, and the ratio column, always the first
implementation over the second, shows how far the benchmark's own noise moves a ratio of two equal clusters.

For each implementation a fresh cluster is started with the `kafkascope cluster` launcher (`--impl`): one
ZooKeeper and ``--brokers`` brokers on loopback (default 3), then, on topics with RF=min(3, brokers),
min.insync.replicas=2, acks=all (the cluster issue's settings; 1 KiB values, linger.ms=5, 3 partitions):

* confluent-kafka (librdkafka) as the load generator: produce throughput (benchmarks/_common.produce, up to
  ``--records`` / ``--seconds``), consume throughput of those records (benchmarks/consume_throughput.consume) and
  end-to-end latency at ``--rate`` records/s (benchmarks/cluster_throughput.e2e_latency, HDR, p50/p99), with
  max.in.flight.requests.per.connection=5 and once more with librdkafka's default (1,000,000);
* Kafka's own tools (Java client, jars from Maven Central): ProducerPerformance (``--perf-records`` records,
  acks=all, linger.ms=5, batch.size=1 MiB), ConsumerPerformance (the same records) and EndToEndLatency
  (``--e2e-records`` round trips, acks=all).

Steady state, the same for both: every measurement first runs once at ``--warmup-fraction`` of its size and is
discarded (a fresh JVM on 2 shared cores needs tens of seconds of traffic before its request path is
compiled; a half-size warm-up still left Kafka's first pass at half its produce rate), then ``--repeat``
times on fresh topics, each after an os.sync(); the median is reported. The e2e clock starts once its consumer has received a record.

Why two e2e rows: a broker answers one request per connection at a time (Kafka mutes the connection, ours reads
the next frame after answering). With librdkafka's unbounded in-flight window and linger.ms=5, batches of ~5
records leave every 5 ms whatever happens; once an acks=all round trip takes longer than that, the batches queue
in the socket and latency grows for as long as the run lasts (this was the seconds-long p99 of the first runs
against cold Kafka JVMs). With 5 in flight (Kafka's own clients' default) the batches grow instead and the
latency settles.

The clusters run one after the other (never at once) on the same 2 cores; client and brokers share them, so
read the ratios (ours / Kafka: > 1 is better for throughput, < 1 is better for latency). Two halves minutes apart
meet different moments of a shared machine, and a slow minute on one side moves the ratio by more than the
brokers differ; with ``--interleave`` both clusters are up at once, the idle one waits while the other is
measured, and their passes alternate, the order reversed every round. The 1-minute load average at each cluster's
start and end is printed. The last line is one JSON object with every figure.

Interleaving is not neutral: the idle cluster is the measured one's neighbour, and an idle Kafka cluster (3 JVMs and
ZooKeeper) takes ~90-100 ms of CPU a second and wakes ~600 times a second, ours ~10 ms and ~55
(`benchmarks.idle_neighbour`). Ours is measured beside the busier neighbour, so the interleaved ratios lean against
ours. One after the other, the first cluster is favoured (~0.08 on the e2e median ratio in six runs, three in each
order): run both orders. How far a ratio moves between two equal clusters is what an A/A run shows;
`benchmarks.pooled_ratio` pools runs into paired round ratios with an interval (docs/latency.md, "The instrument").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, median_of_passes, print_table, produce, ratio
from benchmarks.cluster_throughput import create_replicated_topic, e2e_latency, warm_up_offsets_topic
from benchmarks.consume_throughput import consume
from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka, tool_command
from kafkascope.local.cluster import Cluster

VALUE = 1024
PARTITIONS = 3
E2E_WARMUP_S = 2.0  # unrecorded start of each e2e run
# Kafka's own clients' default (and librdkafka's with idempotence): a produce waiting for acks=all holds back
# the next batches, which grow instead of queueing as a backlog of tiny requests behind it (see the docstring).
E2E_PRODUCER = {"max.in.flight.requests.per.connection": 5}
# The topics one pass creates, and their partition counts.
PASS_TOPICS = {"tput": PARTITIONS, "lat": 1, "lat-default": 1, "perf": PARTITIONS, "e2e": 1}


def _tool(main: str, *args: str, timeout: float = 600) -> str:
    res = subprocess.run(tool_command(main, *args, heap_opts="-Xmx1g"), capture_output=True, text=True,
                         timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{main} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return res.stdout


def producer_perf(bootstrap: str, topic: str, records: int) -> dict:
    out = _tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
                "--record-size", str(VALUE), "--throughput", "-1", "--producer-props",
                f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5", "batch.size=1048576")
    m = re.search(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                  r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th", out, re.M)
    if not m:
        raise RuntimeError(f"ProducerPerformance output not understood:\n{out[-2000:]}")
    # ProducerPerformance's MB is 1024*1024 bytes; report decimal MB/s like the rest
    return {"records": int(m.group(1)), "records_per_s": float(m.group(2)),
            "mb_per_s": round(float(m.group(2)) * VALUE / 1e6, 2), "avg_latency_ms": float(m.group(4)),
            "p99_latency_ms": float(m.group(8))}


def consumer_perf(bootstrap: str, topic: str, records: int) -> dict:
    out = _tool("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                "--messages", str(records), "--timeout", "120000")
    header, row = [line for line in out.splitlines() if "," in line][-2:]
    s = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in row.split(",")], strict=False))
    return {"records": int(s["data.consumed.in.nMsg"]), "records_per_s": float(s["nMsg.sec"]),
            "mb_per_s": round(float(s["MB.sec"]) * 1048576 / 1e6, 2)}


def end_to_end_latency(bootstrap: str, topic: str, records: int) -> dict:
    out = _tool("org.apache.kafka.tools.EndToEndLatency", bootstrap, topic, str(records), "all", str(VALUE))
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    pct = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)", out)
    if not (avg and pct):
        raise RuntimeError(f"EndToEndLatency output not understood:\n{out[-2000:]}")
    return {"avg_ms": float(avg.group(1)), "p50_ms": float(pct.group(1)), "p99_ms": float(pct.group(2))}


def measure(bs: str, prefix: str, rf: int, records: int, seconds: float, rate: int, perf_records: int,
            e2e_records: int) -> dict:
    """One pass of every measurement on topics named `prefix`-* (created before any of them runs)."""
    topic_cfg = {"min.insync.replicas": str(min(2, rf))}
    t = {k: f"{prefix}-{k}" for k in PASS_TOPICS}
    for k, name in t.items():
        create_replicated_topic(bs, name, PASS_TOPICS[k], rf, topic_cfg)
    out: dict = {}
    p = produce(bs, t["tput"], PARTITIONS, records=records, seconds=seconds, value_size=VALUE,
                config={"acks": "all"})
    out["confluent produce MB/s"] = p["mb_per_s"]
    out["confluent consume MB/s"] = consume(bs, t["tput"], PARTITIONS, p["records"] + 1, 120)["mb_per_s"]
    lat = e2e_latency(bs, t["lat"], "all", rate, seconds, E2E_WARMUP_S, VALUE, E2E_PRODUCER)
    out["confluent e2e p50 ms"] = lat.get("p50_ms")
    out["confluent e2e p99 ms"] = lat.get("p99_ms")
    lat = e2e_latency(bs, t["lat-default"], "all", rate, seconds, E2E_WARMUP_S, VALUE)
    out["confluent e2e p99 ms, unbounded in-flight"] = lat.get("p99_ms")
    pp = producer_perf(bs, t["perf"], perf_records)
    out["ProducerPerformance MB/s"] = pp["mb_per_s"]
    out["ProducerPerformance avg ms"] = pp["avg_latency_ms"]
    out["ConsumerPerformance MB/s"] = consumer_perf(bs, t["perf"], perf_records)["mb_per_s"]
    e2e = end_to_end_latency(bs, t["e2e"], e2e_records)
    out["EndToEndLatency avg ms"] = e2e["avg_ms"]
    out["EndToEndLatency p99 ms"] = e2e["p99_ms"]
    return out


def _warm_up(bs: str, rf: int, args: argparse.Namespace) -> None:
    """The discarded pass, every measurement at ``--warmup-fraction`` of its size."""
    w = args.warmup_fraction
    measure(bs, "warm-up", rf, max(1, int(args.records * w)), args.seconds * w, args.rate,
            max(1, int(args.perf_records * w)), max(1, int(args.e2e_records * w)))


def _measured_pass(impl: str, bs: str, rf: int, i: int, args: argparse.Namespace) -> dict:
    # Each pass writes ~1.5 GB (RF=3); past the kernel's dirty limits writeback throttles produce (a run without
    # this: ours 122 -> 66 MB/s from pass 2). Write the previous pass's data back now, off the clock.
    os.sync()
    out = measure(bs, f"run{i}", rf, args.records, args.seconds, args.rate, args.perf_records, args.e2e_records)
    print(f"  {impl}: pass {i + 1}/{args.repeat}: " + ", ".join(f"{k} {fmt(v)}" for k, v in out.items()), flush=True)
    return out


def labelled(impls: list[str]) -> dict[str, str]:
    """Label -> implementation, in order; a repeated implementation is labelled ``impl#2``, ``impl#3``..."""
    out: dict[str, str] = {}
    for impl in impls:
        n = sum(1 for i in out.values() if i == impl)
        out[impl if n == 0 else f"{impl}#{n + 1}"] = impl
    return out


def run_impl(impl: str, args: argparse.Namespace) -> dict:
    """A fresh cluster: one discarded warm-up pass (JIT, page cache, connections), then ``--repeat`` passes;
    the median of each figure is kept, every pass is in the JSON."""
    rf = min(3, args.brokers)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix=f"vs-apache-{impl}-") as tmp, \
            Cluster(Path(tmp), brokers=args.brokers, impl=impl, group_initial_rebalance_delay_ms=0) as c:
        bs = c.bootstrap
        if rf == 3:
            warm_up_offsets_topic(bs)  # the consumers have a group.id: __consumer_offsets exists before measuring
        print(f"  {impl}: {args.brokers} brokers up", flush=True)
        t0 = time.monotonic()
        _warm_up(bs, rf, args)
        print(f"  {impl}: warm-up pass done ({time.monotonic() - t0:.0f} s, discarded)", flush=True)
        passes = [_measured_pass(impl, bs, rf, i, args) for i in range(args.repeat)]
    load.append(os.getloadavg()[0])
    return {"median": median_of_passes(passes), "passes": passes, "loadavg_1m_start_end": load}


def run_interleaved(impls: list[str], args: argparse.Namespace) -> dict[str, dict]:
    """Every cluster up at once, each idle while another is measured: the warm-up passes, then ``--repeat``
    rounds of one pass per implementation, the order reversed every round, so a slow minute of the machine
    falls on both sides alike. Returns the same per-label results as `run_impl` (see `labelled`)."""
    rf = min(3, args.brokers)
    by_label = labelled(impls)
    labels = list(by_label)
    out: dict[str, dict] = {i: {"passes": [], "loadavg_1m_start_end": [os.getloadavg()[0]]} for i in labels}
    with tempfile.TemporaryDirectory(prefix="vs-apache-") as tmp, contextlib.ExitStack() as stack:
        clusters = {label: stack.enter_context(Cluster(Path(tmp) / label.replace("#", "-"), brokers=args.brokers,
                                                       impl=impl, group_initial_rebalance_delay_ms=0))
                    for label, impl in by_label.items()}
        for impl, c in clusters.items():
            if rf == 3:
                warm_up_offsets_topic(c.bootstrap)
            _warm_up(c.bootstrap, rf, args)
            print(f"  {impl}: {args.brokers} brokers up, warm-up pass done (discarded)", flush=True)
        for i in range(args.repeat):
            for impl in (labels if i % 2 == 0 else labels[::-1]):
                out[impl]["passes"].append(_measured_pass(impl, clusters[impl].bootstrap, rf, i, args))
    for r in out.values():
        r["loadavg_1m_start_end"].append(os.getloadavg()[0])
        r["median"] = median_of_passes(r["passes"])
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vs_apache", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--records", type=int, default=300_000)
    p.add_argument("--rate", type=int, default=1000, help="e2e latency: records/s (open loop)")
    p.add_argument("--perf-records", type=int, default=200_000)
    p.add_argument("--e2e-records", type=int, default=2000)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3, help="measured passes per implementation; the median is kept")
    p.add_argument("--warmup-fraction", type=float, default=1.0,
                   help="the discarded warm-up pass runs every measurement at this fraction of its size")
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    p.add_argument("--interleave", action="store_true",
                   help="run every cluster at once and alternate their passes (the order reversed each round)")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    ensure_kafka(ZK_VERSION)
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    by_label = labelled(impls)
    runs = run_interleaved(impls, args) if args.interleave else {
        label: run_impl(impl, args) for label, impl in by_label.items()}
    labels = list(by_label)
    results = {label: runs[label]["median"] for label in labels}
    keys = list(next(iter(results.values())))
    ratio_name = "ours/Kafka" if labels[:2] == ["kafkascope", "apache-kafka"] else "/".join(labels[:2])
    rows = [("metric", *labels, ratio_name)]
    for k in keys:
        vals = [results[i].get(k) for i in labels]
        r = ratio(*vals[:2]) if len(vals) > 1 else None
        rows.append((k, *(fmt(v) for v in vals), fmt(r)))
    rf = min(3, args.brokers)
    print(f"\nours vs Apache Kafka {ZK_VERSION}: {args.brokers} brokers, RF={rf}, min.insync.replicas={min(2, rf)}, "
          f"acks=all, {VALUE} B values; median of {args.repeat} pass(es) after a warm-up pass; 1-min load average "
          + ", ".join(f"{i} {a:.1f}->{b:.1f}" for i, (a, b) in ((i, runs[i]["loadavg_1m_start_end"]) for i in labels)))
    print_table(rows)
    emit_json("vs_apache", {"settings": vars(args), "results": results, "runs": runs})
    return results


if __name__ == "__main__":
    main()
