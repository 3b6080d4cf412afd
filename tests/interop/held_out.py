"""The held-out check: community dashboards and alerts, unchanged, on our broker and on Apache Kafka + jmx_exporter.

For one naming (Strimzi's kafka-metrics.yaml rules or Confluent's kafka_broker.yml rules) two 3-broker clusters run
one after the other, each scraped by its own real Prometheus (tests/interop/live_prometheus.py): Apache Kafka (the
`Reference`: 3.9.2 in ZooKeeper mode, or 4.x in KRaft mode with three combined broker+controller nodes) with the
jmx_exporter agent given the rule file itself, and ours with ``prometheus.naming`` set to the same file. Prometheus
scrapes them as the upstream stacks do (Strimzi's PodMonitor relabelings, or jmx-monitoring-stacks' ``kafka-broker``
job) and loads the upstream alert rules as they are (annotations aside, see community_queries.rule_groups).

Both clusters get the same traffic and the same fault, on the same schedule from the first timed record (after one
seed record to every partition, so the per-topic series exist on both before it): tests/interop/held_out_setup.py,
and after WARM_S[naming] one broker that is not the (active) controller is paused (SIGSTOP) for PAUSE_S, then
resumed. Threshold queries (`<expression> > 0`, alert conditions) are also judged by their operand, since an alert
that never fired says nothing about its metric. Points at which a running broker's scrape failed (jmx_exporter is
sometimes slower than the scrape timeout here) are not counted.

What each test module asserts on the two RunResults is built from the checks at the end of this module, with its
own `Explanations` (which queries may differ, and why).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common.polling import wait_until
from kafkascope.local.launcher import ClusterLauncher
from tests.interop import community_queries as cq
from tests.interop.held_out_setup import (
    RATE,
    STRICT,
    TOPICS,
    ZK_REFERENCE,
    Reference,
    Traffic,
    active_controller,
    create_topics,
    make_cluster,
    metadata_counts,
    seed_topics,
    set_default_quotas,
)
from tests.interop.live_prometheus import SCRAPE_S, Prometheus, PromQLError, confluent_job, strimzi_job

# Steady traffic before the fault: Strimzi's per-topic panel is an irate, compared over this stretch (less the first
# SETTLE_S); 65 s of it keep jmx_exporter's read-time jitter (a few seconds a scrape) within about 2-3%.
# Confluent's is a rate[5m], compared at the end of the run: a short stretch does.
WARM_S = {"strimzi": 100, "confluent": 45}
PAUSE_S = 75  # the broker stays paused this long (the fault values must hold for two scrape intervals in it)
POST_S = 30  # from the resume to the end of the run
SETTLE_S = 35  # left out of the steady window after the traffic starts (an irate pair can straddle the start)

# The panels whose values the fault drives, by dashboard and title.
FAULT_PANELS = {
    "strimzi": ("strimzi-kafka.json", ["Brokers Online", "Active Controllers", "Online Replicas",
                                       "Under Replicated Partitions", "Partitions at minimum ISR",
                                       "Partitions under minimum ISR", "Offline Partitions Count"]),
    "confluent": ("kafka-cluster.json", ["Brokers Online", "Active Controllers", "Online Partitions",
                                         "Under Replicated Partitions", "Under Min ISR Partitions",
                                         "Offline Partitions Count"]),
}
# The fault panels the brokers' Metadata also answers (TopicMetadata ISR/leader, the topics' min.insync.replicas).
METADATA_OF = {"Under Replicated Partitions": "under_replicated", "Partitions at minimum ISR": "at_min_isr",
               "Partitions under minimum ISR": "under_min_isr", "Under Min ISR Partitions": "under_min_isr",
               "Offline Partitions Count": "offline"}
URP_TITLE = "Under Replicated Partitions"
OFFLINE_TITLE = "Offline Partitions Count"

# Queries with no data on either backend here, and why (checked: each must have no data on Apache Kafka).
OUT_OF_SCOPE: list[tuple[str, str]] = [
    (r"\b(container_\w+|kubelet_volume_stats_\w+)", "Kubernetes cAdvisor / kubelet series (no Kubernetes here)"),
    (r"kafka_tier_|_tiersize\b", "Confluent Server tiered storage (not in Apache Kafka)"),
    (r"_straypartitions",
     "Confluent Server's ReplicaManager stray-partition gauges (no such MBean in Kafka 3.9.2's jars)"),
    (r"transaction_coordinator_metrics_(transaction_timeout|transaction_state_error|transactional_id_count"
     r"|active_transaction|prepare_commit|partitions_total_size)",
     "Confluent Server transaction coordinator metrics (Kafka 3.9's transaction-coordinator-metrics group has only "
     "partition-load-time-avg/max)"),
    (r"kafka_server_(produce|fetch|request)_throttle_time\{[^}]*\} > 0",
     "quota throttle panels: every client's quota here is far above its traffic (held_out_setup.DEFAULT_QUOTAS), so "
     "nobody is throttled and throttle-time stays NaN (Kafka's Avg with no throttle recorded)"),
    (r"controlplanerequesthandleravgidlepercent",
     "the control-plane request handler pool exists only with control.plane.listener.name (not set)"),
]

# Why the messages-in panels are not compared after the fault: the paused broker led a partition of each topic and
# no longer does after its resume. Kafka 3.9 then removes its MessagesIn/BytesIn/BytesRejected/TotalProduceRequests/
# FailedProduceRequests/ProduceMessageConversions/ReplicationBytesOut/ReassignmentBytesOut meters of those topics
# (ReplicaManager.updateLeaderAndFollowerMetrics -> BrokerTopicStats.removeOldLeaderMetrics), the series vanishes and
# Strimzi's irate(...[5m]) keeps its last two samples' rate for up to five minutes; ours keeps the meter (flat), so
# its irate is 0. The librdkafka producer also holds the paused leader's partitions until the resume (its requests to
# the frozen broker time out first), then catches up in a burst, on both.
AFTER_THE_FAULT = ("Kafka removes the per-topic leader meters of a broker that no longer leads the topic; "
                   "ours keeps them")

# Queries with data on ours and none on Apache Kafka, and why (a query that newly shows data only on ours fails).
# (DeprecatedRequestsPerSec was here while our table of deprecated versions was not Kafka 3.9.2's: ours marked the
# launcher's Metadata v1 probe.)
OURS_ONLY: list[tuple[str, str]] = [
    (r"kafka_server_brokertopicmetrics_failedfetchrequests_total\{.*topic=",
     "Kafka creates a topic's FailedFetchRequestsPerSec meter on its first failed fetch (lazily); ours exports it "
     "at 0 for every topic (tests/interop/test_metrics_parity.py, LAZY_PER_TOPIC); the panel shows 0 instead of "
     "no data"),
    (r"\bjvm_memory_bytes_max\b",
     "jmx_exporter 0.x's name: the 1.0.1 agent exports jvm_memory_max_bytes only, ours exports both "
     "(docs/metrics-jvm-mapping.md)"),
]


# ---------------------------------------------------------------------------------------------- one run

@dataclass
class Resolved:
    query: cq.Query
    expr: str  # interpolated
    has_data: bool = False
    series: int = 0
    error: str | None = None


@dataclass
class RunResult:
    impl: str
    naming: str
    queries: list[Resolved] = field(default_factory=list)
    fault: dict[str, float | None] = field(default_factory=dict)
    fault_stable: bool = False
    fault_metadata: dict[str, int] = field(default_factory=dict)
    alerts: dict[str, str] = field(default_factory=dict)
    rates: dict[str, float | None] = field(default_factory=dict)  # steady, before the fault
    rates_after: dict[str, float | None] = field(default_factory=dict)  # after the resume (not compared)
    timeline: dict[str, float] = field(default_factory=dict)
    variables: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    traffic: dict[str, object] = field(default_factory=dict)


def _wait_until_time(t: float) -> None:
    """Hold until the wall-clock instant t of the run's schedule (the same offsets on both backends)."""
    threading.Event().wait(max(0.0, t - time.time()))


