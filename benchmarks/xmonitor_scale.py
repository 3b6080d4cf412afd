"""xmonitor beside 1,000 consumer groups and thousands of partitions (issue 20: "xmonitor and the lag monitor with
1,000 groups"), on our brokers and on Apache Kafka 3.9 (ZooKeeper mode) in the same run.

    python -m benchmarks.xmonitor_scale [--groups 1000] [--extra-partitions 3000] [--seconds 30]
                                        [--commit-rate 50] [--impls kafkascope,apache-kafka]

Per implementation a fresh 3-broker cluster (the `kafkascope cluster` launcher, as partition_scale), then three
scenarios one after the other on it, cumulative; in each a fresh `python -m xmonitor` process probes its own topic
(2 partitions per broker, RF=3, min.insync.replicas=2, acks=all, one record per partition every 100 ms, SLI
intervals of 5 s), measured over --seconds after it has consumed its first record and a 5 s warm-up:

  baseline     nothing else on the cluster;
  groups       --groups consumer groups with committed offsets for 10 partitions each (lag_groups_scale's set-up:
               AdminClient alter offsets, --rounds times), re-committed during the window at --commit-rate groups
               per second (each group every groups/rate seconds, as live consumers' auto-commits would);
  +partitions  the same, plus --extra-partitions partitions (topics of 100, RF=3; partition_scale's create).

The groups are committing groups, not live members: 1,000 librdkafka consumers (threads, heartbeats) do not fit
beside two clusters on a 2-core machine; the coordinator's offset-commit path and __consumer_offsets are what the
probe shares with them (its own consumer group and offset-commit service use the same coordinator).

Figures per scenario, what an SRE reads off the probe: produce (send -> ack) and end-to-end (send -> consumed)
latency p50/p99 and produce/consume availability from the probe's own SLI files (HDR histograms merged exactly,
whole intervals inside the window); the probe's offset-commit availability and mean latency (its counters' growth
over the window); the probe process' CPU (% of one core) and the brokers' together; its /metrics page (time, size,
series); and the groups' commit rate achieved with its latency (commits the coordinator could not take in time are
counted as skipped, never queued without bound). Tables: each scenario's value per implementation, ours/Kafka, and
each scenario against the implementation's own baseline. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks._common import ROOT, create_topic, emit_json, fmt, print_table, process_cpu_s, ratio
from benchmarks.lag_groups_scale import TOPIC as GROUPS_TOPIC
from benchmarks.lag_groups_scale import commit_all
from benchmarks.partition_scale import create_all, prometheus_series
from common.polling import wait_until
from kafkascope.local import process as proc
from xmonitor.formulas import consume_availability, ratio_availability

GROUP_PARTITIONS = 10        # partitions each group commits (lag_groups_scale's default)
PROBE_PARTITIONS_PER_BROKER = 2
SLI_INTERVAL_MS = 5000       # short intervals: a 30 s window holds five whole ones
WARM_UP_S = 5.0
MAX_IN_FLIGHT_S = 10.0       # the groups' load never has more than rate x this many commits outstanding
SETUP_TIMEOUT_S = 600.0      # the groups' set-up: Kafka took 15 s for 1,000 groups x 3 rounds here
SNAPSHOT_TIMEOUT_S = 30.0
SCENARIOS = ("baseline", "groups", "+partitions")

# (key, label); for every figure but the availabilities and the achieved rate, smaller is better
FIGURES = [
    ("produce_p50_ms", "probe produce latency p50 (ms)"),
    ("produce_p99_ms", "probe produce latency p99 (ms)"),
    ("e2e_p50_ms", "probe end-to-end latency p50 (ms)"),
    ("e2e_p99_ms", "probe end-to-end latency p99 (ms)"),
    ("produce_availability", "produce availability (acknowledged / attempted)"),
    ("consume_availability", "consume availability ((consumed - late) / (consumed + lost))"),
    ("commit_availability", "probe offset-commit availability"),
    ("commit_avg_ms", "probe offset-commit latency, mean (ms)"),
    ("cpu_pct", "xmonitor process CPU (% of one core)"),
    ("brokers_cpu_pct", "brokers' CPU, all together (% of one core)"),
    ("metrics_ms", "xmonitor /metrics scrape (ms)"),
    ("metrics_kb", "xmonitor /metrics size (kB)"),
    ("metrics_series", "xmonitor /metrics series"),
    ("load_commits_per_s", "groups' commits achieved (per s)"),
    ("load_commit_p99_ms", "groups' commit latency p99 (ms)"),
]


# ---- pure parts (unit-tested in tests/benchmarks/test_xmonitor_scale.py) ----------------------------------------

def _ms(histogram: Any, percentile: float) -> float | None:
    return histogram.get_value_at_percentile(percentile) / 1000 if histogram.get_total_count() else None


def summarise_sli(rows: Iterable[dict], since: datetime, until: datetime) -> dict:
    """The probe's figures over the SLI rows of the intervals wholly inside [since, until]: latency percentiles
    (µs histograms merged exactly, in ms) and availabilities with xmonitor's own formulas."""
    from xmonitor.sli_schema import decode_hdr, new_histogram

    produce, e2e = new_histogram(), new_histogram()
    n = {"attempts": 0, "successes": 0, "consumed": 0, "lost": 0, "late": 0}
    intervals: set[datetime] = set()
    for r in rows:
        if r["interval_start"] < since or r["interval_end"] > until:
            continue
        produce.add(decode_hdr(r["produce_latency_hdr"]))
        e2e.add(decode_hdr(r["e2e_latency_hdr"]))
        for key, col in (("attempts", "produce_attempts"), ("successes", "produce_successes"),
                         ("consumed", "records_consumed"), ("lost", "records_lost"), ("late", "records_late")):
            n[key] += r[col]
        intervals.add(r["interval_start"])
    attempts, ok = n["attempts"], n["successes"]
    return {"produce_p50_ms": _ms(produce, 50), "produce_p99_ms": _ms(produce, 99),
            "e2e_p50_ms": _ms(e2e, 50), "e2e_p99_ms": _ms(e2e, 99),
            "produce_availability": ratio_availability(ok, attempts - ok) if attempts else None,
            "consume_availability": (consume_availability(n["consumed"], n["late"], n["lost"])
                                     if n["consumed"] + n["lost"] else None),
            "records": n["consumed"], "intervals": len(intervals)}


