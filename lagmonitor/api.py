"""Burrow v3 HTTP API (paths and JSON names of docs/lag-monitor.md §5) and `/metrics`, on 127.0.0.1."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from exporter.http import Response, serve_threaded, text_exposition
from exporter.web_config import WebConfig
from lagmonitor import topics as topic_series
from lagmonitor.monitor import LagMonitor
from lagmonitor.rules import ConsumerOffset, GroupStatus, PartitionStatus, Status
from lagmonitor.topics import ClusterMeta

HOST = socket.gethostname()


def offset_json(o: ConsumerOffset | None) -> dict | None:
    return None if o is None else {"offset": o.offset, "timestamp": o.timestamp, "observedAt": o.observed_at,
                                   "lag": o.lag}


def partition_json(p: PartitionStatus) -> dict:
    return {"topic": p.topic, "partition": p.partition, "owner": p.owner, "client_id": p.client_id,
            "status": p.status.name, "start": offset_json(p.start), "end": offset_json(p.end),
            "current_lag": p.current_lag, "complete": p.complete, "lag_seconds": p.lag_seconds, "lso_lag": p.lso_lag}


def group_json(g: GroupStatus) -> dict:
    return {"cluster": g.cluster, "group": g.group, "status": g.status.name, "complete": g.complete,
            "partitions": [partition_json(p) for p in g.partitions], "partition_count": g.partition_count,
            "maxlag": None if g.maxlag is None else partition_json(g.maxlag), "totallag": g.totallag,
            "lag_seconds": g.lag_seconds, "lso_totallag": g.lso_totallag}


def _labels(**kv) -> str:
    def esc(v):
        return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if not kv:
        return ""
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in kv.items()) + "}"


_HELP = {
    "burrow_kafka_consumer_status": "The status of a consumer group (NOTFOUND=0 OK=1 WARN=2 ERR=3)",
    "burrow_kafka_consumer_lag_total": "The sum of all partition current lags for the consumer group",
    "burrow_kafka_consumer_partition_lag": "The number of messages the consumer group is behind for a partition",
    "burrow_kafka_consumer_current_offset": "Latest committed offset for a partition (window complete only)",
    "burrow_kafka_topic_partition_status": "The status of a partition (window complete only)",
    "burrow_kafka_topic_partition_offset": "Latest broker offset for a partition",
    "kafka_consumergroup_lag": "Current approximate lag of a consumer group at topic/partition (kafka_exporter; "
                               "-1 without a committed offset)",
    "kafka_consumergroup_lag_sum": "Current approximate lag of a consumer group at topic for all partitions "
                                   "(kafka_exporter; partitions without a committed offset left out)",
    "kafka_consumergroup_members": "Amount of members in a consumer group (kafka_exporter; from its last group "
                                   "metadata record, or its member records for a consumer-protocol group)",
    "kafka_consumergroup_current_offset": "Current Offset of a ConsumerGroup at Topic/Partition (kafka_exporter; "
                                          "-1 without a committed offset)",
    "kafka_consumergroup_current_offset_sum": "Current Offset of a ConsumerGroup at Topic for all partitions "
                                              "(kafka_exporter; the -1 of a partition without one included)",
    **topic_series.HELP,
    "kafkascope_consumer_partition_lag_seconds": "Estimated seconds the group is behind on the partition",
    "kafkascope_consumer_lag_seconds": "Estimated seconds the group's worst partition is behind",
    "kafkascope_consumer_partition_lso_lag": "Records the group is behind the partition's Last Stable Offset "
                                             "(ListOffsets read_committed, KIP-98; the log end without transactions)",
    "kafkascope_consumer_lso_lag_total": "The sum of the group's partition lags to the Last Stable Offset (to the "
                                         "log end for a partition whose LSO is not known)",
}


def _kafka_exporter_lag(add: Callable[..., None], g: GroupStatus) -> None:
    """kafka_exporter's committed offset and lag per partition and per topic, on the topics the group has an offset
    for: -1 for a partition without one. The lag sum leaves those out; the offset sum adds their -1, as
    kafka_exporter's does."""
    by_topic: dict[str, list[PartitionStatus]] = {}
    for p in g.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    for topic, parts in by_topic.items():
        committed = [p for p in parts if p.end is not None]
        if not committed:
            continue   # kafka_exporter skips a topic whose offsets are all -1
        for p in parts:
            labels = {"consumergroup": g.group, "topic": topic, "partition": p.partition}
            add("kafka_consumergroup_current_offset", p.end.offset if p.end is not None else -1, **labels)
            add("kafka_consumergroup_lag", p.current_lag if p.end is not None else -1, **labels)
        add("kafka_consumergroup_current_offset_sum", sum(p.end.offset if p.end is not None else -1 for p in parts),
            consumergroup=g.group, topic=topic)
        add("kafka_consumergroup_lag_sum", sum(p.current_lag for p in committed), consumergroup=g.group, topic=topic)


