"""Every xmonitor measurement in one place: Prometheus series, Xinfra (kmf) gauges and SLI interval rows.

Services call the `record_*` methods (thread-safe). Three views are kept from the same events:
* cumulative Prometheus counters and histograms `xmonitor_*`, labelled cluster, topic, partition and leader (the
  partition's leader broker id when the event happened, so a failing broker can be named; -1 if never known);
* Xinfra-compatible gauges computed on scrape exactly as Xinfra defines them (60 × 1 s Kafka windows), under the
  names jmx_exporter gives the `kmf.services` MBeans: `kmf_services_<type>_<name>_<attribute>`, `-` → `_`;
* per-partition interval accumulators, rolled into SLI_SCHEMA rows every `sli.interval.ms` (see sink.py).

The per-record events (a send, its acknowledgement or failure, a record consumed) are only queued by the service
threads and folded into all three views in batches, every 0.2 s by the SLI sink service and before every read
(a scrape, an interval close, the gauges): done per record, under a lock shared by the produce and consume
threads, this bookkeeping cost more CPU than the Kafka clients themselves (benchmarks/xmonitor_overhead.py).
Each queued event keeps its own time and leader.
"""

from __future__ import annotations

import math
import threading
from collections import Counter as CountMap
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from common.clock import SYSTEM, Clock
from common.hdr import LATENCY_US
from xmonitor import formulas
from xmonitor.accounting import Kind, Outcome
from xmonitor.config import MonitorConfig
from xmonitor.sli_schema import encode_hdr, new_histogram
from xmonitor.windowed import Latency, Rate

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120,
                     300, 600, 1800, 3600)
_FOLD_AT = 50_000          # queued events that force a fold even when nobody reads (a bound on memory)
SERVICES = ("topic-management", "produce", "consume", "offset-commit", "sli-sink")


@dataclass
class IntervalStats:
    attempts: int = 0
    successes: int = 0
    errors: CountMap = field(default_factory=CountMap)
    consumed: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    late: int = 0
    produce_hdr: object = field(default_factory=new_histogram)
    e2e_hdr: object = field(default_factory=new_histogram)


def _hdr_us(seconds: float) -> int:
    return min(max(int(seconds * 1_000_000), 1), LATENCY_US.highest)


def _latency_gauges(stat: Latency, prefix: str, now_ms: int) -> dict[str, float]:
    """Xinfra's Avg + Max + Percentiles attributes of one latency (ms)."""
    return {f"{prefix}-avg": stat.avg(now_ms), f"{prefix}-max": stat.max(now_ms),
            f"{prefix}-99th": stat.measure(now_ms, 99), f"{prefix}-999th": stat.measure(now_ms, 99.9),
            f"{prefix}-9999th": stat.measure(now_ms, 99.99)}


class _FoldingRegistry(CollectorRegistry):
    """A registry that folds the queued events in before every collection (scrapes, get_sample_value)."""

    def __init__(self, fold) -> None:
        super().__init__()
        self._fold = fold

    def collect(self):
        self._fold()
        yield from super().collect()