def samples(page: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A Prometheus text page as (sample name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(page) for s in fam.samples}


def _total(page: dict, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(v for (n, ls), v in page.items() if n == name and set(labels.items()) <= set(ls))


def commit_window(before: dict, after: dict) -> dict:
    """The probe's offset commits between two scrapes (`samples` of its page): availability and mean latency.
    Both sources count: the offset-commit service's and the consume service's own commits."""
    ok = _total(after, "xmonitor_offset_commits_total", result="success") - \
        _total(before, "xmonitor_offset_commits_total", result="success")
    failed = _total(after, "xmonitor_offset_commits_total", result="failure") - \
        _total(before, "xmonitor_offset_commits_total", result="failure")
    lat_sum = _total(after, "xmonitor_offset_commit_latency_seconds_sum") - \
        _total(before, "xmonitor_offset_commit_latency_seconds_sum")
    lat_n = _total(after, "xmonitor_offset_commit_latency_seconds_count") - \
        _total(before, "xmonitor_offset_commit_latency_seconds_count")
    return {"commits": int(ok + failed),
            "commit_availability": ratio_availability(ok, failed) if ok + failed else None,
            "commit_avg_ms": lat_sum / lat_n * 1000 if lat_n else None}


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank q-th percentile (0 < q <= 100), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))   # ceil without floats
    return ordered[int(rank) - 1]


def scenario_rows(key: str, impls: list[str], res: dict[str, dict[str, dict]]) -> list[tuple[str, ...]]:
    """One figure's table: scenario, each implementation's value, ours/Kafka, each against its own baseline."""
    head = ("scenario", *impls, "ours/Kafka", *(f"{i} / baseline" for i in impls))
    rows: list[tuple[str, ...]] = [head]
    for sc in SCENARIOS:
        vals = [res.get(i, {}).get(sc, {}).get(key) for i in impls]
        r = ratio(res.get("kafkascope", {}).get(sc, {}).get(key), res.get("apache-kafka", {}).get(sc, {}).get(key))
        vs_base = [ratio(res.get(i, {}).get(sc, {}).get(key), res.get(i, {}).get("baseline", {}).get(key))
                   for i in impls]
        rows.append((sc, *(fmt(_round(v)) for v in vals), fmt(r), *(fmt(v) for v in vs_base)))
    return rows


def _round(v: Any) -> Any:
    return round(v, 3) if isinstance(v, float) else v


# ---- I/O ---------------------------------------------------------------------------------------------------------

