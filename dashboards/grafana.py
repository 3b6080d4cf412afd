"""Grafana dashboards as code (JSON model, schemaVersion 39) and provisioning files; written by dashboards/build.py.

Every query names its metrics through dashboards.metrics.M, so a renamed metric breaks the build and the
live-scrape test, not a dashboard at 3 a.m. ``QUERIES_NEEDING_FAULT`` lists the queries that only have data
while something is wrong (the end-to-end test produces those faults).
"""

from __future__ import annotations

from dashboards import metrics
from dashboards.catalog import JOB_BROKER, JOB_LAG, JOB_XMONITOR, JOB_ZK
from dashboards.metrics import M
from dashboards.slos import slos

DS = {"type": "prometheus", "uid": "${datasource}"}
DATASOURCE_UID = "kafkascope-prometheus"
FOLDER = "kafkascope"
TAGS = ["kafka", "kafkascope"]

# Query expressions with no data in a healthy cluster (listed for the end-to-end test).
QUERIES_NEEDING_FAULT: set[str] = set()


class Board:
    def __init__(self, uid: str, title: str, description: str) -> None:
        self.uid, self.title, self.description = uid, title, description
        self.panels: list[dict] = []
        self._y = 0
        self._x = 0
        self._row_h = 0
        self._id = 0

    def row(self, title: str) -> Board:
        self._newline()
        self._id += 1
        self.panels.append({"type": "row", "title": title, "id": self._id, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self._y}, "panels": []})
        self._y += 1
        return self

    def _newline(self) -> None:
        if self._x:
            self._y += self._row_h
            self._x, self._row_h = 0, 0

    def panel(self, title: str, targets: list[tuple[str, str]], kind: str = "timeseries", unit: str = "short",
              w: int = 8, h: int = 8, description: str = "", fault: bool = False, thresholds=None,
              **options) -> Board:
        if self._x + w > 24:
            self._newline()
        self._id += 1
        p = {"type": kind, "title": title, "id": self._id, "datasource": DS, "description": description,
             "gridPos": {"h": h, "w": w, "x": self._x, "y": self._y},
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
             "targets": [{"refId": chr(65 + i), "datasource": DS, "expr": expr, "legendFormat": legend,
                          **({"instant": True, "format": "table"} if kind == "table" else {})}
                         for i, (expr, legend) in enumerate(targets)],
             "options": options}
        if thresholds:
            p["fieldConfig"]["defaults"]["thresholds"] = {"mode": "absolute", "steps": [
                {"color": c, "value": v} for v, c in thresholds]}
        if fault:
            QUERIES_NEEDING_FAULT.update(e for e, _ in targets)
        self.panels.append(p)
        self._x += w
        self._row_h = max(self._row_h, h)
        return self

    def stat(self, title: str, expr: str, unit: str = "short", thresholds=None, w: int = 4, **kw) -> Board:
        return self.panel(title, [(expr, "")], kind="stat", unit=unit, w=w, h=4,
                          thresholds=thresholds or [(None, "green")], **kw)

    def json(self) -> dict:
        return {
            "uid": self.uid, "title": self.title, "description": self.description, "tags": TAGS,
            "schemaVersion": 39, "version": 1, "editable": True, "graphTooltip": 1, "timezone": "browser",
            "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
            "templating": {"list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
                 "current": {"text": "Prometheus", "value": DATASOURCE_UID}},
            ]},
            "annotations": {"list": []}, "links": [{"type": "dashboards", "tags": ["kafkascope"], "asDropdown": True,
                                                     "title": "kafkascope"}],
            "panels": self.panels,
        }


RED = [(None, "green"), (1, "red")]
B = f'job="{JOB_BROKER}"'