def _panel_expr(naming: str, resolved: dict[str, list[Resolved]], title: str) -> str:
    source, _ = FAULT_PANELS[naming]
    hits = [r.expr for r in resolved[source] if r.query.where.startswith(f"panel {title} [")]
    assert hits, f"no panel {title!r} in {source}"
    return hits[0]


def _topic_rate_exprs(naming: str, dashboards: list[cq.Dashboard],
                      variables: dict[str, cq.Variables]) -> dict[str, str]:
    """The per-topic messages-in query of the dashboard, with its topic variable set to each topic."""
    if naming == "strimzi":
        source, title, var = "strimzi-kafka.json", "Messages In Per Second", "kafka_topic"
    else:
        source, title, var = "kafka-topics.json", "Messages In", "topic"
    dash = next(d for d in dashboards if d.name == source)
    q = next(q for q in dash.queries() if q.where.startswith(f"panel {title} ["))
    return {t: cq.interpolate(q.expr, variables[source].with_override(var, [t])) for t in TOPICS}


def _resolve(prom: Prometheus, naming: str, reference: Reference, t_scraped: float,
             res: RunResult) -> tuple[dict[str, list[Resolved]], dict[str, cq.Variables]]:
    """Every dashboard query with its template variables resolved (once the traffic runs, so every topic and broker
    is there), and every rule expression."""
    resolved: dict[str, list[Resolved]] = {}
    variables: dict[str, cq.Variables] = {}
    for d in reference.dashboards[naming]:
        # Over the whole run so far, as Grafana asks over the dashboard's time range: label_values() reads
        # the series API, which only lists series with a sample in the range (a few seconds
        # can hold one target's sample and not the others').
        v = variables[d.name] = cq.Variables.of(d.path).resolve(prom.lookup(t_scraped, time.time()))
        res.variables[d.name] = {k: sel.selected for k, sel in v.selections.items()}
        resolved[d.name] = [Resolved(q, cq.interpolate(q.expr, v.selections))
                            for q in cq.with_operands(d.queries())]
    for p in reference.rules[naming]:
        resolved[p.name] = [Resolved(q, q.expr) for q in cq.with_operands(cq.alert_queries(p))]
    return resolved, variables