def render_metrics(cluster: str, groups: list[GroupStatus], topics: dict[str, list[int]],
                   members: dict[str, int] | None = None, meta: ClusterMeta | None = None,
                   log_end: list[tuple[str, int, int]] | None = None,
                   skipped: dict[str, int] | None = None) -> str:
    """Prometheus text for evaluated groups (ShowAll), the latest broker offset per topic partition, the
    member count of every group with one known (`members`) or evaluated (0), and kafka_exporter's cluster and
    topic series from the metadata snapshot `meta` and the (topic, partition, log-end offset) list `log_end`."""
    series: dict[str, list[str]] = {name: [] for name in _HELP}
    members = members or {}

    def add(name, value, **labels):
        series[name].append(f"{name}{_labels(**labels)} {value}")

    for g in groups:
        gl = {"cluster": cluster, "consumer_group": g.group}
        add("burrow_kafka_consumer_status", int(g.status), **gl)
        add("burrow_kafka_consumer_lag_total", g.totallag, **gl)
        add("kafkascope_consumer_lso_lag_total", g.lso_totallag, **gl)
        if g.lag_seconds is not None:
            add("kafkascope_consumer_lag_seconds", g.lag_seconds, **gl)
        for p in g.partitions:
            pl = {**gl, "topic": p.topic, "partition": p.partition}
            add("burrow_kafka_consumer_partition_lag", p.current_lag, **pl)
            if p.lso_lag is not None:
                add("kafkascope_consumer_partition_lso_lag", p.lso_lag, **pl)
            if p.complete == 1.0:
                add("burrow_kafka_consumer_current_offset", p.end.offset, **pl)
                add("burrow_kafka_topic_partition_status", int(p.status), **pl)
            if p.lag_seconds is not None:
                add("kafkascope_consumer_partition_lag_seconds", p.lag_seconds, **pl)
        _kafka_exporter_lag(add, g)
    for group in sorted(set(members) | {g.group for g in groups}):
        add("kafka_consumergroup_members", members.get(group, 0), consumergroup=group)
    for topic in sorted(topics):
        for partition, offset in enumerate(topics[topic]):
            add("burrow_kafka_topic_partition_offset", offset, cluster=cluster, topic=topic, partition=partition)
    topic_series.render(add, meta, log_end or [])
    out = []
    for name, lines in series.items():
        out += [f"# HELP {name} {_HELP[name]}", f"# TYPE {name} gauge", *lines]
    # Records the decoder skipped (share/streams groups, other protocols, unknown record types of a newer Kafka).
    out += ["# HELP kafkascope_lag_records_skipped_total __consumer_offsets records skipped, by reason",
            "# TYPE kafkascope_lag_records_skipped_total counter",
            *(f"kafkascope_lag_records_skipped_total{_labels(reason=r)} {n}" for r, n in sorted((skipped or {}).items()))]
    return "\n".join(out) + "\n"