def cluster_overview() -> Board:
    d = Board("kafkascope-cluster", "Kafka cluster overview",
              "Availability, speed, load and traffic of the brokers (Strimzi/jmx_exporter metric names).")
    d.row("Availability")
    d.stat("Brokers up", f"sum(up{{{B}}})", thresholds=[(None, "red"), (3, "green")])
    d.stat("Active controllers", f"sum({M.active_controller})", thresholds=[(None, "red"), (1, "green"), (2, "red")])
    d.stat("Offline partitions", f"sum({M.offline_partitions})", thresholds=RED)
    d.stat("Under-replicated partitions", f"sum({M.under_replicated})", thresholds=RED)
    d.stat("Under min ISR", f"sum({M.under_min_isr})", thresholds=RED)
    d.stat("ZooKeeper sessions connected",
           f'sum({M.zk_session_state}{{state="CONNECTED"}})', thresholds=[(None, "red"), (3, "green")])
    d.panel("Under-replicated partitions by broker", [(f"sum by (instance) ({M.under_replicated})", "{{instance}}")])
    d.panel("ISR shrinks / expands per second",
            [(f"sum by (instance) (rate({M.isr_shrinks}[5m]))", "shrinks {{instance}}"),
             (f"sum by (instance) (rate({M.isr_expands}[5m]))", "expands {{instance}}")])
    d.panel("Partitions and leaders per broker",
            [(f"sum by (instance) ({M.partition_count})", "partitions {{instance}}"),
             (f"sum by (instance) ({M.leader_count})", "leaders {{instance}}")])
    d.panel("Leader elections and unclean elections per second",
            [(f"sum(rate({M.leader_elections}[5m]))", "elections"),
             (f"sum(rate({M.unclean_elections}[5m]))", "unclean")])
    d.panel("Max follower lag (messages)", [(f"max by (instance) ({M.max_lag})", "{{instance}}")])
    d.panel("Offline log directories", [(f"sum by (instance) ({M.offline_log_dirs})", "{{instance}}")])
    d.row("Speed")
    d.panel("Produce p99 (HDR, ms)",
            [(f'max by (instance) ({M.total_time_ms}{{request="Produce",quantile="0.99"}})', "{{instance}}")],
            unit="ms")
    d.panel("Consumer fetch p99 (HDR, ms)",
            [(f'max by (instance) ({M.total_time_ms}{{request="FetchConsumer",quantile="0.99"}})', "{{instance}}")],
            unit="ms")
    d.panel("Follower fetch p99 (HDR, ms)",
            [(f'max by (instance) ({M.total_time_ms}{{request="FetchFollower",quantile="0.99"}})', "{{instance}}")],
            unit="ms")
    d.row("Load")
    d.panel("Request handler idle", [(f"rate({M.handler_idle_ns}[5m]) / 1e9", "{{instance}}")], unit="percentunit")
    d.panel("Network processor idle", [(M.network_idle, "{{instance}}")], unit="percentunit")
    d.panel("Request / response queue", [(f"sum by (instance) ({M.request_queue})", "requests {{instance}}"),
                                         (f"sum by (instance) ({M.response_queue})", "responses {{instance}}")])
    d.panel("Purgatory size", [(f"sum by (instance, delayedOperation) ({M.purgatory_size})",
                                "{{delayedOperation}} {{instance}}")])
    d.panel("CPU (cores)", [(f"rate({M.cpu}{{{B}}}[5m])", "{{instance}}")])
    d.panel("Resident memory", [(f"{M.rss}{{{B}}}", "{{instance}}")], unit="bytes")
    d.panel("GC pause seconds per second", [(f"sum by (instance) (rate({M.gc_pause}[5m]))", "{{instance}}")],
            unit="s")
    d.panel("Log dir free space", [(M.free_bytes, "{{instance}} {{logDir}}")], unit="bytes")
    d.panel("Connections", [(f"sum by (instance) ({M.connections})", "{{instance}}")])
    d.row("Traffic")
    d.panel("Bytes in / out per second (all topics)",
            [(f"sum by (instance) (rate({M.bytes_in}{{topic=\"\"}}[5m]))", "in {{instance}}"),
             (f"sum by (instance) (rate({M.bytes_out}{{topic=\"\"}}[5m]))", "out {{instance}}")], unit="Bps")
    d.panel("Messages in per second", [(f'sum by (instance) (rate({M.messages_in}{{topic=""}}[5m]))', "{{instance}}")])
    d.panel("Replication bytes in / out per second",
            [(f"sum by (instance) (rate({M.replication_bytes_in}[5m]))", "in {{instance}}"),
             (f"sum by (instance) (rate({M.replication_bytes_out}[5m]))", "out {{instance}}")], unit="Bps")
    d.panel("Requests per second by type", [(f"sum by (request) (rate({M.requests}[5m]))", "{{request}}")])
    d.panel("Errors per second (not NONE)",
            [(f'sum by (request, error) (rate({M.errors}{{error!="NONE"}}[5m]))', "{{request}} {{error}}")],
            fault=True)
    d.panel("Failed produce / fetch requests per second",
            [(f'sum(rate({M.failed_produce}{{topic=""}}[5m]))', "produce"),
             (f'sum(rate({M.failed_fetch}{{topic=""}}[5m]))', "fetch")])
    return d