def run_backend(impl: str, naming: str, directory: Path, reference: Reference = ZK_REFERENCE) -> RunResult:
    res = RunResult(impl, naming)
    launcher = prom = traffic = None
    try:
        t_begin = time.time()
        launcher, targets = make_cluster(impl, naming, directory / "cluster", reference)
        res.timeline["cluster_started"] = time.time() - t_begin
        rules: dict = {"groups": [g for p in reference.rules[naming] for g in cq.rule_groups(p)["groups"]]}
        job = strimzi_job(targets) if naming == "strimzi" else confluent_job(targets)
        prom = Prometheus(directory / "prometheus", job, rules).start()
        t_scraped = time.time()
        # Every target answered its last three scrapes (a JVM that has just started can take longer than that).
        # The run's queries are judged from then on, as a dashboard looks at a running cluster (before it, a
        # target scraped before the others makes e.g. sum(ActiveControllerCount) 0 for one evaluation).
        prom.wait(lambda: len(prom.query(f"min_over_time(up[{3 * SCRAPE_S - 1}s]) == 1")) == 3
                  and len(prom.query(f"count_over_time(up[{3 * SCRAPE_S - 1}s]) >= 3")) == 3,
                  180, "3 targets scraped three times in a row")
        t_prom = time.time()

        bootstrap = launcher.bootstrap
        victim = max(b for b in launcher.broker_ids if b != active_controller(launcher))
        create_topics(bootstrap, victim)
        set_default_quotas(bootstrap)
        # One record to every partition first, and the per-topic series scraped, before the timed traffic: Kafka
        # creates a topic's MessagesInPerSec meter on its first record (ours at the topic's creation), and a series
        # born mid-window is extrapolated differently by rate()/irate(); so on both the traffic starts on series
        # that are already there.
        seed_topics(bootstrap)
        msgs_in = ("kafka_server_brokertopicmetrics_messagesin_total" if naming == "strimzi"
                   else "kafka_server_brokertopicmetrics_messagesinpersec")
        prom.wait(lambda: {s["metric"].get("topic") for s in prom.query(f'{msgs_in}{{topic=~"cd-.*"}} > 0')}
                  >= {*TOPICS, STRICT}, 6 * SCRAPE_S, "every topic's messages-in series")
        traffic = Traffic(bootstrap).start()
        res.timeline["traffic_start"] = traffic.t0 - t_begin
        wait_until(lambda: traffic.consumed > 0, 60, 0.5, what="the consumer group reading")

        resolved, variables = _resolve(prom, naming, reference, t_scraped, res)
        _fault_and_measure(res, launcher, prom, traffic, targets, victim, resolved,
                           _topic_rate_exprs(naming, reference.dashboards[naming], variables), t_prom)
        res.timeline["total"] = time.time() - t_begin
        for k in ("pause", "resume", "end"):
            res.timeline[k] -= t_begin
        return res
    finally:
        if traffic is not None:
            traffic.stop()
        if prom is not None:
            prom.stop()
        if launcher is not None:
            launcher.shutdown()