class CommitLoad:
    """The groups committing while the probe runs: group i re-commits its GROUP_PARTITIONS offsets at
    start + i / rate (round robin), one AdminClient alter-offsets request per group (OffsetCommit, KIP-496's
    admin path). At most rate x MAX_IN_FLIGHT_S commits are outstanding; a commit due beyond that is skipped and
    counted, so a slow coordinator shows as a lower achieved rate, not as an ever-growing queue."""

    def __init__(self, bootstrap: str, groups: list[str], rate: float) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.groups, self.rate = groups, rate
        self.latencies: list[float] = []
        self.failed = self.skipped = self.in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="commit-load", daemon=True)
        self._t0 = 0.0

    def start(self) -> CommitLoad:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _done(self, sent_at: float, fut: Any) -> None:
        with self._lock:
            self.in_flight -= 1
            if fut.exception() is None:
                self.latencies.append((time.monotonic() - sent_at) * 1000)
            else:
                self.failed += 1

    def _run(self) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        limit, i = max(1, int(self.rate * MAX_IN_FLIGHT_S)), 0
        while not self._stop.wait(max(0.0, self._t0 + i / self.rate - time.monotonic())):
            g = self.groups[i % len(self.groups)]
            i += 1
            with self._lock:
                if self.in_flight >= limit:
                    self.skipped += 1
                    continue
                self.in_flight += 1
            tps = [TopicPartition(GROUPS_TOPIC, p, 10 + i // len(self.groups)) for p in range(GROUP_PARTITIONS)]
            sent_at = time.monotonic()
            try:
                fut = self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)],
                                                              request_timeout=30)[g]
            except Exception:   # the client refused the request outright: a failed commit like any other
                with self._lock:
                    self.in_flight -= 1
                    self.failed += 1
                continue
            fut.add_done_callback(functools.partial(self._done, sent_at))

    def snapshot(self) -> dict:
        """The counts so far (answered = acknowledged + failed) and every latency: diffed over a window."""
        with self._lock:
            return {"answered": len(self.latencies) + self.failed, "failed": self.failed, "skipped": self.skipped,
                    "latencies_ms": [round(x, 2) for x in self.latencies]}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def load_figures(start: dict | None, end: dict | None, seconds: float) -> dict:
    """The groups' commits between two `CommitLoad.snapshot`s: rate answered, latency p99, failed, skipped."""
    if start is None or end is None:
        return {"load_commits_per_s": None, "load_commit_p99_ms": None, "load_failed": None, "load_skipped": None}
    return {"load_commits_per_s": (end["answered"] - start["answered"]) / seconds,
            "load_commit_p99_ms": percentile(end["latencies_ms"][len(start["latencies_ms"]):], 99),
            "load_failed": end["failed"] - start["failed"], "load_skipped": end["skipped"] - start["skipped"]}


class LoadProcess:
    """The groups' set-up and commit load in a child process (this module with --commit-load): librdkafka aborts
    the whole process on a failed coordinator-bound admin request (confluentinc/librdkafka#4605, #3663: assertion
    `eonce->refcnt > 0` in rd_kafka_enq_once_del_source_return; seen here once under load), and the probe's figures
    must survive that. One JSON line after the set-up, then one per SIGUSR1 (a snapshot)."""

    def __init__(self, bootstrap: str, groups: int, rounds: int, rate: float) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "benchmarks.xmonitor_scale", "--commit-load", bootstrap,
                                   str(groups), str(rounds), str(rate)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.died: str | None = None
        first = self._line(SETUP_TIMEOUT_S)
        self.setup_s = None if first is None else first["setup_s"]

    def _line(self, timeout_s: float) -> dict | None:
        """The child's next line; None (and `died` says why) if it exited or said nothing for `timeout_s`."""
        assert self.p.stdout is not None
        ready, _, _ = select.select([self.p.stdout], [], [], timeout_s)
        line = self.p.stdout.readline() if ready else ""
        if not line:
            if self.p.poll() is None:
                self.p.kill()
                self.died = f"commit load process silent for {timeout_s:g} s (killed)"
            else:
                self.died = f"commit load process exited with {self.p.returncode}"
            return None
        return json.loads(line)

    def snapshot(self) -> dict | None:
        if self.died or self.p.poll() is not None:
            self.died = self.died or f"commit load process exited with {self.p.returncode}"
            return None
        self.p.send_signal(signal.SIGUSR1)
        return self._line(SNAPSHOT_TIMEOUT_S)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
        self.p.wait(30)