REQUESTS = ("Produce", "FetchConsumer", "FetchFollower", "Metadata", "OffsetCommit")


def request_latency() -> Board:
    d = Board("kafkascope-latency", "Kafka request latency",
              "HDR quantiles (exact over the last 60 s) and histogram_quantile over classic buckets, per request "
              "type and broker; the time split shows where a slow request spends its time.")
    for req in REQUESTS:
        d.row(req)
        d.panel(f"{req} p50 / p99 / p99.9 (HDR, ms)",
                [(f'max by (instance) ({M.total_time_ms}{{request="{req}",quantile="{q}"}})', f"p{q[2:]} " +
                  "{{instance}}") for q in ("0.50", "0.99", "0.999")], unit="ms")
        d.panel(f"{req} p99 (histogram_quantile over 5m)",
                [(f'histogram_quantile(0.99, sum by (instance, le) (rate({M.total_time_bucket}{{request="{req}"}}'
                  f'[5m])))', "{{instance}}")], unit="s")
        d.panel(f"{req} p99 time split (HDR, ms)",
                [(f'max({M.request_time_ms.format(part=part)}{{request="{req}",quantile="0.99"}})', part)
                 for part in ("requestqueuetime", "localtime", "remotetime", "responsequeuetime",
                              "responsesendtime")], unit="ms")
    d.row("Rates")
    d.panel("Requests per second by type and broker",
            [(f"sum by (request, instance) (rate({M.requests}[5m]))", "{{request}} {{instance}}")], w=24)
    return d


def topics() -> Board:
    d = Board("kafkascope-topics", "Kafka topics and partitions", "Per-topic traffic and per-partition state.")
    d.row("Topics")
    d.panel("Bytes in per topic", [(f'sum by (topic) (rate({M.bytes_in}{{topic!=""}}[5m]))', "{{topic}}")],
            unit="Bps")
    d.panel("Bytes out per topic", [(f'sum by (topic) (rate({M.bytes_out}{{topic!=""}}[5m]))', "{{topic}}")],
            unit="Bps")
    d.panel("Messages in per topic", [(f'sum by (topic) (rate({M.messages_in}{{topic!=""}}[5m]))', "{{topic}}")])
    d.panel("Log size per topic (leaders and replicas)", [(f"sum by (topic) ({M.log_size})", "{{topic}}")],
            unit="bytes")
    d.stat("Topics", f"max({M.global_topics})", w=4)
    d.stat("Partitions", f"max({M.global_partitions})", w=4)
    d.stat("Preferred leader imbalance", f"sum({M.preferred_imbalance})", w=4)
    d.row("Partitions")
    d.panel("Partitions with ISR < replicas",
            [(f"sum by (topic, partition) ({M.partition_under_replicated}) > 0", "{{topic}}-{{partition}}")],
            kind="table", w=12, fault=True)
    d.panel("In-sync replicas per partition",
            [(f"max by (topic, partition) ({M.partition_isr})", "{{topic}}-{{partition}}")], kind="table", w=12)
    d.panel("Log end offset per partition",
            [(f"max by (topic, partition) ({M.log_end_offset})", "{{topic}}-{{partition}}")], w=12)
    d.panel("Segments per partition", [(f"max by (topic, partition) ({M.log_segments})", "{{topic}}-{{partition}}")],
            w=12)
    return d