def _fault_and_measure(res: RunResult, launcher: ClusterLauncher, prom: Prometheus, traffic: Traffic,
                       targets: dict[int, str], victim: int, resolved: dict[str, list[Resolved]],
                       rate_exprs: dict[str, str], t_prom: float) -> None:
    """Pause the victim on the schedule, read the fault panels and alerts, resume it, then query everything."""
    titles = FAULT_PANELS[res.naming][1]
    fault_exprs = {t: _panel_expr(res.naming, resolved, t) for t in titles}
    # A clean start: nothing under-replicated before the fault.
    prom.wait(lambda: prom.scalar(fault_exprs[URP_TITLE]) == 0 and prom.scalar(fault_exprs[OFFLINE_TITLE]) == 0,
              60, "no under-replicated or offline partitions before the fault")
    _wait_until_time(traffic.t0 + WARM_S[res.naming])
    t_pause = time.time()
    launcher.pause(victim)
    res.fault, res.fault_stable = _await_fault_values(prom, fault_exprs, victim_target=targets[victim],
                                                      deadline=t_pause + PAUSE_S)
    res.fault_metadata = metadata_counts(",".join(f"127.0.0.1:{launcher.broker_port(b)}"
                                                  for b in launcher.broker_ids if b != victim))
    _wait_until_time(t_pause + PAUSE_S)
    res.alerts = prom.active_alerts()
    launcher.resume(victim)
    t_resume = time.time()
    t_end = t_resume + POST_S
    try:
        wait_until(lambda: prom.scalar(fault_exprs[URP_TITLE]) == 0
                   and prom.scalar(fault_exprs[OFFLINE_TITLE]) == 0, max(1.0, t_end - time.time()), 1,
                   what="recovery")
        res.timeline["recovered_after_resume"] = time.time() - t_resume
    except AssertionError:
        res.timeline["recovered_after_resume"] = float("nan")
    _wait_until_time(t_end)
    # The evaluation points where every broker that runs was scraped: jmx_exporter sometimes takes longer than
    # the scrape timeout on this loaded machine (seen: a controller's scrape failed, sum(ActiveControllerCount)
    # was 0 for one point and the `!= 1` alert's expression had data on Kafka). A query's data at such a
    # point says nothing about its metrics, so it is not counted (the number of such points is reported).
    healthy = _healthy_points(prom.query_range("up", t_prom, t_end), targets[victim], t_pause,
                              t_resume + 2 * SCRAPE_S)
    res.timeline["points_with_a_failed_scrape"] = len(_grid(t_prom, t_end)) - len(healthy)
    # Strimzi's per-topic panel is an irate: averaged over the steady stretch before the fault. Confluent's is
    # a rate[5m]: read at the end, when its window holds the whole run (AFTER_THE_FAULT: why not irate then).
    res.rates = {t: (_mean_over(prom, e, traffic.t0 + SETTLE_S, t_pause, healthy) if "irate(" in e
                     else prom.scalar(e, t_end)) for t, e in rate_exprs.items()}
    res.rates_after = {t: _mean_over(prom, e, t_resume + SCRAPE_S, t_end, healthy)
                       for t, e in rate_exprs.items()}
    for rs in resolved.values():
        for r in rs:
            try:
                out = prom.query_range(r.expr, t_prom, t_end)
                r.series = sum(1 for s in out if any(round(float(t), 3) in healthy for t, _ in s["values"]))
                r.has_data = r.series > 0
            except PromQLError as e:
                r.error = str(e)
    res.queries = [r for rs in resolved.values() for r in rs]
    res.timeline.update(pause=t_pause, resume=t_resume, end=t_end)  # made relative by run_backend
    res.traffic = {"delivered": dict(traffic.delivered), "failed": dict(traffic.failed),
                   "consumed": traffic.consumed, "errors": list(traffic.errors)}