def commit_load_main(bootstrap: str, groups: int, rounds: int, rate: float) -> None:
    """The child's side of LoadProcess: set up the groups, print the set-up time, commit until SIGTERM."""
    names = [f"scale-group-{i:05d}" for i in range(groups)]
    load = CommitLoad(bootstrap, names, rate)
    # the handlers first: SIGUSR1's default action would end the process
    signal.signal(signal.SIGUSR1, lambda *_: print(json.dumps(load.snapshot()), flush=True))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))   # nothing to flush: the parent has its snapshots
    create_topic(bootstrap, GROUPS_TOPIC, GROUP_PARTITIONS)
    print(json.dumps({"setup_s": commit_all(bootstrap, names, GROUP_PARTITIONS, rounds)}), flush=True)
    load.start()
    while True:
        signal.pause()


def _scrape(url: str) -> tuple[str, float]:
    t = time.perf_counter()
    body = urllib.request.urlopen(url, timeout=30).read().decode()
    return body, (time.perf_counter() - t) * 1000


def probe_config(tmp: Path, bootstrap: str, brokers: int, port: int, tag: str) -> Path:
    cfg = tmp / "xmonitor.yaml"
    cfg.write_text(f"topic: xmon-scale-{tag}\ncluster.name: scale\nproduce.record.delay.ms: 100\n"
                   f"topic-management.partitionsToBrokersRatio: {PROBE_PARTITIONS_PER_BROKER}\n"
                   f"topic-management.replicationFactor: {min(3, brokers)}\n"
                   f"topic-management.min.insync.replicas: {min(2, brokers)}\n"
                   f"sli.dir: {tmp / 'sli'}\nsli.interval.ms: {SLI_INTERVAL_MS}\n"
                   f"prometheus.listener: 127.0.0.1:{port}\n")
    return cfg


def run_probe(bootstrap: str, broker_pids: list[int], seconds: float, tag: str,
              load: LoadProcess | None = None) -> dict:
    """A fresh xmonitor process on its own topic; the figures over `seconds` after its warm-up."""
    from xmonitor import sink

    with tempfile.TemporaryDirectory(prefix=f"xmon-scale-{tag}-") as d:
        tmp, port = Path(d), proc.free_port()
        url = f"http://127.0.0.1:{port}/metrics"
        cmd = [sys.executable, "-m", "xmonitor", "--bootstrap-servers", bootstrap, "--config",
               str(probe_config(tmp, bootstrap, len(broker_pids), port, f"{tag}-{time.time_ns()}")),
               "--log-level", "WARNING"]
        with open(tmp / "xmonitor.log", "wb") as log:
            p = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            def consuming() -> bool:
                if p.poll() is not None:   # it exited (a config error, say): its log says why
                    raise RuntimeError(f"xmonitor ({tag}) exited with {p.returncode}")
                return _total(samples(_scrape(url)[0]), "xmonitor_records_consumed_total") > 0
            wait_until(consuming, 120.0, 0.5, what=f"xmonitor ({tag}) consuming its first record", retry_on=(OSError,))
            time.sleep(WARM_UP_S)   # a fixed warm-up: the first seconds carry connection and JIT set-up
            before = samples(_scrape(url)[0])
            loaded = load.snapshot() if load else None
            since, t0 = datetime.now(UTC), time.monotonic()
            cpu0, bcpu0 = process_cpu_s(p.pid), sum(process_cpu_s(b) for b in broker_pids)
            time.sleep(seconds)     # the measurement window
            cpu1, bcpu1 = process_cpu_s(p.pid), sum(process_cpu_s(b) for b in broker_pids)
            elapsed, until = time.monotonic() - t0, datetime.now(UTC)
            out = {"cpu_pct": 100 * (cpu1 - cpu0) / elapsed, "brokers_cpu_pct": 100 * (bcpu1 - bcpu0) / elapsed,
                   **load_figures(loaded, load.snapshot() if load else None, elapsed)}
            if load is not None and load.died:
                out["load_error"] = load.died
            page, scrape_ms = _scrape(url)
            out.update({"metrics_ms": scrape_ms, "metrics_kb": len(page.encode()) / 1000,
                        "metrics_series": prometheus_series(page.encode()),
                        **commit_window(before, samples(page))})
        except Exception:
            print((tmp / "xmonitor.log").read_text(errors="replace")[-2000:], file=sys.stderr)
            raise
        finally:
            p.terminate()
            p.wait(60)
        rows = sink.read_dir(str(tmp / "sli")).to_pylist() if (tmp / "sli").exists() else []
        out.update(summarise_sli(rows, since, until), sli_rows=len(rows))
    return out