def xmonitor() -> Board:
    d = Board("kafkascope-xmonitor", "xmonitor SLIs",
              "Write and read availability, end-to-end latency, loss and duplicates measured by the xmonitor "
              "probe, per cluster and per leader broker.")
    x = f'job="{JOB_XMONITOR}"'
    d.row("Availability")
    d.panel("Write availability by leader (5m)",
            [("kafkascope:write_availability:ratio_rate5m", "leader {{leader}}")], unit="percentunit")
    d.panel("Read availability (5m)", [("kafkascope:read_availability:ratio_rate5m", "{{cluster}}")],
            unit="percentunit")
    d.panel("Produce / consume availability (Xinfra kmf gauges)",
            [(M.kmf_produce_availability, "produce"), (M.kmf_consume_availability, "consume")], unit="percentunit")
    d.panel("Produce errors by error and leader",
            [(f"sum by (error, leader) (rate({M.x_produce_errors}[5m]))", "{{error}} leader {{leader}}")],
            fault=True)
    d.panel("Probe sends per second by leader",
            [(f"sum by (leader) (rate({M.x_attempts}[5m]))", "leader {{leader}}")])
    d.panel("xmonitor services up", [(f"{M.x_service_up}{{{x}}}", "{{service}}")])
    d.row("Latency")
    d.panel("End-to-end p99 / p50",
            [("kafkascope:e2e_latency_seconds:p99_5m", "p99"),
             (f"histogram_quantile(0.5, sum by (le) (rate({M.x_e2e_bucket}[5m])))", "p50")], unit="s")
    d.panel("End-to-end p99 by leader",
            [(f"histogram_quantile(0.99, sum by (leader, le) (rate({M.x_e2e_bucket}[5m])))", "leader {{leader}}")],
            unit="s")
    d.panel("Produce p99 by leader",
            [(f"histogram_quantile(0.99, sum by (leader, le) (rate({M.x_produce_bucket}[5m])))", "leader {{leader}}")],
            unit="s")
    d.panel("Record delay p99 (kmf, ms)", [(M.kmf_delay_99th, "{{cluster}}")], unit="ms")
    d.row("Loss and duplicates")
    d.panel("Records lost (kmf total)", [(M.kmf_lost_total, "{{cluster}}")])
    d.panel("Records duplicated (kmf total)", [(M.kmf_duplicated_total, "{{cluster}}")])
    d.panel("Lost records per second by leader",
            [(f"sum by (leader) (rate({M.x_lost}[5m]))", "leader {{leader}}")], fault=True)
    return d


def consumer_lag() -> Board:
    d = Board("kafkascope-lag", "Consumer lag", "Burrow statuses, lag and lag in seconds per group and partition.")
    lag = f'job="{JOB_LAG}"'
    d.row("Groups")
    d.panel("Group status (0 NOTFOUND, 1 OK, 2 WARN, 3 ERR)",
            [(f"max by (consumer_group) ({M.burrow_status}{{{lag}}})", "{{consumer_group}}")], kind="table", w=8)
    d.panel("Total lag per group (to the log end, Burrow's)",
            [(f"sum by (consumer_group) ({M.burrow_lag_total})", "{{consumer_group}}")])
    d.panel("Total lag per group to the Last Stable Offset (what the status measures)",
            [(f"sum by (consumer_group) ({M.lso_lag_total})", "{{consumer_group}}")])
    d.panel("Lag seconds per group", [(f"max by (consumer_group) ({M.lag_seconds})", "{{consumer_group}}")],
            unit="s")
    d.row("Partitions")
    d.panel("Lag per partition",
            [(f"sum by (consumer_group, topic, partition) ({M.burrow_partition_lag})",
              "{{consumer_group}} {{topic}}-{{partition}}")], w=12)
    d.panel("Lag seconds per partition",
            [(f"max by (consumer_group, topic, partition) ({M.partition_lag_seconds})",
              "{{consumer_group}} {{topic}}-{{partition}}")], unit="s", w=12)
    d.panel("Partition status (Burrow)",
            [(f"max by (consumer_group, topic, partition) ({M.burrow_partition_status})",
              "{{consumer_group}} {{topic}}-{{partition}}")], kind="table", w=12)
    d.panel("kafka_exporter lag (compatibility)",
            [(f"sum by (consumergroup) ({M.consumergroup_lag_sum})", "{{consumergroup}}")], w=12)
    return d