def _grid(start: float, end: float) -> list[float]:
    """The evaluation timestamps of a range query (start, start+step, ... <= end), as keys."""
    return [round(start + k * SCRAPE_S, 3) for k in range(int((end - start) // SCRAPE_S) + 1)]


def _healthy_points(up: list[dict], victim: str, paused_from: float, paused_to: float) -> set[float]:
    """Timestamps at which every target was up, the paused one excepted while paused (and just after)."""
    by_instance = {s["metric"]["instance"]: {round(float(t), 3): v for t, v in s["values"]} for s in up}
    points = set.intersection(*(set(v) for v in by_instance.values())) if by_instance else set()
    return {t for t in points if all(
        v[t] == "1" or (inst == victim and paused_from <= t <= paused_to) for inst, v in by_instance.items())}


def _mean_over(prom: Prometheus, expr: str, start: float, end: float, healthy: set[float]) -> float | None:
    """The panel's mean value at the healthy points in [start, end] (one series: the query is for one topic)."""
    origin = min(healthy)  # points on the grid of the run's range queries
    start = origin + max(0, -(-(start - origin) // SCRAPE_S)) * SCRAPE_S
    if start > end:
        return None
    vals = [float(v) for s in prom.query_range(expr, start, end) for t, v in s["values"]
            if round(float(t), 3) in healthy]
    return sum(vals) / len(vals) if vals else None


def _await_fault_values(prom: Prometheus, exprs: dict[str, str], victim_target: str,
                        deadline: float) -> tuple[dict[str, float | None], bool]:
    """Poll the fault panels until the paused broker is seen down, something is under-replicated and offline, and
    every value has stayed the same for 3 polls over at least two scrape intervals; (values, stable)."""
    since: float | None = None  # when the values last changed (while the fault shows)
    values: dict[str, float | None] = {}
    for _ in range(1000):
        if time.time() >= deadline:
            break
        now = {t: prom.scalar(e) for t, e in exprs.items()}
        down = any(s["value"][1] == "0" for s in prom.query(f'up{{instance="{victim_target}"}}'))
        if down and (now[URP_TITLE] or 0) > 0 and (now[OFFLINE_TITLE] or 0) > 0:
            if since is None or now != values:
                since = time.time()
            elif time.time() - since >= 2 * SCRAPE_S:
                return now, True
        else:
            since = None
        values = now
        threading.Event().wait(SCRAPE_S / 4)
    return values, False


# ---------------------------------------------------------------------------------------------- judging the runs

@dataclass(frozen=True)
class Listed:
    """Queries singled out by (pattern, reason) entries; a pattern is searched in '<source> <expression>' (the
    source, e.g. 'strimzi-kraft.json', lets an entry name a whole dashboard)."""

    entries: tuple[tuple[str, str], ...] = ()

    def entry(self, r: Resolved) -> tuple[str, str] | None:
        text = f"{r.query.source} {r.expr}"
        return next((e for e in self.entries if re.search(e[0], text)), None)

    def reason(self, r: Resolved) -> str | None:
        e = self.entry(r)
        return e[1] if e else None


@dataclass(frozen=True)
class Explanations:
    """Which queries may differ between the backends, and why: no data on either (out_of_scope), data on ours only,
    data on Kafka only (a mode's own names), and gaps of ours accepted for now ((source, where) -> reason)."""

    out_of_scope: Listed
    ours_only: Listed
    kafka_only: Listed = Listed()
    known_gaps: dict[tuple[str, str], str] = field(default_factory=dict)

    def out_of_scope_reason(self, r: Resolved) -> str | None:
        if r.expr.startswith("absent("):  # true exactly when the series are missing: data on both backends
            return None
        return self.out_of_scope.reason(r)


def _pairs(ours: RunResult, kafka: RunResult) -> list[tuple[Resolved, Resolved]]:
    k_by_key = {r.query.key: r for r in kafka.queries}
    return [(o, k_by_key[o.query.key]) for o in ours.queries]


def coverage_table(naming: str, ours: RunResult, kafka: RunResult) -> str:
    rows = [("dashboard / rules", "queries", "data on Kafka", "data on ours", "Kafka only", "ours only")]
    by_source: dict[str, list[tuple[Resolved, Resolved]]] = {}
    for o, k in _pairs(ours, kafka):
        by_source.setdefault(o.query.source, []).append((o, k))
    for source, pairs in by_source.items():
        rows.append((source, str(len(pairs)), str(sum(k.has_data for _, k in pairs)),
                     str(sum(o.has_data for o, _ in pairs)),
                     str(sum(k.has_data and not o.has_data for o, k in pairs)),
                     str(sum(o.has_data and not k.has_data for o, k in pairs))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"coverage, {naming} naming (queries with data over the run):"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def detail(naming: str, ours: RunResult, kafka: RunResult, ex: Explanations) -> str:
    lines = []
    for o, k in _pairs(ours, kafka):
        if o.has_data and k.has_data:
            continue
        tag = ("KAFKA ONLY" if k.has_data else "OURS ONLY" if o.has_data else "neither")
        reason = (ex.known_gaps.get((o.query.source, o.query.where)) or ex.out_of_scope_reason(o)
                  or (ex.ours_only.reason(o) if o.has_data else "")
                  or (ex.kafka_only.reason(k) if k.has_data else "")
                  or ("its condition never held in this run (its operand is judged on its own)"
                      if cq.operand(o.query.expr) and not (o.has_data or k.has_data) else ""))
        err = f" ERROR ours={o.error} kafka={k.error}" if (o.error or k.error) else ""
        lines.append(f"  [{tag}] {o.query.source} | {o.query.where} | {o.expr}{err}"
                     + (f"\n      -> {reason}" if reason else ""))
    return f"queries without data on both ({naming}):\n" + "\n".join(lines)


def run_pair(naming: str, base: Path, reference: Reference, ex: Explanations) -> dict[str, RunResult]:
    """Kafka, then ours, under `naming`; the report printed (pytest -s) and, with KAFKASCOPE_COMMUNITY_REPORT=<file>,
    appended to that file with every query's outcome (JSON)."""
    out = {impl: run_backend(impl, naming, base / impl, reference) for impl in ("apache-kafka", "kafkascope")}
    ours, kafka = out["kafkascope"], out["apache-kafka"]
    report = "\n".join([
        coverage_table(naming, ours, kafka), detail(naming, ours, kafka, ex),
        f"fault panels (broker paused): Kafka {kafka.fault} (stable={kafka.fault_stable}, metadata "
        f"{kafka.fault_metadata}) | ours {ours.fault} (stable={ours.fault_stable}, metadata {ours.fault_metadata})",
        f"active alerts at the end of the pause: Kafka {kafka.alerts} | ours {ours.alerts}",
        f"per-topic messages in (irate: mean before the fault; rate[5m]: at the end; producer {RATE}/s each): "
        f"Kafka {kafka.rates} | ours {ours.rates}",
        f"  the same after the resume (not compared: {AFTER_THE_FAULT}): Kafka {kafka.rates_after} | "
        f"ours {ours.rates_after}",
        f"timeline (s): Kafka {kafka.timeline} | ours {ours.timeline}",
        f"template variables: Kafka {kafka.variables} | ours {ours.variables}",
        f"traffic: Kafka {kafka.traffic} | ours {ours.traffic}",
    ])
    print("\n" + report)
    out_file = os.environ.get("KAFKASCOPE_COMMUNITY_REPORT")
    if out_file:
        with open(out_file, "a") as f:
            f.write(report + "\n\n")
            json.dump({impl: {"queries": [[r.query.source, r.query.where, r.expr, r.has_data, r.series, r.error]
                                          for r in res.queries]} for impl, res in out.items()}, f)
            f.write("\n\n")
    sys.stdout.flush()
    return out


def rejected(ours: RunResult, kafka: RunResult) -> list[str]:
    """Queries Prometheus refused on either backend."""
    return [f"{r.query.source} | {r.query.where}: {r.error}" for r in ours.queries + kafka.queries if r.error]


def missing_on_ours(ours: RunResult, kafka: RunResult, ex: Explanations) -> tuple[list[str], list[str]]:
    """(queries with data on Kafka and none on ours that no list explains, known gaps that now have data)."""
    gaps, closed = [], []
    for o, k in _pairs(ours, kafka):
        known = (o.query.source, o.query.where) in ex.known_gaps
        if k.has_data and not o.has_data and not known and not ex.kafka_only.reason(k):
            gaps.append(f"{o.query.source} | {o.query.where} | {o.expr}")
        if known and o.has_data:
            closed.append(f"{o.query.source} | {o.query.where} (remove it from KNOWN_GAPS)")
    return gaps, closed


def out_of_scope_with_data(kafka: RunResult, ex: Explanations) -> list[str]:
    return [f"{r.query.source} | {r.query.where} | {r.expr}" for r in kafka.queries
            if r.has_data and ex.out_of_scope_reason(r)]


def unexplained_ours_only(ours: RunResult, kafka: RunResult, ex: Explanations) -> list[str]:
    return [f"{o.query.source} | {o.query.where} | {o.expr}" for o, k in _pairs(ours, kafka)
            if o.has_data and not k.has_data and not ex.ours_only.reason(o)]


def stale_entries(listed: Listed, has: RunResult, lacks: RunResult) -> list[str]:
    """What is wrong with a list of one backend's own names: an entry none of whose queries has data on `has`, or a
    query it names that has data on `lacks` too (then it is not that backend's own)."""
    problems = []
    other = {r.query.key: r for r in lacks.queries}
    for pattern, reason in listed.entries:
        named = [r for r in has.queries if re.search(pattern, f"{r.query.source} {r.expr}")]
        if not any(r.has_data for r in named):
            problems.append(f"{pattern!r} ({reason}): no query it names has data on {has.impl}")
        problems += [f"{pattern!r}: {r.query.source} | {r.query.where} has data on {lacks.impl} too"
                     for r in named if other[r.query.key].has_data]
    return problems


def check_fault_panels_and_alerts(runs: dict[str, RunResult], kafka_reporters: dict[str, int] | None = None) -> None:
    """The fault panels show the same values on both (and what each cluster's Metadata says), the same alerts are
    active. kafka_reporters: panels that sum a cluster-wide gauge which that many of Kafka's nodes each report (a
    KRaft cluster's controllers all do); Kafka's value is divided by it first."""
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    assert kafka.fault_stable, f"Apache Kafka's fault panels never settled: {kafka.fault}"
    assert ours.fault_stable, f"our fault panels never settled: {ours.fault} (Kafka: {kafka.fault})"
    assert (kafka.fault[URP_TITLE] or 0) > 0 and (kafka.fault[OFFLINE_TITLE] or 0) > 0
    per_node = {t: (v / kafka_reporters[t] if v is not None and t in (kafka_reporters or {}) else v)
                for t, v in kafka.fault.items()}
    assert ours.fault == per_node, (f"fault panels differ: ours {ours.fault} vs Kafka {kafka.fault}"
                                    + (f" (divided by its reporting nodes {kafka_reporters})" if kafka_reporters
                                       else ""))
    for name, values, r in (("kafkascope", ours.fault, ours), ("apache-kafka", per_node, kafka)):
        # and each says what its own brokers' Metadata says
        wrong = {t: (v, r.fault_metadata[METADATA_OF[t]]) for t, v in values.items()
                 if t in METADATA_OF and v != r.fault_metadata[METADATA_OF[t]]}
        assert not wrong, f"{name}: panel vs Metadata {wrong}"
    assert set(ours.alerts) == set(kafka.alerts), f"active alerts: ours {ours.alerts} vs Kafka {kafka.alerts}"


def rate_problems(ours: RunResult, kafka: RunResult) -> list[str]:
    """Topics whose messages-in panel differs by more than 5% (or has no value) between the backends."""
    problems = []
    for t in TOPICS:
        a, b = ours.rates.get(t), kafka.rates.get(t)
        if a is None or b is None or b <= 0 or abs(a - b) > 0.05 * max(a, b):
            problems.append(f"{t}: ours {a} vs Kafka {b}")
    return problems