class Recorder:
    def __init__(self, cfg: MonitorConfig, run_id: str, clock: Clock = SYSTEM,
                 ) -> None:
        self.cfg, self.run_id, self.clock = cfg, run_id, clock
        self.registry = _FoldingRegistry(self.fold)
        self._lock = threading.RLock()
        self.leaders: dict[int, int] = {}
        self.partitions: list[int] = []
        pl = ["cluster", "topic", "partition", "leader"]
        r = self.registry

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(f"xmonitor_{name}", doc, pl + list(extra), registry=r)

        self.c_attempts = counter("produce_attempts", "probe sends attempted (one per partition per interval)")
        self.c_successes = counter("produce_successes", "probe sends acknowledged (acks=all)")
        self.c_errors = counter("produce_errors", "probe sends failed, by Kafka error name", ("error",))
        self.c_consumed = counter("records_consumed", "probe records consumed (duplicates included)")
        self.c_lost = counter("records_lost", "acknowledged probe records never consumed (sequence gaps past grace)")
        self.c_duplicated = counter("records_duplicated", "probe records whose index was already consumed")
        self.c_out_of_order = counter("records_out_of_order", "probe records arriving after a higher index")
        self.c_late = counter("records_late", "probe records with end-to-end delay over consume.latency.sla.ms")
        self.h_produce = Histogram("xmonitor_produce_latency_seconds", "send to acknowledgement", pl,
                                   buckets=LATENCY_BUCKETS_S, registry=r)
        self.h_e2e = Histogram("xmonitor_e2e_latency_seconds", "send to consumed (end-to-end delay)", pl,
                               buckets=LATENCY_BUCKETS_S, registry=r)
        self.c_consume_errors = Counter("xmonitor_consume_errors", "consume errors and undecodable records",
                                        ["cluster", "topic"], registry=r)
        self.c_commits = Counter("xmonitor_offset_commits", "offset commits by source (consumer: the consume "
                                 "service's async commits; probe: the offset-commit service) and result",
                                 ["cluster", "source", "result"], registry=r)
        self.h_commit = Histogram("xmonitor_offset_commit_latency_seconds", "successful offset commit latency",
                                  ["cluster", "source"], buckets=LATENCY_BUCKETS_S, registry=r)
        self.g_up = Gauge("xmonitor_service_up", "1 while the service runs (0: the probe is broken, not the "
                          "cluster)", ["cluster", "service"], registry=r)
        self.g_last_ok = Gauge("xmonitor_service_last_success_timestamp_seconds",
                               "wall time of the service's last successful cycle", ["cluster", "service"], registry=r)
        Gauge("xmonitor_run_info", "the running xmonitor's run id", ["cluster", "topic", "run_id"],
              registry=r).labels(cfg.cluster_name, cfg.topic, run_id).set(1)
        self._offline: set[str] = set()
        self._running: set[str] = set()
        # Xinfra's windowed stats
        pmax, pgran = cfg.consume_latency_percentile_max_ms, cfg.consume_latency_percentile_granularity_ms
        self.w_produced, self.w_produce_err = Rate(), Rate()
        self.w_produced_p: dict[int, Rate] = {}
        self.w_error_p: dict[int, Rate] = {}
        self.last_send_failed: dict[int, bool] = {}
        self.w_produce_delay = Latency(pmax, pgran)
        self.w_consumed, self.w_bytes, self.w_consume_err = Rate(), Rate(), Rate()
        self.w_lost, self.w_dup, self.w_delayed = Rate(), Rate(), Rate()
        self.w_delay = Latency(pmax, pgran)
        self.w_commit_latency = Latency(pmax, pgran)
        self.w_commit_fail = Rate()
        self.w_ocs_ok, self.w_ocs_fail = Rate(), Rate()
        self.totals: CountMap = CountMap()
        self.topic_partitions_at_start: int | None = None
        # SLI intervals
        self._interval_start = clock.wall()
        self._children: dict[object, dict[tuple[int, int], object]] = {}
        self._intervals: dict[int, IntervalStats] = {}
        self._attempted: list[tuple] = []       # queued sends (see the module docstring)
        self._produced: list[tuple] = []        # queued acknowledgements and failures
        self._consumed: list[tuple] = []        # queued consumed records
        self.registry.register(_KmfCollector(self))

    # ---- topology ----------------------------------------------------------------------------------------
    def set_topology(self, leaders: dict[int, int]) -> None:
        """Current leaders by partition (-1 for none: the last known leader is kept, so the failing partitions
        of a dead broker still carry its id)."""
        with self._lock:
            for p, leader in leaders.items():
                if leader >= 0 or p not in self.leaders:
                    self.leaders[p] = leader
            self.partitions = sorted(set(self.partitions) | set(leaders))
            if self.topic_partitions_at_start is None and leaders:
                self.topic_partitions_at_start = len(leaders)
            for p in leaders:
                self._interval(p)
                # exported at 0 before the first loss: a series born at n hides that first increase from rate()
                # and increase(), so XMonitorRecordsLost would miss a one-off loss
                self._child(self.c_lost, p)

    def leader(self, partition: int) -> int:
        return self.leaders.get(partition, -1)

    def _labels(self, partition: int) -> tuple[str, str, str, str]:
        return self.cfg.cluster_name, self.cfg.topic, str(partition), str(self.leaders.get(partition, -1))

    def _child(self, metric, partition: int, leader: int | None = None):
        """`metric.labels(cluster, topic, partition, leader)` (leader: the current one unless given), cached: the
        label lookup is the costliest part of recording an event. Children are created on first use."""
        key = (partition, self.leaders.get(partition, -1) if leader is None else leader)
        cache = self._children.get(metric)
        if cache is None:
            cache = self._children[metric] = {}
        child = cache.get(key)
        if child is None:
            child = cache[key] = metric.labels(self.cfg.cluster_name, self.cfg.topic, str(key[0]), str(key[1]))
        return child

    def _interval(self, partition: int) -> IntervalStats:
        s = self._intervals.get(partition)
        if s is None:
            s = self._intervals[partition] = IntervalStats()
        return s

    # ---- produce -----------------------------------------------------------------------------------------
    def record_produce_attempt(self, partition: int) -> None:
        self._attempted.append((partition, self.leaders.get(partition, -1)))
        if len(self._attempted) > _FOLD_AT:
            self.fold()

    def record_produce_result(self, partition: int, error: str | None, latency_s: float) -> None:
        self._produced.append((partition, self.leaders.get(partition, -1), error, latency_s, self.clock.now_ms()))
        if len(self._produced) > _FOLD_AT:
            self.fold()

    def record_consumed(self, partition: int, outcome: Outcome, delay_s: float, nbytes: int) -> None:
        self._consumed.append((partition, self.leaders.get(partition, -1), outcome.kind, delay_s, nbytes,
                               self.clock.now_ms()))
        if len(self._consumed) > _FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """Apply the queued per-record events to every view (called before each read)."""
        with self._lock:
            attempted, self._attempted = self._attempted, []
            produced, self._produced = self._produced, []
            consumed, self._consumed = self._consumed, []
            counts: CountMap = CountMap()          # (counter, partition, leader) -> increments, applied once
            for p, leader in attempted:
                counts[(self.c_attempts, p, leader)] += 1
                self._interval(p).attempts += 1
            for p, leader, error, latency_s, now_ms in produced:
                iv = self._interval(p)
                if error is None:
                    counts[(self.c_successes, p, leader)] += 1
                    self._child(self.h_produce, p, leader).observe(latency_s)
                    iv.successes += 1
                    iv.produce_hdr.record_value(_hdr_us(latency_s))
                    self.w_produced.record(now_ms)
                    r = self.w_produced_p.get(p)
                    if r is None:
                        r = self.w_produced_p[p] = Rate()
                    r.record(now_ms)
                    self.w_produce_delay.record(now_ms, latency_s * 1000)
                    self.totals["records-produced"] += 1
                    self.last_send_failed[p] = False
                else:
                    self.c_errors.labels(self.cfg.cluster_name, self.cfg.topic, str(p), str(leader), error).inc()
                    iv.errors[error] += 1
                    self.w_produce_err.record(now_ms)
                    r = self.w_error_p.get(p)
                    if r is None:
                        r = self.w_error_p[p] = Rate()
                    r.record(now_ms)
                    self.totals["produce-error"] += 1
                    self.last_send_failed[p] = True
            sla_s = self.cfg.consume_latency_sla_ms / 1000.0
            for p, leader, kind, delay_s, nbytes, now_ms in consumed:
                iv = self._interval(p)
                counts[(self.c_consumed, p, leader)] += 1
                self._child(self.h_e2e, p, leader).observe(max(delay_s, 0.0))
                iv.consumed += 1
                iv.e2e_hdr.record_value(_hdr_us(delay_s))
                self.w_consumed.record(now_ms)
                self.w_bytes.record(now_ms, nbytes)
                self.w_delay.record(now_ms, delay_s * 1000)
                self.totals["records-consumed"] += 1
                if delay_s > sla_s:
                    counts[(self.c_late, p, leader)] += 1
                    iv.late += 1
                    self.w_delayed.record(now_ms)
                    self.totals["records-delayed"] += 1
                if kind is Kind.DUPLICATE:
                    counts[(self.c_duplicated, p, leader)] += 1
                    iv.duplicated += 1
                    self.w_dup.record(now_ms)
                    self.totals["records-duplicated"] += 1
                elif kind is Kind.OUT_OF_ORDER:
                    counts[(self.c_out_of_order, p, leader)] += 1
                    iv.out_of_order += 1
                    self.totals["records-out-of-order"] += 1
            for (metric, p, leader), n in counts.items():
                self._child(metric, p, leader).inc(n)

    def consumed_and_produced(self) -> tuple[int, int]:
        """(records consumed, records acknowledged) so far."""
        self.fold()
        return self.totals["records-consumed"], self.totals["records-produced"]

    def record_lost(self, partition: int, n: int) -> None:
        now_ms = self.clock.now_ms()
        with self._lock:
            self._child(self.c_lost, partition).inc(n)
            self._interval(partition).lost += n
            self.w_lost.record(now_ms, n)
            self.totals["records-lost"] += n

    def record_consume_error(self) -> None:
        with self._lock:
            self.c_consume_errors.labels(self.cfg.cluster_name, self.cfg.topic).inc()
            self.w_consume_err.record(self.clock.now_ms())
            self.totals["consume-error"] += 1

    # ---- offset commits ----------------------------------------------------------------------------------
    def record_commit(self, source: str, ok: bool, latency_s: float | None = None) -> None:
        """source: "consumer" (the consume service's own commits, Xinfra's commit-*-service groups) or "probe"
        (the offset-commit service)."""
        now_ms = self.clock.now_ms()
        with self._lock:
            self.c_commits.labels(self.cfg.cluster_name, source, "success" if ok else "failure").inc()
            if ok and latency_s is not None:
                self.h_commit.labels(self.cfg.cluster_name, source).observe(latency_s)
            if source == "consumer":
                if ok:
                    self.totals["offsets-committed"] += 1
                    if latency_s is not None:
                        self.w_commit_latency.record(now_ms, latency_s * 1000)
                else:
                    self.totals["failed-commit-offsets"] += 1
                    self.w_commit_fail.record(now_ms)
            else:
                (self.w_ocs_ok if ok else self.w_ocs_fail).record(now_ms)
                self.totals["ocs-success" if ok else "ocs-failure"] += 1

    # ---- self-health -------------------------------------------------------------------------------------
    def service_state(self, service: str, running: bool) -> None:
        with self._lock:
            self.g_up.labels(self.cfg.cluster_name, service).set(1 if running else 0)
            if running:
                self._running.add(service)
            else:
                if service in self._running:
                    self._offline.add(service)     # sticky, as Xinfra's offline-runnable-count
                self._running.discard(service)

    def cycle_ok(self, service: str) -> None:
        self.g_last_ok.labels(self.cfg.cluster_name, service).set(self.clock.wall())

    # ---- SLI intervals -----------------------------------------------------------------------------------
    def roll_interval(self) -> list[dict]:
        """Close the current interval: one SLI_SCHEMA row per known partition, and start the next."""
        end = self.clock.wall()
        with self._lock:
            self.fold()
            start, self._interval_start = self._interval_start, end
            stats, self._intervals = self._intervals, {p: IntervalStats() for p in self.partitions}
            leaders = dict(self.leaders)
        rows = []
        ts = lambda t: datetime.fromtimestamp(t, UTC)  # noqa: E731
        for p in sorted(stats):
            s = stats[p]
            rows.append({
                "cluster": self.cfg.cluster_name, "topic": self.cfg.topic, "partition": p,
                "leader": leaders.get(p, -1), "run_id": self.run_id,
                "interval_start": ts(start), "interval_end": ts(end),
                "produce_attempts": s.attempts, "produce_successes": s.successes,
                "produce_errors": sorted(s.errors.items()),
                "records_consumed": s.consumed, "records_lost": s.lost, "records_duplicated": s.duplicated,
                "records_out_of_order": s.out_of_order, "records_late": s.late,
                "produce_latency_hdr": encode_hdr(s.produce_hdr), "e2e_latency_hdr": encode_hdr(s.e2e_hdr),
            })
        return rows

    # ---- Xinfra gauges -----------------------------------------------------------------------------------
    def produce_availability(self, now_ms: int | None = None) -> float:
        now_ms = self.clock.now_ms() if now_ms is None else now_ms
        with self._lock:
            self.fold()
            per = [(self.w_produced_p[p].measure(now_ms) if p in self.w_produced_p else 0.0,
                    self.w_error_p[p].measure(now_ms) if p in self.w_error_p else 0.0,
                    self.last_send_failed.get(p, False)) for p in self.partitions]
        return formulas.produce_availability(per, self.cfg.produce_treat_zero_throughput_as_unavailable)

    def consume_availability(self, now_ms: int | None = None) -> float:
        now_ms = self.clock.now_ms() if now_ms is None else now_ms
        with self._lock:
            self.fold()
            return formulas.consume_availability(self.w_consumed.measure(now_ms), self.w_delayed.measure(now_ms),
                                                 self.w_lost.measure(now_ms))

    def kmf_gauges(self, now_ms: int | None = None) -> dict[tuple[str, str], float]:
        """(MBean type, attribute) -> value, as Xinfra's MBeans would report them now."""
        now_ms = self.clock.now_ms() if now_ms is None else now_ms
        t = self.totals
        with self._lock:
            self.fold()
            g: dict[tuple[str, str], float] = {}
            ps = {"records-produced-rate": self.w_produced.measure(now_ms),
                  "records-produced-total": t["records-produced"],
                  "produce-error-rate": self.w_produce_err.measure(now_ms), "produce-error-total": t["produce-error"],
                  "produce-availability-avg": self.produce_availability(now_ms),
                  **_latency_gauges(self.w_produce_delay, "produce-delay-ms", now_ms)}
            for p in self.partitions:
                ps[f"records-produced-rate-partition-{p}"] = (self.w_produced_p[p].measure(now_ms)
                                                              if p in self.w_produced_p else 0.0)
                ps[f"produce-error-rate-partition-{p}"] = (self.w_error_p[p].measure(now_ms)
                                                           if p in self.w_error_p else 0.0)
            cs = {"records-consumed-rate": self.w_consumed.measure(now_ms),
                  "records-consumed-total": t["records-consumed"], "bytes-consumed-rate": self.w_bytes.measure(now_ms),
                  "consume-error-rate": self.w_consume_err.measure(now_ms), "consume-error-total": t["consume-error"],
                  "records-lost-rate": self.w_lost.measure(now_ms), "records-lost-total": t["records-lost"],
                  "records-duplicated-rate": self.w_dup.measure(now_ms),
                  "records-duplicated-total": t["records-duplicated"],
                  "records-delayed-rate": self.w_delayed.measure(now_ms), "records-delayed-total": t["records-delayed"],
                  "topic-partitions-count": float(self.topic_partitions_at_start or 0),
                  "consume-availability-avg": self.consume_availability(now_ms),
                  **_latency_gauges(self.w_delay, "records-delay-ms", now_ms)}
            ca = {"offsets-committed-total": t["offsets-committed"],
                  "failed-commit-offsets-total": t["failed-commit-offsets"],
                  "failed-commit-offsets-avg": self.w_commit_fail.measure(now_ms),
                  "offsets-committed-avg": formulas.ratio_availability(t["offsets-committed"],
                                                                       t["failed-commit-offsets"])}
            ok_rate, fail_rate = self.w_ocs_ok.measure(now_ms), self.w_ocs_fail.measure(now_ms)
            ocs = {"offset-commit-service-success-rate": ok_rate, "offset-commit-service-success-total": t["ocs-success"],
                   "offset-commit-service-failure-rate": fail_rate,
                   "offset-commit-service-failure-total": t["ocs-failure"],
                   "offset-commit-availability-avg": formulas.ratio_availability(ok_rate, fail_rate)}
            for typ, attrs in (("produce-service", ps), ("consume-service", cs), ("commit-availability-service", ca),
                               ("commit-latency-service", _latency_gauges(self.w_commit_latency,
                                                                               "commit-offset-latency-ms", now_ms)),
                               ("offset-commit-service", ocs)):
                for attr, v in attrs.items():
                    g[(typ, attr)] = float(v)
            return g

    def offline_runnable_count(self) -> int:
        with self._lock:
            return len(self._offline)


def kmf_name(app_name: str, typ: str, attr: str) -> str:
    """jmx_exporter's name for kmf.services:type=<typ>,name=<app_name> attribute <attr>."""
    return f"kmf_services_{typ}_{app_name}_{attr}".replace("-", "_").replace(".", "_")


class _KmfCollector:
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def collect(self):
        rec = self.rec
        for (typ, attr), v in rec.kmf_gauges().items():
            m = GaugeMetricFamily(kmf_name(rec.cfg.app_name, typ, attr),
                                  f"Xinfra kmf.services:type={typ},name={rec.cfg.app_name} {attr}", labels=["cluster"])
            m.add_metric([rec.cfg.cluster_name], v if not math.isinf(v) else math.nan)
            yield m
        m = GaugeMetricFamily("kmf_kafka_monitor_offline_runnable_count",
                              "Xinfra kmf:type=kafka-monitor offline-runnable-count (services that stopped; sticky)",
                              labels=["cluster"])
        m.add_metric([rec.cfg.cluster_name], rec.offline_runnable_count())
        yield m