def slo_budget() -> Board:
    d = Board("kafkascope-slo", "SLOs and error budget",
              "The five 14-day SLOs: error ratios per window, burn rates and budget left (recording rules from "
              "dashboards/build.py; objectives from slo/specs/default.yaml).")
    for s in slos():
        sel = f'{{slo="{s.name}"}}'
        d.row(f"{s.name}: {s.display} (target {s.target:g})")
        d.stat("Budget remaining (14d)", f"slo:period_error_budget_remaining:ratio{sel}", unit="percentunit",
               thresholds=[(None, "red"), (0.25, "orange"), (0.5, "green")])
        d.stat("Burn rate now (5m)", f"slo:current_burn_rate:ratio{sel}", unit="x",
               thresholds=[(None, "green"), (1, "orange"), (6, "red")])
        d.stat("Period burn rate (14d)", f"slo:period_burn_rate:ratio{sel}", unit="x",
               thresholds=[(None, "green"), (1, "red")])
        d.panel("Error ratio by window",
                [(f"slo:sli_error:ratio_rate{w}{sel}", w) for w in ("5m", "1h", "6h", "1d", "3d")],
                unit="percentunit", w=12)
    return d


def zookeeper() -> Board:
    d = Board("kafkascope-zookeeper", "ZooKeeper ensemble", "The ensemble Kafka depends on (mntr via the exporter).")
    z = f'job="{JOB_ZK}"'
    d.row("Health")
    d.stat("Servers answering", f"sum({M.zk_up}{{{z}}})", thresholds=[(None, "red"), (1, "green")])
    d.stat("Leader or standalone",
           f'sum({M.zk_leader}) + sum({M.zk_state}{{state="standalone"}})', thresholds=[(None, "red"), (1, "green"),
                                                                                        (2, "red")])
    d.panel("Server state", [(f"max by (zk_host, state) ({M.zk_state}) == 1", "{{zk_host}} {{state}}")],
            kind="table", w=8)
    d.panel("Ephemeral znodes (broker registrations, controller)",
            [(f"max by (zk_host) ({M.zk_ephemerals})", "{{zk_host}}")], w=8)
    d.row("Performance")
    d.panel("Request latency (ms)", [(f"max by (zk_host) ({M.zk_avg_latency})", "avg {{zk_host}}"),
                                     (f"max by (zk_host) ({M.zk_max_latency})", "max {{zk_host}}")], unit="ms")
    d.panel("Outstanding requests", [(f"max by (zk_host) ({M.zk_outstanding})", "{{zk_host}}")])
    d.panel("fsync time (ms, avg)", [(f"max by (zk_host) ({M.zk_fsync})", "{{zk_host}}")], unit="ms")
    d.panel("Packets received per second", [(f"sum by (zk_host) (rate({M.zk_packets_received}[5m]))",
                                             "{{zk_host}}")])
    d.row("Load")
    d.panel("Alive connections", [(f"max by (zk_host) ({M.zk_alive_connections})", "{{zk_host}}")])
    d.panel("znodes / watches", [(f"max by (zk_host) ({M.zk_znodes})", "znodes {{zk_host}}"),
                                 (f"max by (zk_host) ({M.zk_watches})", "watches {{zk_host}}")])
    d.panel("Kafka's ZooKeeper request latency p99 (s)",
            [(f"histogram_quantile(0.99, sum by (instance, le) (rate({M.zk_request_latency_bucket}[5m])))",
              "{{instance}}")], unit="s")
    d.panel("Broker ZooKeeper session expiries / disconnects",
            [(f"sum by (instance) (increase({M.zk_expires}[1h]))", "expires {{instance}}"),
             (f"sum by (instance) (increase({M.zk_disconnects}[1h]))", "disconnects {{instance}}")])
    return d