def measure_impl(impl: str, args: argparse.Namespace) -> dict[str, dict]:
    """One fresh cluster, the three scenarios on it; what was measured survives a later scenario's failure."""
    from confluent_kafka.admin import AdminClient

    from kafkascope.local.stack.local import MetricsClusterLauncher

    res: dict[str, dict] = {}
    load: LoadProcess | None = None
    with tempfile.TemporaryDirectory(prefix=f"xmonitor-scale-{impl}-") as tmp:
        c = MetricsClusterLauncher(Path(tmp), brokers=args.brokers, impl=impl)
        scenario = "start"
        try:
            c.start_all(timeout_s=120)
            pids = [c.pid(b) or 0 for b in c.broker_ids]
            scenario = "baseline"
            res[scenario] = run_probe(c.bootstrap, pids, args.seconds, f"{impl}-base")
            _show(impl, scenario, res[scenario])
            scenario = "groups"
            load = LoadProcess(c.bootstrap, args.groups, args.rounds, args.commit_rate)
            if load.died:
                raise RuntimeError(f"groups' set-up: {load.died}")
            res[scenario] = {"groups_setup_s": load.setup_s,
                             **run_probe(c.bootstrap, pids, args.seconds, f"{impl}-groups", load)}
            _show(impl, scenario, res[scenario])
            if args.extra_partitions:
                scenario = "+partitions"
                admin = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 2,
                                     "socket.timeout.ms": 300_000})
                create_s = create_all(admin, args.extra_partitions, min(3, args.brokers),
                                      120 + args.extra_partitions * 0.06)
                res[scenario] = {"partitions_create_s": create_s,
                                 **run_probe(c.bootstrap, pids, args.seconds, f"{impl}-parts", load)}
                _show(impl, scenario, res[scenario])
        except Exception as e:   # keep what was measured; the tables show n/a from here on
            res.setdefault(scenario, {})["error"] = f"{type(e).__name__}: {e}"[:500]
            print(f"  {impl} {scenario}: {res[scenario]['error']}", flush=True)
        finally:
            if load is not None:
                load.stop()
            c.shutdown()
    return res


def _show(impl: str, scenario: str, r: dict) -> None:
    print(f"  {impl} {scenario} (load {os.getloadavg()[0]:.1f}): " +
          ", ".join(f"{k} {fmt(_round(v))}" for k, v in r.items()), flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.xmonitor_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3, help="set-up commits per group and partition")
    p.add_argument("--commit-rate", type=float, default=50.0, help="groups committing per second in the window")
    p.add_argument("--extra-partitions", type=int, default=3000, help="0: no partitions scenario")
    p.add_argument("--seconds", type=float, default=30.0, help="measurement window per scenario")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    return p


def main(argv: list[str] | None = None) -> dict | None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 5 and argv[0] == "--commit-load":
        commit_load_main(argv[1], int(argv[2]), int(argv[3]), float(argv[4]))
        return None
    p = build_parser()
    args = p.parse_args(argv)
    if args.groups <= 0 or args.commit_rate <= 0 or args.seconds <= 0 or args.extra_partitions < 0:
        p.error("--groups, --commit-rate and --seconds must be positive, --extra-partitions not negative")
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    if unknown := set(impls) - {"kafkascope", "apache-kafka"}:
        p.error(f"--impls: unknown {', '.join(sorted(unknown))} (kafkascope, apache-kafka)")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_start = os.getloadavg()[0]
    res = {}
    for impl in impls:   # one cluster at a time, never both at once
        print(f"  {impl}: 3 scenarios, {args.seconds:g} s each (load {os.getloadavg()[0]:.1f}) ...", flush=True)
        res[impl] = measure_impl(impl, args)
    print(f"\nxmonitor beside {args.groups:,} committing groups ({args.commit_rate:g}/s) and "
          f"{args.extra_partitions:,} more partitions, {args.brokers} brokers, ours vs Apache Kafka 3.9 (ZooKeeper)")
    for key, label in FIGURES:
        print(f"\n{label}")
        print_table(scenario_rows(key, impls, res))
    result = {"started": started, "loadavg_1m_start": load_start, "loadavg_1m_end": os.getloadavg()[0],
              "settings": vars(args), "results": res}
    emit_json("xmonitor_scale", result)
    return result


if __name__ == "__main__":
    main()
