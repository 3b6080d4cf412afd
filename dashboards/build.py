"""Prometheus rules, scrape config and the generated files (Grafana dashboards from dashboards/grafana.py) as code.

    python -m dashboards.build            # (re)write dashboards/prometheus/*.yml and dashboards/grafana/**
    python -m dashboards.build --check    # exit 1 if a committed file differs from what this generates

The SLOs (names, targets, 14-day period) come from slo/specs/default.yaml, the same file the SLO report reads.
Metric names (dashboards/metrics.py) are the ones our components export; tests/dashboards checks every name used
here and in the dashboards (dashboards/grafana.py) against a live scrape of each of them. Where the files go and the
job names: dashboards/catalog.py; the SLOs as PromQL: dashboards/slos.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from dashboards import grafana
from dashboards.catalog import (
    ALERTS_FILE,
    DASHBOARDS_DIR,
    EXAMPLE_CONFIG_FILE,
    GRAFANA_DIR,
    HERE,
    JOB_BROKER,
    JOB_LAG,
    JOB_NODE,
    JOB_XMONITOR,
    JOB_ZK,
    PROMETHEUS_DIR,
    RECORDING_FILE,
    RULE_FILES,
    RUNBOOK_DIR,
)
from dashboards.metrics import DISKS, REAL_FS, M, fs_free_ratio, logdir_fs_free_ratio
from dashboards.slos import slos

# ------------------------------------------------------------------------------------------------ thresholds

PRODUCE_P99_MS = 500            # acks=all produce p99 over this for 5m (with > MIN_REQUEST_RATE req/s)
FETCH_P99_MS = 1500             # consumer fetch p99 incl. the long-poll wait (fetch.max.wait.ms defaults to 500)
MIN_REQUEST_RATE = 1.0          # req/s: below this a p99 rests on too few requests to page anyone
HANDLER_IDLE_MIN = 0.2          # request handler idle fraction (Kafka's RequestHandlerAvgIdlePercent)
DISK_FREE_MIN_BYTES = 5 * 1024 ** 3
PURGATORY_MIN_SIZE = 500        # and growing (deriv over 10m > 0.5/s) for 10m
ISR_SHRINKS_PER_10M = 3         # ISR shrinks per broker over 10 minutes
FS_FREE_MIN_RATIO = 0.15        # Strimzi's KafkaRunningOutOfSpace: under 15% available
AUTH_FAILURES_PER_S = 0.1      # failed authentications per broker and listener (5m rate; 30 in 5m) for 5m
AUTHZ_DENIALS_PER_S = 0.1      # *_AUTHORIZATION_FAILED response errors per broker and request (5m rate) for 10m
CERT_TICKET_DAYS = 21          # a listener's TLS certificate expires within this many days: ticket
CERT_PAGE_DAYS = 3             # ... within this many days (or has expired): page
DISK_QUEUE_MAX = 10             # node-mixin's NodeDiskIOSaturation: average queue (aqu-sz) over 10 for 30m
QUORUM_ELECTIONS_PER_30M = 3    # KRaft quorum epoch changes seen by a node in 30 minutes
HANGING_TXN_FOR = "20m"          # LSO still for longer than transaction.max.timeout.ms (15 min) allows a transaction
METADATA_LAG_MAX_MS = 10_000    # a broker's last applied metadata record older than this for 5m (idle: ~0.5 s)

# Burn-rate windows (Google SRE Workbook's table, with Sloth's 3x ticket) for a 14-day period.
SLI_WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
PERIOD = "14d"
BURN_ALERTS = (  # (alert, severity, factor, long window, short window, for)
    ("KafkaSLOErrorBudgetBurnFast", "page", 14.4, "1h", "5m", "2m"),
    ("KafkaSLOErrorBudgetBurnFast", "page", 6.0, "6h", "30m", "15m"),
    ("KafkaSLOErrorBudgetBurnSlow", "ticket", 3.0, "1d", "2h", "1h"),
    ("KafkaSLOErrorBudgetBurnSlow", "ticket", 1.0, "3d", "6h", "3h"),
)


# ------------------------------------------------------------------------------------------------ rules


def recording_rules() -> dict:
    groups = []
    for s in slos():
        lbl = {"slo": s.name}
        rules: list[dict] = []
        if s.kind == "timeslice":
            rules.append({"record": "slo:sli_error:ratio", "expr": s.bad_now, "labels": lbl})
        for w in (*SLI_WINDOWS, PERIOD):
            if s.kind == "ratio":
                expr = f"({s.errors}) / ({s.total})".replace("$W", w)
            else:
                expr = f'avg_over_time(slo:sli_error:ratio{{slo="{s.name}"}}[{w}])'
            rules.append({"record": f"slo:sli_error:ratio_rate{w}", "expr": expr, "labels": lbl})
        sel = f'{{slo="{s.name}"}}'
        rules += [
            {"record": "slo:objective:ratio", "expr": f"vector({s.target})", "labels": lbl},
            {"record": "slo:error_budget:ratio", "expr": f"vector({1 - s.target:.6g})", "labels": lbl},
            {"record": "slo:time_period:days", "expr": "vector(14)", "labels": lbl},
            {"record": "slo:current_burn_rate:ratio",
             "expr": f"slo:sli_error:ratio_rate5m{sel} / on(slo) group_left slo:error_budget:ratio{sel}",
             "labels": lbl},
            {"record": "slo:period_burn_rate:ratio",
             "expr": f"slo:sli_error:ratio_rate{PERIOD}{sel} / on(slo) group_left slo:error_budget:ratio{sel}",
             "labels": lbl},
            {"record": "slo:period_error_budget_remaining:ratio",
             "expr": f"1 - slo:period_burn_rate:ratio{sel}", "labels": lbl},
        ]
        groups.append({"name": f"kafkascope-slo-{s.name}", "rules": rules})
    groups.append({"name": "kafkascope-sli", "rules": [
        {"record": "kafkascope:write_availability:ratio_rate5m",
         "expr": f"sum by (cluster, leader) (rate({M.x_successes}[5m])) / "
                 f"sum by (cluster, leader) (rate({M.x_attempts}[5m]))"},
        {"record": "kafkascope:read_availability:ratio_rate5m",
         "expr": "1 - slo:sli_error:ratio_rate5m{slo=\"read-availability\"}"},
        {"record": "kafkascope:e2e_latency_seconds:p99_5m",
         "expr": f"histogram_quantile(0.99, sum by (cluster, le) (rate({M.x_e2e_bucket}[5m])))"},
    ]})
    return {"groups": groups}


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str = "0s"
    labels: tuple = ()
    group: str = "kafkascope-alerts"


def _broker_alerts() -> list[Alert]:
    b = f'job="{JOB_BROKER}"'
    return [
        Alert("KafkaUnderReplicatedPartitions", f"sum by (job, instance) ({M.under_replicated}) > 0", "ticket",
              "{{ $labels.instance }} leads {{ $value }} under-replicated partitions",
              "Partitions led by {{ $labels.instance }} have fewer in-sync replicas than replicas: a follower is "
              "down, paused or falling behind. Durability is reduced until it catches up.", "1m"),
        Alert("KafkaUnderMinIsrPartitions", f"sum by (job, instance) ({M.under_min_isr}) > 0", "page",
              "{{ $labels.instance }} has {{ $value }} partitions under min.insync.replicas",
              "Producers with acks=all get NOT_ENOUGH_REPLICAS on these partitions: writes are failing.", "1m"),
        Alert("KafkaOfflinePartitions", f"sum({M.offline_partitions}) > 0", "page",
              "{{ $value }} partitions have no leader",
              "Offline partitions cannot be read or written. The controller found no live in-sync replica "
              "to lead them.", "1m"),
        Alert("KafkaActiveControllerCountNotOne", f"sum({M.active_controller}) != 1", "page",
              "{{ $value }} active controllers (expected exactly 1)",
              "Zero means no broker is handling leader elections and metadata changes; more than one means "
              "a split brain (a stale controller that lost its ZooKeeper session).", "1m"),
        Alert("KafkaIsrShrinkRateHigh",
              f"sum by (job, instance) (increase({M.isr_shrinks}[10m])) > {ISR_SHRINKS_PER_10M}", "ticket",
              "ISR shrinking often on {{ $labels.instance }} ({{ $value | humanize }} in 10m)",
              "Followers keep dropping out of the ISR of partitions this broker leads (flapping replicas: "
              "network, GC/CPU pauses, disk, or replica.lag.time.max.ms too tight).", "5m"),
        Alert("KafkaBrokerDown", f"up{{{b}}} == 0", "page",
              "Kafka broker {{ $labels.instance }} is not answering scrapes",
              "Prometheus cannot scrape {{ $labels.instance }}: the broker process is down, hung or "
              "unreachable. Its partitions are led elsewhere (or offline) and under-replicated.", "1m"),
        Alert("ZooKeeperLeaderCountNotOne",
              f"((sum({M.zk_leader}) or vector(0)) + (sum({M.zk_state}{{state=\"standalone\"}}) or vector(0)) "
              f"!= 1) and on() (count({M.zk_up}) > 0)", "page",
              "ZooKeeper ensemble has {{ $value }} leaders (expected exactly 1)",
              "Without exactly one ZooKeeper leader (or one standalone server) the ensemble has no quorum: "
              "Kafka cannot elect a controller, change ISRs or register brokers.", "1m"),
        Alert("KafkaProduceLatencyHigh",
              f'max by (job, instance) ({M.total_time_ms}{{request="Produce",quantile="0.99"}}) > {PRODUCE_P99_MS}'
              f' and on(job, instance) sum by (job, instance) (rate({M.requests}{{request="Produce"}}[5m]))'
              f" > {MIN_REQUEST_RATE}", "ticket",
              "Produce p99 on {{ $labels.instance }} is {{ $value | humanize }} ms",
              f"The produce request p99 (HDR, last 60 s) is above {PRODUCE_P99_MS} ms while the broker serves "
              f"more than {MIN_REQUEST_RATE:g} produce req/s.", "5m"),
        Alert("KafkaFetchLatencyHigh",
              f'max by (job, instance) ({M.total_time_ms}{{request="FetchConsumer",quantile="0.99"}}) > '
              f'{FETCH_P99_MS} and on(job, instance) sum by (job, instance) '
              f'(rate({M.requests}{{request="Fetch"}}[5m])) > {MIN_REQUEST_RATE}', "ticket",
              "Consumer fetch p99 on {{ $labels.instance }} is {{ $value | humanize }} ms",
              f"The consumer fetch p99 (HDR, last 60 s, long-poll wait included) is above {FETCH_P99_MS} ms "
              f"while the broker serves more than {MIN_REQUEST_RATE:g} fetch req/s.", "5m"),
        Alert("KafkaPurgatoryGrowing",
              f"{M.purgatory_size} > {PURGATORY_MIN_SIZE} and deriv({M.purgatory_size}[10m]) > 0.5", "ticket",
              "{{ $labels.delayedOperation }} purgatory on {{ $labels.instance }} keeps growing "
              "({{ $value }} entries)",
              "Delayed produce/fetch operations accumulate faster than they complete or expire: followers not "
              "acknowledging acks=all writes, or a flood of long-poll fetches.", "10m"),
        Alert("KafkaRequestHandlerIdleLow",
              f"rate({M.handler_idle_ns}[5m]) / 1e9 < {HANDLER_IDLE_MIN}", "ticket",
              "Request handlers on {{ $labels.instance }} only {{ $value | humanizePercentage }} idle",
              "The broker's request handling (its event loop) is nearly saturated: latency rises and requests "
              "queue.", "10m"),
        Alert("KafkaLogDirFreeSpaceLow", f"{M.free_bytes} < {DISK_FREE_MIN_BYTES}", "page",
              "Log dir {{ $labels.logDir }} on {{ $labels.instance }} has {{ $value | humanize1024 }}B free",
              "When the log directory fills the broker takes it offline and its replicas fail.", "5m"),
        Alert("KafkaOfflineLogDirectory", f"{M.offline_log_dirs} > 0", "page",
              "{{ $value }} log dir(s) offline on {{ $labels.instance }}",
              "A write to the log directory failed (a full disk, an I/O error): its replicas are offline on this "
              "broker until it restarts, and their leaderships moved to other brokers (Strimzi's "
              "OfflineLogDirectoryCount). With every log dir offline the broker halts.", "1m"),
    ]


def _host_and_monitor_alerts() -> list[Alert]:
    return [
        Alert("KafkaRunningOutOfSpace",
              f"{logdir_fs_free_ratio()} < {FS_FREE_MIN_RATIO} or ({fs_free_ratio(REAL_FS)} < {FS_FREE_MIN_RATIO} "
              f"unless on(instance) {M.logdir_mount_info})", "ticket",
              "Filesystem {{ $labels.mountpoint }} on {{ $labels.instance }} has {{ $value | humanizePercentage }} "
              "space left",
              f"Under {FS_FREE_MIN_RATIO:.0%} of the filesystem is available (Strimzi's KafkaRunningOutOfSpace, on "
              f"node_exporter's filesystem metrics): a filesystem holding a broker log dir, or on a host that does "
              f"not say where its log dirs are ({M.logdir_mount_info}), any writable non-pseudo filesystem. "
              "A full log dir goes offline with every replica on it.", "5m"),
        Alert("NodeDiskIOSaturation",
              f"rate({M.node_disk_io_weighted}{{{DISKS}}}[5m]) > {DISK_QUEUE_MAX}", "ticket",
              "Disk {{ $labels.device }} on {{ $labels.instance }} has {{ $value | humanize }} I/Os queued on "
              "average",
              f"The average I/O queue (aqu-sz: io_time_weighted per second) of the disk has been above "
              f"{DISK_QUEUE_MAX} for 30 minutes (node-mixin's NodeDiskIOSaturation): the disk is saturated; "
              "produce latency (log appends, flushes) and consumer reads that miss the page cache wait on it.", "30m"),
        Alert("KafkaConsumerGroupError", f"{M.burrow_status} >= 3", "ticket",
              "Consumer group {{ $labels.consumer_group }} is ERR (Burrow)",
              "Burrow's rules say the group has stopped or stalled on at least one partition: it is not "
              "committing while lag grows, or keeps committing the same offset.", "5m"),
        Alert("KafkaConsumerGroupWarning", f"{M.burrow_status} == 2", "ticket",
              "Consumer group {{ $labels.consumer_group }} is WARN (Burrow)",
              "Lag has grown over every offset in Burrow's window on some partition: the group consumes more "
              "slowly than producers write.", "15m"),
        Alert("XMonitorRecordsLost", f"sum by (cluster, topic) (increase({M.x_lost}[5m])) > 0", "page",
              "xmonitor lost {{ $value | humanize }} acknowledged records on {{ $labels.cluster }}",
              "Records the cluster acknowledged (acks=all) were never consumed: data loss (unclean leader "
              "election, truncation) or a broken consumer path.", "0s"),
        Alert("XMonitorDown",
              f'up{{job="{JOB_XMONITOR}"}} == 0 or min by (job, cluster, service) ({M.x_service_up}) == 0 '
              f'or absent(up{{job="{JOB_XMONITOR}"}})', "ticket",
              "xmonitor is down or one of its services is not running",
              "Without xmonitor there are no write/read SLIs: the SLO alerts are blind.", "2m"),
    ]


def _security_alerts() -> list[Alert]:
    """Authentication failures, authorization denials (Kafka's series too) and TLS certificate expiry (ours only)."""
    g = "kafkascope-security"
    failed = f"sum by (job, instance, listener) (rate({M.auth_failed}[5m]))"
    denied = (f'sum by (job, instance, request, error) (rate({M.errors}{{error=~".+_AUTHORIZATION_FAILED"}}[5m]))'
              f" > {AUTHZ_DENIALS_PER_S}")
    left = f"{M.cert_not_after} - time()"
    cert = ("The certificate (first of the chain in ssl.keystore.location) that listener {{ $labels.listener }} on "
            "{{ $labels.instance }} presents expires in {{ $value | humanizeDuration }} (negative: it has expired). Clients "
            "then fail the TLS handshake, and with an inter-broker listener on TLS replication stops. Only "
            f"kafkascope brokers export {M.cert_not_after}: on Apache Kafka this alert never fires (probe the "
            "listener with blackbox_exporter's probe_ssl_earliest_cert_expiry instead).")
    return [
        Alert("KafkaAuthenticationFailuresHigh", f"{failed} > {AUTH_FAILURES_PER_S}", "ticket",
              "{{ $value | humanize }} failed authentications/s on listener {{ $labels.listener }} of "
              "{{ $labels.instance }}",
              "Clients keep failing SASL authentication (wrong password, unknown user or mechanism, expired "
              "SCRAM credential) or the TLS handshake (SSL listeners count those, as Kafka does) on this listener: "
              "a misconfigured or rotated-out client retrying, or someone guessing credentials. "
              f"{M.auth_failed} (socket-server-metrics failed-authentication-total; Kafka exports it too).", "5m",
              group=g),
        Alert("KafkaAuthorizationFailuresHigh", denied, "ticket",
              "{{ $value | humanize }} {{ $labels.error }} errors/s in {{ $labels.request }} responses of "
              "{{ $labels.instance }}",
              "Authenticated principals keep being denied by the ACLs: a client lacks an ACL it needs (a new "
              "topic, group or transactional id, a renamed principal, a removed ACL) or is probing what it may "
              f"not touch. From {M.errors} (RequestMetrics ErrorsPerSec, by request and error).", "10m", group=g),
        Alert("KafkaTLSCertificateExpiringSoon", f"{left} < {CERT_TICKET_DAYS} * 86400", "ticket",
              f"TLS certificate of {{{{ $labels.listener }}}} on {{{{ $labels.instance }}}} expires within "
              f"{CERT_TICKET_DAYS} days", cert, "10m", group=g),
        Alert("KafkaTLSCertificateExpiringSoon", f"{left} < {CERT_PAGE_DAYS} * 86400", "page",
              f"TLS certificate of {{{{ $labels.listener }}}} on {{{{ $labels.instance }}}} expires within "
              f"{CERT_PAGE_DAYS} days", cert, "10m", group=g),
    ]


def _kraft_alerts() -> list[Alert]:
    """KRaft clusters (Kafka 4): the controller quorum and metadata propagation. Their series exist only on KRaft
    nodes, so on a ZooKeeper-mode cluster these stay quiet (KafkaActiveControllerCountNotOne covers that mode)."""
    g = "kafkascope-kraft"
    kraft = f"count({M.raft_state}) > 0"
    errors = (f"sum by (job, instance) ({M.metadata_load_errors}) + sum by (job, instance) ({M.metadata_apply_errors})"
              f" > 0 or sum by (job, instance) ({M.controller_metadata_errors}) > 0")
    return [
        Alert("KafkaKRaftNoActiveController", f"(sum({M.active_controller}) or vector(0)) < 1 and on() {kraft}",
              "page", "No active KRaft controller",
              "No node reports ActiveControllerCount 1 while KRaft nodes are up: the controller quorum has no "
              "leader (a majority of controllers down or partitioned). Topic, partition and ACL changes fail, ISR "
              "and leader changes stop, and brokers cannot register or be unfenced.", "1m", group=g),
        Alert("KafkaKRaftQuorumLeaderChangesFrequent",
              f"max by (job) (changes({M.raft_epoch}[30m])) > {QUORUM_ELECTIONS_PER_30M}", "ticket",
              "The KRaft quorum elected a new leader {{ $value }} times in 30 minutes",
              "The quorum epoch (raft-metrics current-epoch) keeps rising: controllers keep losing and electing "
              "the leader (controller restarts, GC or disk stalls on the metadata log, network between "
              "controllers, controller.quorum.fetch.timeout.ms too tight). Each election pauses metadata changes.",
              "0s", group=g),
        Alert("KafkaKRaftMetadataErrors", errors, "page",
              "{{ $labels.instance }} failed to load or apply {{ $value }} metadata records",
              "A node's metadata loader or publisher hit an error (broker-metadata-metrics metadata-load-error-count "
              "or metadata-apply-error-count, or the controller's MetadataErrorCount): its view of topics, "
              "partitions, configs or ACLs may be incomplete or stale until it is restarted.", "0s", group=g),
        Alert("KafkaKRaftMetadataLagHigh", f"max by (job, instance) ({M.metadata_lag_ms}) > {METADATA_LAG_MAX_MS}",
              "ticket", "{{ $labels.instance }} applies metadata {{ $value | humanize }} ms late",
              f"The newest metadata record the broker has applied is over {METADATA_LAG_MAX_MS / 1000:g} s old "
              "(broker-metadata-metrics last-applied-record-lag-ms); the controller writes one at least every "
              "metadata.max.idle.interval.ms (500 ms), so the broker is not fetching from the quorum or not "
              "applying what it fetches. Its leadership and ISR view lags the cluster's.", "5m", group=g),
    ]


def _burn_alerts() -> list[Alert]:
    a = []
    for s in slos():
        budget = 1 - s.target
        for name, sev, factor, long_w, short_w, for_ in BURN_ALERTS:
            thr = f"{factor * budget:.6g}"
            a.append(Alert(
                name,
                f'slo:sli_error:ratio_rate{long_w}{{slo="{s.name}"}} > {thr} and on(cluster, slo) '
                f'slo:sli_error:ratio_rate{short_w}{{slo="{s.name}"}} > {thr}', sev,
                f"{s.name} SLO burning its 14-day error budget at over {factor:g}x",
                f"{s.display} ({s.target:.4g} over 14 days): the error ratio over {long_w} and over {short_w} are "
                f"both above {factor:g}x the budget ({thr}); at this rate the budget lasts "
                f"{14 / factor:.3g} days. Current {long_w} error ratio: {{{{ $value | humanizePercentage }}}}.",
                for_, (("slo", s.name), ("long_window", long_w), ("short_window", short_w))))
    return a


def _transaction_alerts() -> list[Alert]:
    """A hanging transaction (KIP-890's subject): a partition's Last Stable Offset stands still while its log end
    moves, from the partition's LastStableOffsetLag (HW - LSO) and LogEndOffset on the same broker."""
    on = "on(job, instance, topic, partition)"
    lag, leo = M.partition_lso_lag, M.log_end_offset
    # LSO = log end - LastStableOffsetLag (the HW on a leader in sync): still over 5m while the log end moved, and
    # so for HANGING_TXN_FOR
    return [
        Alert("KafkaHangingTransaction",
              f"({lag} > 0) and {on} (delta(({leo} - {on} {lag})[5m:1m]) == 0) "
              f"and {on} (delta({leo}[5m]) > 0)", "ticket",
              "Partition {{ $labels.topic }}-{{ $labels.partition }} on {{ $labels.instance }}: an open "
              "transaction holds its Last Stable Offset ({{ $value }} records behind the log end)",
              f"The partition's LSO has not moved for {HANGING_TXN_FOR} (longer than transaction.max.timeout.ms "
              "allows a transaction) while "
              "records keep arriving: a transaction nobody will end. read_committed consumers (Kafka Streams, "
              "exactly-once pipelines) stop at the LSO and stop making progress, though their lag monitor "
              "status stays OK.", HANGING_TXN_FOR, group="kafkascope-transactions"),
    ]


def _alerts() -> list[Alert]:
    return [*_broker_alerts(), *_host_and_monitor_alerts(), *_security_alerts(), *_kraft_alerts(),
            *_transaction_alerts(), *_burn_alerts()]


def alert_names() -> list[str]:
    return sorted({a.name for a in _alerts()})


def alerting_rules() -> dict:
    groups: dict[str, list] = {}
    for a in _alerts():
        group = "kafkascope-slo-burn" if a.name.startswith("KafkaSLO") else a.group
        rule: dict[str, object] = {"alert": a.name, "expr": a.expr}
        if a.for_ != "0s":
            rule["for"] = a.for_
        rule["labels"] = {"severity": a.severity, **dict(a.labels)}
        rule["annotations"] = {"summary": a.summary, "description": a.description,
                               "runbook_url": f"{RUNBOOK_DIR}/{a.name}.md"}
        groups.setdefault(group, []).append(rule)
    return {"groups": [{"name": g, "rules": r} for g, r in groups.items()]}


def scrape_config(targets: dict[str, list[str]], rule_files: list[str] | None = None,
                  scrape_interval: str = "15s", evaluation_interval: str | None = None) -> str:
    """prometheus.yml for job → targets (job names as JOB_* above)."""
    cfg = {"global": {"scrape_interval": scrape_interval,
                      "evaluation_interval": evaluation_interval or scrape_interval},
           "rule_files": list(rule_files or RULE_FILES),
           "scrape_configs": [{"job_name": job, "static_configs": [{"targets": list(t)}]}
                              for job, t in targets.items()]}
    return _yaml(cfg)


EXAMPLE_TARGETS = {JOB_BROKER: ["127.0.0.1:9404", "127.0.0.1:9405", "127.0.0.1:9406"],
                   JOB_XMONITOR: ["127.0.0.1:9412"], JOB_LAG: ["127.0.0.1:8000"], JOB_ZK: ["127.0.0.1:9141"],
                   JOB_NODE: ["127.0.0.1:9100"]}


# ------------------------------------------------------------------------------------------------ output


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data) -> bool:  # no &id001 anchors in generated files
        return True


def _str(dumper, s: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)


def _yaml(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True)


HEADER = "# GENERATED by `python -m dashboards.build` from dashboards/build.py: do not edit by hand.\n"


def generated() -> dict[Path, str]:
    """Every generated file (path → content)."""
    out = {
        PROMETHEUS_DIR / RECORDING_FILE: HEADER + _yaml(recording_rules()),
        PROMETHEUS_DIR / ALERTS_FILE: HEADER + _yaml(alerting_rules()),
        PROMETHEUS_DIR / EXAMPLE_CONFIG_FILE: HEADER + scrape_config(EXAMPLE_TARGETS),
    }
    for name, board in grafana.dashboards().items():
        out[DASHBOARDS_DIR / f"{name}.json"] = json.dumps(board, indent=2, sort_keys=True) + "\n"
    for rel, text in grafana.provisioning().items():
        out[GRAFANA_DIR / rel] = text
    return out


def write(check: bool = False) -> list[Path]:
    """Write the generated files (or, with check, return those that differ)."""
    stale = []
    for path, text in generated().items():
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    return stale


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dashboards.build", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only report stale files (exit 1)")
    args = p.parse_args(argv)
    stale = write(check=args.check)
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(HERE.parent)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