def host() -> Board:
    d = Board("kafkascope-host", "Hosts",
              "The machines under the brokers (Prometheus node exporter): CPU, memory, network, disk I/O latency "
              "and utilisation, space left where the log dirs live, and the broker processes' CPU and GC.")
    n, disks = metrics.NODE, metrics.DISKS
    cores = f'on(instance) group_left count by (instance) ({M.node_cpu}{{{n},mode="idle"}})'
    d.row("CPU and memory")
    d.panel("CPU busy", [(f'1 - avg by (instance) (rate({M.node_cpu}{{{n},mode="idle"}}[5m]))', "{{instance}}")],
            unit="percentunit")
    d.panel("CPU by mode (share of all cores)",
            [(f'sum by (instance, mode) (rate({M.node_cpu}{{{n},mode!="idle"}}[5m])) / {cores}',
              "{{mode}} {{instance}}")], unit="percentunit",
            description="iowait: cores idle while I/O they issued is outstanding; steal: taken by the hypervisor.")
    d.panel("Load (1m) per core", [(f"{M.node_load1}{{{n}}} / {cores}", "{{instance}}")])
    d.panel("Memory used (not available)",
            [(f"1 - {M.node_mem_available}{{{n}}} / {M.node_mem_total}{{{n}}}", "{{instance}}")],
            unit="percentunit")
    d.panel("Memory: total, available, page cache",
            [(f"{M.node_mem_total}{{{n}}}", "total {{instance}}"),
             (f"{M.node_mem_available}{{{n}}}", "available {{instance}}"),
             (f"{M.node_mem_cached}{{{n}}} + {M.node_mem_buffers}{{{n}}}", "cache+buffers {{instance}}")],
            unit="bytes", description="Consumers that keep up read from the page cache; a shrinking cache sends "
                                      "their fetches to disk.")
    d.panel("Major page faults per second", [(f"rate({M.node_major_faults}{{{n}}}[5m])", "{{instance}}")])
    d.row("Network")
    d.panel("Receive / transmit per device",
            [(f"sum by (instance, device) (rate({M.node_net_rx}{{{n}}}[5m]))", "rx {{device}} {{instance}}"),
             (f"sum by (instance, device) (rate({M.node_net_tx}{{{n}}}[5m]))", "tx {{device}} {{instance}}")],
            unit="Bps")
    d.panel("Errors and drops per second",
            [(f"sum by (instance, device) (rate({m}{{{n}}}[5m]))", f"{what} {{{{device}}}} {{{{instance}}}}")
             for m, what in ((M.node_net_rx_errs, "rx errors"), (M.node_net_tx_errs, "tx errors"),
                             (M.node_net_rx_drop, "rx drops"), (M.node_net_tx_drop, "tx drops"))])
    d.panel("TCP retransmitted segments per second", [(f"rate({M.node_tcp_retrans}{{{n}}}[5m])", "{{instance}}")])
    d.row("Disk I/O")
    d.panel("Read / write latency (average per I/O)",
            [(f"rate({M.node_disk_read_time}{{{disks}}}[5m]) / rate({M.node_disk_reads}{{{disks}}}[5m])",
              "read {{device}} {{instance}}"),
             (f"rate({M.node_disk_write_time}{{{disks}}}[5m]) / rate({M.node_disk_writes}{{{disks}}}[5m])",
              "write {{device}} {{instance}}")], unit="s",
            description="Time from issue to completion (queue included) over I/Os completed; no value while a disk "
                        "completes none.")
    d.panel("Utilisation (busy time)", [(f"rate({M.node_disk_io_time}{{{disks}}}[5m])", "{{device}} {{instance}}")],
            unit="percentunit", description="Share of time with I/O in flight (iostat %util).")
    d.panel("Average queue (aqu-sz)",
            [(f"rate({M.node_disk_io_weighted}{{{disks}}}[5m])", "{{device}} {{instance}}")],
            description="NodeDiskIOSaturation fires above 10 for 30 minutes.")
    d.panel("IOPS", [(f"rate({M.node_disk_reads}{{{disks}}}[5m])", "reads {{device}} {{instance}}"),
                     (f"rate({M.node_disk_writes}{{{disks}}}[5m])", "writes {{device}} {{instance}}")], unit="iops")
    d.panel("Throughput", [(f"rate({M.node_disk_read_bytes}{{{disks}}}[5m])", "read {{device}} {{instance}}"),
                           (f"rate({M.node_disk_written_bytes}{{{disks}}}[5m])", "written {{device}} {{instance}}")],
            unit="Bps")
    d.row("Filesystems")
    d.panel("Space left on log-dir filesystems", [(metrics.logdir_fs_free_ratio(), "{{mountpoint}} {{instance}}")],
            unit="percentunit", thresholds=[(None, "red"), (0.15, "orange"), (0.3, "green")],
            description=f"Filesystems holding a broker log dir ({M.logdir_mount_info}, written by kafkascope up into "
                        "the node exporter's textfile directory). KafkaRunningOutOfSpace fires under 15%.")
    d.panel("Bytes available on log-dir filesystems",
            [(f"{M.node_fs_avail}{{{n}}} and on(instance, mountpoint) {M.logdir_mount_info}",
              "{{mountpoint}} {{instance}}")], unit="bytes")
    d.panel("Log dirs and their filesystems",
            [(f"max by (instance, broker_id, logDir, mountpoint) ({M.logdir_mount_info})", "")], kind="table")
    d.panel("Space left, every writable non-pseudo filesystem",
            [(metrics.fs_free_ratio(metrics.REAL_FS), "{{mountpoint}} {{instance}}")], kind="table", w=24,
            unit="percentunit")
    d.row("Broker processes")
    d.panel("Broker CPU (cores)", [(f"rate({M.cpu}{{{B}}}[5m])", "{{instance}}")])
    d.panel("GC collections per second",
            [(f"sum by (instance, gc) (rate({M.gc_count}{{{B}}}[5m]))", "{{gc}} {{instance}}")])
    d.panel("GC time per second", [(f"sum by (instance) (rate({M.gc_pause}{{{B}}}[5m]))", "{{instance}}")],
            unit="s")
    return d


