"""Where an acks=all record spends its time, hop by hop, from the brokers' own request metrics (issue 20).

    python -m benchmarks.latency_hops [--rate 1000] [--seconds 20] [--warmup-seconds 5] [--with-apache]
                                      [--only-apache] [--profile DIR]

A fresh cluster of ZooKeeper + 3 brokers (ours, and with ``--with-apache`` Apache Kafka 3.9 after it, never at
once), a 1-partition topic with RF=3 and min.insync.replicas=2, then the e2e load of benchmarks.vs_apache: a
confluent-kafka producer (acks=all, linger.ms=5, 5 in flight, 1 KiB values) at ``--rate`` records/s and an
in-process consumer (fetch.wait.max.ms=100). One discarded warm-up run first (JIT, connections, page cache),
then the measured run; right after it every broker's /metrics is scraped (ours: prometheus.listener; Kafka: the
jmx_exporter agent with the Strimzi rules, so both pages have the same names).

Printed per implementation, from the partition leader's page (kafka.network RequestMetrics, 50th and 99th
percentiles; ours a 60 s HDR window, Kafka's a Yammer exponentially decaying reservoir biased to the last
minutes, so both are mostly the measured run):

* Produce: TotalTimeMs and its parts, RemoteTimeMs being the acks=all wait (Kafka's DelayedProduce);
* FetchFollower: TotalTimeMs and RemoteTimeMs (the follower's fetch parked on the leader until an append,
  Kafka's DelayedFetch) — a follower fetch parked for a whole replica.fetch.wait.max.ms shows here;
* FetchConsumer: the same for the consumer (woken when the high watermark moves);
* the client's e2e p50/p99 of the same run.

``--profile DIR`` (ours only) records every broker with py-spy (if installed) during the measured run into
DIR/leader.txt and DIR/follower-<id>.txt (collapsed stacks, a flame graph's input). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from benchmarks._common import emit_json, fmt, print_table, ratio
from benchmarks.cluster_throughput import create_replicated_topic, e2e_latency, warm_up_offsets_topic

VALUE = 1024
E2E_PRODUCER = {"max.in.flight.requests.per.connection": 5}  # as benchmarks.vs_apache
REQUESTS = ("Produce", "FetchFollower", "FetchConsumer")
PARTS = ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
         "ResponseSendTimeMs")
QUANTILES = ("0.50", "0.99")


def request_times(page: str) -> dict[str, dict[str, dict[str, float]]]:
    """{request: {part: {quantile: ms}}} for REQUESTS and PARTS from one /metrics page in the Strimzi naming
    (``kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}``)."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {f"kafka_network_requestmetrics_{p.lower()}": p for p in PARTS}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for fam in text_string_to_metric_families(page):
        for s in fam.samples:
            part = wanted.get(s.name)
            request, q = s.labels.get("request"), s.labels.get("quantile")
            if part is None or request not in REQUESTS or q not in QUANTILES:
                continue
            out.setdefault(request, {}).setdefault(part, {})[q] = s.value
    return out


def hop_rows(times: dict[str, dict[str, dict[str, float]]], e2e: dict) -> list[tuple[str, float | None]]:
    """The printed hops, in the order a record takes them: (label, ms)."""
    def get(request: str, part: str, q: str) -> float | None:
        return times.get(request, {}).get(part, {}).get(q)

    rows: list[tuple[str, float | None]] = []
    for request in REQUESTS:
        for part in PARTS:
            for q in QUANTILES:
                if part == "TotalTimeMs" or part == "RemoteTimeMs" or q == "0.50":
                    rows.append((f"{request} {part} p{q[2:]}", get(request, part, q)))
    rows.append(("client e2e p50", e2e.get("p50_ms")))
    rows.append(("client e2e p99", e2e.get("p99_ms")))
    return rows


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def _leader(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[0].leader


def _profile(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("  py-spy not installed: no profile", flush=True)
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--format", "raw",
                             "--rate", "250", "--output", str(out), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_impl(impl: str, args: argparse.Namespace) -> dict:
    from kafkascope.local.stack.local import MetricsClusterLauncher

    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix=f"latency-hops-{impl}-") as tmp:
        c = MetricsClusterLauncher(Path(tmp), brokers=3, impl=impl,
                                   broker_props={"group.initial.rebalance.delay.ms": 0})
        try:
            c.start_all(timeout_s=120)
            bs = c.bootstrap
            warm_up_offsets_topic(bs)
            for name in ("hops-warm", "hops"):
                create_replicated_topic(bs, name, 1, 3, {"min.insync.replicas": "2"})
            e2e_latency(bs, "hops-warm", "all", args.rate, args.warmup_seconds, 1.0, VALUE, E2E_PRODUCER)
            leader = _leader(bs, "hops")
            spies = []
            if args.profile and impl == "kafkascope":
                for b in c.broker_ids:
                    name = "leader" if b == leader else f"follower-{b}"
                    if (pid := c.pid(b)) and (spy := _profile(pid, args.seconds, Path(args.profile) / f"{name}.txt")):
                        spies.append(spy)
            e2e = e2e_latency(bs, "hops", "all", args.rate, args.seconds, 1.0, VALUE, E2E_PRODUCER)
            for spy in spies:
                spy.wait(timeout=args.seconds + 60)
            pages = {b: _scrape(url) for b in c.broker_ids if (url := c.scrape_url(b))}
        finally:
            c.shutdown()
    load.append(os.getloadavg()[0])
    times = request_times(pages[leader])
    return {"leader": leader, "e2e": e2e, "times": times, "hops": dict(hop_rows(times, e2e)),
            "loadavg_1m_start_end": load}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency_hops", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=20.0, help="measured run")
    p.add_argument("--warmup-seconds", type=float, default=5.0, help="discarded run before it")
    p.add_argument("--with-apache", action="store_true", help="Apache Kafka 3.9 too, after ours")
    p.add_argument("--only-apache", action="store_true")
    p.add_argument("--profile", help="directory for a py-spy profile of our leader")
    return p


def main(argv: Iterable[str] | None = None) -> dict:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    impls = ["apache-kafka"] if args.only_apache else ["kafkascope", "apache-kafka"] if args.with_apache \
        else ["kafkascope"]
    if "apache-kafka" in impls:
        from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka

        ensure_kafka(ZK_VERSION)
    runs = {}
    for impl in impls:
        runs[impl] = run_impl(impl, args)
        print(f"  {impl}: leader {runs[impl]['leader']}, load {runs[impl]['loadavg_1m_start_end']}", flush=True)
    labels = list(next(iter(runs.values()))["hops"])
    rows = [("hop (leader's RequestMetrics, ms)", *impls, *(["ours/Kafka"] if len(impls) == 2 else []))]
    for label in labels:
        vals = [runs[i]["hops"].get(label) for i in impls]
        extra = [fmt(ratio(*vals))] if len(impls) == 2 else []
        rows.append((label, *(fmt(v) for v in vals), *extra))
    print(f"\nacks=all hops at {args.rate} rec/s, 3 brokers RF=3 min.insync.replicas=2, {VALUE} B, "
          f"{args.seconds:g} s after a {args.warmup_seconds:g} s warm-up; load "
          + ", ".join(f"{i} {a:.1f}->{b:.1f}" for i, (a, b) in ((i, runs[i]["loadavg_1m_start_end"]) for i in impls)))
    print_table(rows)
    emit_json("latency_hops", {"settings": vars(args), "runs": runs})
    return runs


if __name__ == "__main__":
    main()
