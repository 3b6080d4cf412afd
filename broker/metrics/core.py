"""BrokerMetrics: the broker's one metrics object. It owns the registry, composes the per-concern parts
(requests, topics, replicas, cluster, runtime), takes the recordings the edges make and serves /metrics.

It is the server's RequestObserver (broker/observer.py) and reads other components only through their public
methods; the broker hands it the hooks it needs (``Broker._observe``)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from broker.config import parse_listeners
from broker.event_loop import IdleTimingSelector, idle_timer
from broker.metrics.clients import UNKNOWN_CLIENT, ConnectionsByClient, client_information, is_deprecated
from broker.metrics.cluster import ClusterMetrics
from broker.metrics.groups import GroupCoordinatorMetrics
from broker.metrics.jvm import jvm_families
from broker.metrics.logs import define_log_gauges
from broker.metrics.replicas import FetcherManagerView, FetcherMetrics, ReplicaGauges, ReplicaView
from broker.metrics.requests import API_NAMES, FETCH, RequestGroup, count_errors
from broker.metrics.runtime import GcStats, free_bytes, proc_io
from broker.metrics.topics import TopicMetrics, TopicStats
from broker.metrics.transactions import TransactionCoordinatorMetrics
from broker.observer import RequestTiming
from exporter.registry import MetricName, Registry, SampledRate

if TYPE_CHECKING:
    from broker.broker import Broker
    from exporter.http import MetricsHTTPServer

log = logging.getLogger(__name__)

DELAYED_OPERATIONS = ("Produce", "Fetch")
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
BROKER_STATE_RUNNING = 3
API_VERSIONS = 18


class _SocketServerTags(TypedDict):
    listener: str
    networkProcessor: str


class _ClientTags(TypedDict):
    clientSoftwareName: str
    clientSoftwareVersion: str
    listener: str
    networkProcessor: str


class ClientConnection:
    """One connection as the metrics see it: its KIP-511 client software, and the requests it sends."""

    __slots__ = ("client", "_metrics")

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.client = UNKNOWN_CLIENT  # (software name, version) until a valid ApiVersions v3+ says more
        self._metrics = metrics

    def request_done(self, timing: RequestTiming) -> None:
        self._metrics.request_done(self, timing)

    def closed(self) -> None:
        self._metrics.connection_closed(self)


class BrokerMetrics:
    """`api_keys`: the APIs the broker serves, whose request metrics exist from the start (as Kafka's)."""

    def __init__(self, broker: Broker, api_keys: Iterable[int], registry: Registry | None = None) -> None:
        self.broker = broker
        self.registry = reg = registry or Registry(broker.clock)
        self._loop_idle = reg.meter("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent",
                                    scale=1e-9)
        self._listener = broker.config.listener.name or "PLAINTEXT"
        # Kafka marks it with the acceptor's blocked nanoseconds, rate unit ns: its rates read as a 0..1 share.
        # One per listener, each there from the start.
        self._acceptor_blocked = {
            name: reg.meter("kafka.network", "Acceptor", "AcceptorBlockedPercent", scale=1e-9, listener=name)
            for name in [lst.name for lst in parse_listeners(broker.config.listeners, "listeners")] or [self._listener]}
        self._clients = ConnectionsByClient(self._add_client_gauge, self._remove_client_gauge)
        self.topics = TopicMetrics(reg)
        self._groups: dict[int, RequestGroup] = {}
        for key in sorted(api_keys):
            self._group(key)
        self.fetch_consumer = RequestGroup(reg, "FetchConsumer")
        self.fetch_follower = RequestGroup(reg, "FetchFollower")
        # Replication: marked by the cluster code; standalone they stay at zero.
        self.isr_shrinks = reg.meter("kafka.server", "ReplicaManager", "IsrShrinksPerSec")
        self.isr_expands = reg.meter("kafka.server", "ReplicaManager", "IsrExpandsPerSec")
        self.failed_isr_updates = reg.meter("kafka.server", "ReplicaManager", "FailedIsrUpdatesPerSec")
        self.cluster = ClusterMetrics(reg, broker.clustered, self._post)
        self.replica_gauges = ReplicaGauges(reg, broker, reg.clock.monotonic)
        self._fetchers: FetcherManagerView | None = None
        self.fetcher_metrics = FetcherMetrics(reg, self._active_fetchers)
        self.group_coordinator_metrics = GroupCoordinatorMetrics(reg, broker.group_coordinator)   # KIP-848
        self.txn_coordinator_metrics = TransactionCoordinatorMetrics(reg, broker.txn_coordinator)   # KIP-98
        self._conn_created = SampledRate(reg.clock)
        self._conn_closed = SampledRate(reg.clock)
        self._auth: dict[tuple[str, str], SampledRate] = {}  # (listener, successful|failed)
        self._gc = GcStats()
        self._define_gauges()
        self._http: MetricsHTTPServer | None = None
        self._tick_task: asyncio.Task | None = None
        self._hdr_writers: dict[str, Any] = {}
        self._wall_offset = time.time() - reg.clock.monotonic()
        self._idle_timer: IdleTimingSelector | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------ definitions

    def _group(self, api_key: int) -> RequestGroup:
        g = self._groups.get(api_key)
        if g is None:
            g = self._groups[api_key] = RequestGroup(self.registry, API_NAMES.get(api_key, f"Unknown{api_key}"))
        return g

    def topic(self, topic: str) -> TopicStats:
        return self.topics.topic(topic)

    @property
    def replica_view(self) -> ReplicaView:
        return self.replica_gauges.view

    def set_replica_view(self, view: ReplicaView) -> None:
        self.replica_gauges.set_view(view)

    def _define_gauges(self) -> None:
        reg, b = self.registry, self.broker
        define_log_gauges(reg, b.logs.logs)
        for op in DELAYED_OPERATIONS:
            def watched(op: str = op) -> float:
                return b.purgatory.watched(op)

            def delayed(op: str = op) -> float:
                return b.purgatory.delayed(op)
            reg.gauge("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", watched, delayedOperation=op)
            reg.gauge("kafka.server", "DelayedOperationPurgatory", "NumDelayedOperations", delayed,
                      delayedOperation=op)
        cg = ("kafka.coordinator.group", "GroupMetadataManager")
        coordinator = b.group_coordinator
        reg.gauge(*cg, "NumOffsets", coordinator.num_offsets)
        reg.gauge(*cg, "NumGroups", lambda: sum(coordinator.group_state_counts().values()))
        for st in GROUP_STATES:
            def groups_in(st: str = st) -> float:
                return coordinator.group_state_counts().get(st, 0)
            reg.gauge(*cg, f"NumGroups{st}", groups_in)
        reg.gauge("kafka.network", "RequestChannel", "RequestQueueSize", lambda: b.server.request_queue_size)
        reg.gauge("kafka.network", "RequestChannel", "ResponseQueueSize", lambda: b.server.response_queue_size)
        reg.gauge("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent",
                  lambda: min(1.0, self._loop_idle.one_minute_rate))
        ssm: _SocketServerTags = dict(listener=self._listener, networkProcessor="0")
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-count",
                         lambda: b.server.connection_count, **ssm)
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-creation-rate",
                         lambda: self._conn_created.rate, **ssm)
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-creation-total",
                         lambda: self._conn_created.total, counter=True, **ssm)
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-close-rate",
                         lambda: self._conn_closed.rate, **ssm)
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-close-total",
                         lambda: self._conn_closed.total, counter=True, **ssm)
        ks = ("kafka.server", "KafkaServer")
        reg.gauge(*ks, "BrokerState", lambda: BROKER_STATE_RUNNING)
        reg.gauge(*ks, "linux-disk-read-bytes", lambda: proc_io().get("read_bytes", 0))
        reg.gauge(*ks, "linux-disk-write-bytes", lambda: proc_io().get("write_bytes", 0))
        dirs = b.config.log_dir_list
        offline = b.logs.failures   # a failed write took it offline (cluster), or it cannot be written at all
        reg.gauge("kafka.log", "LogManager", "OfflineLogDirectoryCount",
                  lambda: sum(offline.is_offline(d) or not os.access(d, os.W_OK) for d in dirs))
        reg.gauge_family("kafkascope.log", "LogDir", "FreeBytes",
                         lambda: (((("logDir", str(d)),), free_bytes(d)) for d in dirs))
        reg.raw(self._gc.families)
        reg.raw(jvm_families)

    def watch_fetchers(self, fetchers: FetcherManagerView) -> None:
        """The replica fetcher manager, read for MaxLag and MinFetchRate."""
        self._fetchers = fetchers
        self.replica_gauges.watch_fetchers(fetchers)

    def _active_fetchers(self) -> list:
        return self._fetchers.active() if self._fetchers is not None else []

    def on_replication_bytes_in(self, topic: str, partition: int, nbytes: int) -> None:
        """A replica fetcher appended `nbytes` as follower (ReplicationBytesInPerSec; ReassignmentBytesInPerSec
        too while a reassignment is adding this broker's replica)."""
        self.topics.replication_bytes_in.mark(nbytes)
        if self.broker.node_id in self.broker.metadata.adding_replicas(topic, partition):
            self.topics.reassignment_bytes_in.mark(nbytes)

    def isr_changed(self, shrink: bool) -> None:
        (self.isr_shrinks if shrink else self.isr_expands).mark()

    # ------------------------------------------------------------ recording (called from the edges)

    def connection_opened(self) -> ClientConnection:
        """A new connection, counted as an unknown client until ApiVersions v3+ says more."""
        c = ClientConnection(self)
        self._conn_created.record()
        self._clients.increment(c.client)
        return c

    def watch_authentication(self, listeners: list[str]) -> None:
        """socket-server-metrics' {successful,failed}-authentication-{total,rate} for each secured listener."""
        for listener in dict.fromkeys([self._listener, *listeners]):   # each listener its own connection-count
            def connections(lst: str = listener) -> float:
                return self.broker.server.listener_connection_count(lst)
            self.registry.kafka_metric("kafka.server", "socket-server-metrics", "connection-count", connections,
                                       listener=listener, networkProcessor="0")
        for listener in listeners:
            ssm: _SocketServerTags = dict(listener=listener, networkProcessor="0")
            for outcome in ("successful", "failed"):
                rate = self._auth.setdefault((listener, outcome), SampledRate(self.registry.clock))

                def rate_of(r: SampledRate = rate) -> float:
                    return r.rate

                def total_of(r: SampledRate = rate) -> float:
                    return r.total
                self.registry.kafka_metric("kafka.server", "socket-server-metrics", f"{outcome}-authentication-rate",
                                           rate_of, **ssm)
                self.registry.kafka_metric("kafka.server", "socket-server-metrics", f"{outcome}-authentication-total",
                                           total_of, counter=True, **ssm)

    def watch_certificates(self, not_after: dict[str, Callable[[], float | None]]) -> None:
        """kafkascope.network:type=TlsCertificate,name=NotAfterSeconds,listener=<l> (Kafka has no such MBean);
        NaN while a listener's certificate cannot be read."""
        for listener, when in not_after.items():
            def not_after_of(read: Callable[[], float | None] = when) -> float:
                value = read()
                return math.nan if value is None else value
            self.registry.gauge("kafkascope.network", "TlsCertificate", "NotAfterSeconds", not_after_of,
                                listener=listener)

    def authentication(self, listener: str, success: bool) -> None:
        rate = self._auth.get((listener, "successful" if success else "failed"))
        if rate is not None:
            rate.record()

    def connection_closed(self, c: ClientConnection) -> None:
        self._clients.decrement(c.client)
        self._conn_closed.record()

    def _client_software(self, s: ClientConnection, body: Any) -> None:
        """KIP-511: a valid ApiVersions v3+ names the connection's client software (Kafka's SocketServer)."""
        info = client_information(getattr(body, "client_software_name", None),
                                  getattr(body, "client_software_version", None))
        if info is not None and info != s.client:
            self._clients.decrement(s.client)
            s.client = info
            self._clients.increment(info)

    def _add_client_gauge(self, key: tuple[str, str]) -> None:
        self.registry.kafka_metric("kafka.server", "socket-server-metrics", "connections",
                                   lambda: self._clients.value(key), **self._client_tags(key))

    def _remove_client_gauge(self, key: tuple[str, str]) -> None:
        self.registry.remove(MetricName.of("kafka.server", "socket-server-metrics", "connections",
                                           **self._client_tags(key)))

    def _client_tags(self, key: tuple[str, str]) -> _ClientTags:
        return dict(clientSoftwareName=key[0], clientSoftwareVersion=key[1], listener=self._listener,
                    networkProcessor="0")

    def acceptor_blocked(self, ns: int, listener: str) -> None:
        """A listener's acceptor waited `ns` (a connection creation rate, or max.connections)."""
        meter = self._acceptor_blocked.get(listener)
        if meter is not None:
            meter.mark(ns)

    def request_done(self, s: ClientConnection, timing: RequestTiming) -> None:
        """One served request of connection `s`: stamps t0 (read) .. t4 (written), in seconds."""
        t0, t3, t4 = timing.t0, timing.t3, timing.t4
        t1, t2 = timing.t1 or t0, timing.t2 or t0
        remote = timing.remote_s
        queue, local, respq, send, total = (t1 - t0) * 1e3, (t2 - t1 - remote) * 1e3, (t3 - t2) * 1e3, \
            (t4 - t3) * 1e3, (t4 - t0) * 1e3
        remote *= 1e3
        api_key, version = timing.api_key, timing.version
        if api_key == API_VERSIONS and version >= 3:
            self._client_software(s, timing.body)
        g = self._groups.get(api_key) or self._group(api_key)
        throttle = float(timing.throttle_ms)
        g.record(version, queue, local, remote, respq, send, total, throttle)
        deprecated = is_deprecated(api_key, version)
        if deprecated:
            g.deprecated(version, s.client)
        if api_key == FETCH:
            split = self.fetch_follower if getattr(timing.body, "replica_id", -1) >= 0 else self.fetch_consumer
            split.record(version, queue, local, remote, respq, send, total, throttle)
            if deprecated:
                split.deprecated(version, s.client)
        result = timing.result
        if result is not None:
            errors: dict[int, int] = {}
            count_errors(result, errors)
            for code, n in errors.items():
                g.error(code, n)

    def request_failed(self, api_key: int, code: int) -> None:
        """A request answered by closing the connection (unsupported version, invalid request, handler failure)."""
        self._group(api_key).error(code)

    def produced(self, topic: str, nbytes: int, nrecords: int, converted: int = 0) -> None:
        self.topics.produced(topic, nbytes, nrecords, converted)

    def produce_failed(self, topic: str, code: int, nbytes: int) -> None:
        self.topics.produce_failed(topic, code, nbytes)

    def fetched(self, topics: list[dict], follower_id: int = -1) -> None:
        """A Fetch answer's partitions, for a consumer (-1) or a follower."""
        if follower_id < 0:
            self.topics.fetched(topics, False)
        else:
            adding = self.broker.metadata.adding_replicas
            self.topics.fetched(topics, True, lambda t, p: follower_id in adding(t, p))

    def fetched_unchanged(self, partitions_per_topic: Mapping[str, int]) -> None:
        """Partitions a follower's fetch read without news (left out of its incremental answer)."""
        self.topics.fetched_unchanged(partitions_per_topic)

    # ------------------------------------------------------------ lifecycle

    def _post(self, fn, *args: object) -> None:
        """Record on the event loop from another thread (controller, kazoo)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # loop closing
                pass

    async def start(self) -> None:
        cfg = self.broker.config
        self._gc.install()
        self._loop = asyncio.get_running_loop()
        self._idle_timer = idle_timer(self._loop)
        if self._idle_timer is not None:
            self._idle_timer.add_listener(self._loop_idle.mark)
        else:
            log.info("event loop not made by broker.event_loop.new_event_loop: idle metrics will read 0")
        if cfg.prometheus_listener:
            from exporter.collector import build_prometheus_registry, render, render_steps
            from exporter.http import MetricsHTTPServer
            from exporter.web_config import load as load_web_config

            host, _, port = cfg.prometheus_listener.rpartition(":")
            prom = build_prometheus_registry(self.registry, cfg.prometheus_naming)
            web = load_web_config(cfg.prometheus_web_config_file) if cfg.prometheus_web_config_file else None
            self._http = MetricsHTTPServer(lambda: render(prom), host or "127.0.0.1", int(port), web_config=web,
                                           render_steps=lambda: render_steps(prom))
            bound = await self._http.start()
            scheme = "https" if web is not None and web.tls is not None else "http"
            log.info("prometheus metrics on %s://%s:%d/metrics (%s naming%s)", scheme, host or "127.0.0.1", bound,
                     cfg.prometheus_naming, ", basic auth" if web is not None and web.users else "")
        if cfg.hdr_log_dir:
            self.registry.on_interval(self._write_hdr_logs)
        self._tick_task = asyncio.create_task(self._tick_loop(), name="metrics-tick")

    @property
    def http_port(self) -> int | None:
        return self._http.port if self._http is not None else None

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            try:
                for _ in self.registry.tick_steps():
                    await asyncio.sleep(0)   # requests are served between the timers
            except Exception:
                log.exception("metrics tick failed")

    def _write_hdr_logs(self, start: float, end: float) -> None:
        from exporter.hdrlog import IntervalLogWriter

        directory = Path(self.broker.config.hdr_log_dir)
        for g in (*self._groups.values(), self.fetch_consumer, self.fetch_follower):
            total = g.timers[-1]
            if not total.count:
                continue
            w = self._hdr_writers.get(g.name)
            if w is None:
                w = self._hdr_writers[g.name] = IntervalLogWriter(
                    directory, f"broker-{self.broker.node_id}.{g.name}.TotalTimeMs", start + self._wall_offset)
            w.write(total.last_completed, start + self._wall_offset, end + self._wall_offset)

    async def stop(self) -> None:
        if self._tick_task is not None:
            self._tick_task.cancel()
            await asyncio.gather(self._tick_task, return_exceptions=True)
        if self._http is not None:
            await self._http.stop()
        self._gc.uninstall()
        if self._idle_timer is not None:
            self._idle_timer.remove_listener(self._loop_idle.mark)
        for w in self._hdr_writers.values():
            w.close()