def kraft() -> Board:
    """KRaft clusters (Kafka 4): what Strimzi's KRaft dashboard shows of the Raft quorum, plus metadata propagation,
    fenced brokers and the new group coordinator. Every name is in metrics.KRAFT_ONLY."""
    d = Board("kafkascope-kraft", "KRaft controllers, metadata and group coordinator",
              "The Raft quorum of the controllers (kafka.server:type=raft-metrics), how fast brokers apply metadata "
              "(broker-metadata-metrics), fenced brokers and Kafka 4's group coordinator (KIP-848). KRaft only.")
    d.row("Quorum")
    d.stat("Active controllers", f"sum({M.active_controller})", thresholds=[(None, "red"), (1, "green"), (2, "red")],
           description="ActiveControllerCount summed over every node that reports it: exactly 1.")
    d.stat("Quorum leader (node id)", f"max({M.raft_leader})", thresholds=[(None, "red"), (0, "green")],
           description="-1 while the quorum has no leader.")
    d.stat("Quorum epoch", f"max({M.raft_epoch})")
    d.stat("Voters", f"max({M.raft_voters})")
    d.stat("Fenced brokers", f"max({M.fenced_brokers})", thresholds=RED,
           description="Registered brokers the controller fenced (missed heartbeats or shutting down).")
    d.stat("Active brokers", f"max({M.active_brokers})")
    d.panel("Raft state per node", [(f"max by (instance, current_state) ({M.raft_state}) == 1", "")], kind="table")
    d.panel("Quorum leader and epoch per node", [(f"max by (instance) ({M.raft_leader})", "leader {{instance}}"),
                                                 (f"max by (instance) ({M.raft_epoch})", "epoch {{instance}}")],
            description="Every node should name the same leader and epoch; a rising epoch is a leader election.")
    d.panel("Metadata log: high watermark and log end offset",
            [(f"max by (instance) ({M.raft_high_watermark})", "HW {{instance}}"),
             (f"max by (instance) ({M.raft_log_end_offset})", "LEO {{instance}}")])
    d.panel("Commit latency (ms)", [(f"max by (instance) ({M.raft_commit_latency_avg})", "avg {{instance}}"),
                                    (f"max by (instance) ({M.raft_commit_latency_max})", "max {{instance}}")],
            unit="ms")
    d.panel("Metadata records appended / fetched per second",
            [(f"sum by (instance) ({M.raft_append_rate})", "append {{instance}}"),
             (f"sum by (instance) ({M.raft_fetch_rate})", "fetch {{instance}}")])
    d.row("Metadata propagation")
    d.panel("Last applied metadata record lag (ms)", [(f"max by (instance) ({M.metadata_lag_ms})", "{{instance}}")],
            unit="ms", description="Age of the newest metadata record a broker has applied; the controller writes "
                                   "a record at least every metadata.max.idle.interval.ms, so it stays small.")
    d.panel("Metadata load / apply errors",
            [(f"sum by (instance) ({M.metadata_load_errors})", "load {{instance}}"),
             (f"sum by (instance) ({M.metadata_apply_errors})", "apply {{instance}}"),
             (f"sum by (instance) ({M.controller_metadata_errors})", "controller {{instance}}")])
    d.panel("Fenced and active brokers", [(f"max({M.fenced_brokers})", "fenced"),
                                          (f"max({M.active_brokers})", "active")])
    d.row("Group coordinator")
    d.panel("Groups by protocol", [(f"sum by (protocol) ({M.groups_by_protocol})", "{{protocol}}")],
            description="Kafka recounts the groups every 60 s (KAFKA-18655): a new group shows up to a minute late.")
    d.panel("Consumer-protocol groups by state",
            [(f"sum by (state) ({M.consumer_groups_by_state})", "{{state}}")])
    d.panel("Rebalances per second", [(f"sum({M.consumer_rebalance_rate})", "consumer protocol"),
                                      (f"sum({M.classic_rebalance_rate})", "classic (completed)")])
    return d