class LagAPI:
    """Routes a request to (http status, body) against the monitor; `now_ms` is the clock."""

    def __init__(self, monitor: LagMonitor, now_ms: Callable[[], int]) -> None:
        self.monitor = monitor
        self.now_ms = now_ms
        self.cluster = monitor.config.cluster

    def _ok(self, url: str, message: str, **result) -> tuple[int, dict]:
        return 200, {"error": False, "message": message, **result, "request": {"url": url, "host": HOST}}

    def _error(self, url: str, code: int, message: str) -> tuple[int, dict]:
        return code, {"error": True, "message": message, "request": {"url": url, "host": HOST}}

    def metrics(self) -> str:
        m, now = self.monitor, self.now_ms()
        with m.lock:
            groups = [g for g in (m.evaluator.group(name, now) for name in sorted(m.storage.groups))
                      if g.status is not Status.NOTFOUND]
            topics = {t: m.storage.topic_offsets(t) for t in m.storage.broker}
            members = dict(m.storage.members)
            log_end = [(t, p, d[-1][0]) for t in sorted(m.storage.broker)
                       for p, d in enumerate(m.storage.broker[t]) if d]
            meta = m.cluster_meta
            skipped = dict(m.skipped)
        return render_metrics(self.cluster, groups, topics, members, meta, log_end, skipped)

    def handle(self, method: str, url: str) -> tuple[int, dict]:
        path = url.split("?", 1)[0].rstrip("/")
        m, now = self.monitor, self.now_ms()
        if method == "GET" and path == "/v3/kafka":
            return self._ok(url, "cluster list returned", clusters=[self.cluster])
        match = re.fullmatch(r"/v3/kafka/([^/]+)(/.*)?", path)
        if not match:
            return 404, {"error": True, "message": "invalid request type", "result": {}}
        if match.group(1) != self.cluster:
            return self._error(url, 404, "cluster not found")
        rest = (match.group(2) or "").split("/")[1:]
        cfg = m.config.collector
        with m.lock:
            if method == "DELETE" and len(rest) in (2, 4) and rest[0] == "consumer" and rest[2:3] in ([], ["topic"]):
                m.delete_group(rest[1], now, rest[3] if len(rest) == 4 else None)
                return self._ok(url, "consumer group removed")
            if method != "GET":
                return 404, {"error": True, "message": "invalid request type", "result": {}}
            if not rest:
                return self._ok(url, "cluster module detail returned", module={
                    "class-name": "kafka", "servers": [], "client-profile": {
                        "name": "", "client-id": f"kafkascope-lag-{self.cluster}", "kafka-version": "", "tls": None,
                        "sasl": None}, "topic-refresh": cfg.topic_refresh_s, "offset-refresh": cfg.offset_refresh_s})
            if rest == ["topic"]:
                return self._ok(url, "topic list returned", topics=sorted(m.storage.broker))
            if rest[0] == "topic" and len(rest) in (2, 3):
                offsets = m.storage.topic_offsets(rest[1])
                if offsets is None:
                    return self._error(url, 404, "topic not found")
                if len(rest) == 3 and rest[2] == "consumers":
                    return self._ok(url, "consumers of topic returned", consumers=m.storage.consumers_of(rest[1]))
                if len(rest) == 2:
                    return self._ok(url, "topic offsets returned", offsets=offsets)
            if rest == ["consumer"]:
                return self._ok(url, "consumer list returned", consumers=sorted(m.storage.groups))
            if rest[0] == "consumer" and len(rest) == 2:
                views = m.storage.fetch_group(rest[1], now)
                if views is None:
                    return self._error(url, 404, "cluster or consumer not found")
                topics: dict[str, list] = {}
                for v in views:
                    topics.setdefault(v.topic, []).append({"offsets": [offset_json(o) for o in v.offsets],
                                                           "owner": v.owner, "client_id": v.client_id,
                                                           "current-lag": v.current_lag, "lso-lag": v.lso_lag})
                return self._ok(url, "consumer detail returned", topics=topics)
            if rest[0] == "consumer" and len(rest) == 3 and rest[2] in ("status", "lag"):
                g = m.evaluator.group(rest[1], now, show_all=rest[2] == "lag")
                code = 404 if g.status is Status.NOTFOUND else 200
                return code, self._ok(url, "consumer status returned", status=group_json(g))[1]
        return 404, {"error": True, "message": "invalid request type", "result": {}}


def serve(api: LagAPI, port: int, web_config: WebConfig | None = None) -> ThreadingHTTPServer:
    """Start the HTTP server on 127.0.0.1:port (0 = any free port) in a daemon thread: /metrics and the Burrow API
    (`web_config`: TLS and basic auth for both, exporter.web_config)."""
    def burrow(method: str, url: str) -> Response:
        if method == "GET" and url.split("?")[0] == "/burrow/admin":
            return 200, b"GOOD", "text/plain"
        code, body = api.handle(method, url)
        return code, json.dumps(body).encode(), "application/json"

    return serve_threaded(text_exposition(api.metrics), "127.0.0.1", port, other=burrow, name="lag-http",
                          web_config=web_config)