BOARDS = {"cluster-overview": cluster_overview, "request-latency": request_latency, "topics": topics,
          "xmonitor": xmonitor, "consumer-lag": consumer_lag, "slo": slo_budget, "zookeeper": zookeeper, "host": host,
          "kraft": kraft}


def dashboards() -> dict[str, dict]:
    QUERIES_NEEDING_FAULT.clear()
    return {name: f().json() for name, f in BOARDS.items()}


def queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expr) for every query of every dashboard."""
    out = []
    for name, board in dashboards().items():
        for p in board["panels"]:
            for t in p.get("targets", []):
                out.append((name, p["title"], t["expr"]))
    return out


def provisioning() -> dict[str, str]:
    return {
        "provisioning/datasources/kafkascope.yml":
            "# GENERATED by dashboards/build.py\napiVersion: 1\ndatasources:\n"
            f"  - name: Prometheus\n    uid: {DATASOURCE_UID}\n    type: prometheus\n    access: proxy\n"
            "    url: ${PROMETHEUS_URL:-http://127.0.0.1:9090}\n    isDefault: true\n",
        "provisioning/dashboards/kafkascope.yml":
            "# GENERATED by dashboards/build.py\napiVersion: 1\nproviders:\n"
            f"  - name: kafkascope\n    folder: {FOLDER}\n    type: file\n    disableDeletion: false\n"
            "    allowUiUpdates: false\n    updateIntervalSeconds: 30\n    options:\n"
            "      path: ${KAFKASCOPE_DASHBOARDS:-/var/lib/grafana/dashboards/kafkascope}\n"
            "      foldersFromFilesStructure: false\n",
    }


def push(url: str, token: str, folder: str = FOLDER, timeout: float = 10.0) -> list[str]:
    """Create/overwrite every dashboard in `folder` through Grafana's HTTP API (grafana-client). Returns uids."""
    from grafana_client import GrafanaApi
    from grafana_client.client import GrafanaClientError

    api = GrafanaApi.from_url(url, credential=token, timeout=timeout)
    uid = "kafkascope"
    try:
        api.folder.get_folder(uid)
    except GrafanaClientError as e:
        if getattr(e, "status_code", None) != 404:
            raise
        api.folder.create_folder(folder, uid=uid)
    done = []
    for board in dashboards().values():
        api.dashboard.update_dashboard({"dashboard": {**board, "id": None}, "folderUid": uid, "overwrite": True,
                                        "message": "kafkascope dashboards push"})
        done.append(board["uid"])
    return done
