"""Every broker metric, defined in one place, with Kafka's MBean names (kafka_metrics.md §3).

How each value is computed (the asyncio analogues are marked *analogue*):

Request path (``kafka.network:type=RequestMetrics,request=R``; R = Kafka's ApiKeys name, plus FetchConsumer /
FetchFollower, which a Fetch updates *in addition to* Fetch, as Kafka does). Per request, from perf_counter stamps
taken in ``broker/server.py``: t0 the frame is fully read, t1 the handler starts, t2 the handler returns, t3 the
response is encoded, t4 the last byte is handed to the kernel.
* RequestQueueTimeMs = t1 - t0 (*analogue*: no handler pool queue; header parse + context, i.e. time before the
  handler runs). LocalTimeMs = t2 - t1 - remote. RemoteTimeMs = time parked in the purgatory (Fetch long-poll;
  acks=all waits once replication exists). ResponseQueueTimeMs = t3 - t2 (*analogue*: response encoding).
  ResponseSendTimeMs = t4 - t3. TotalTimeMs = t4 - t0. All HDR timers (exporter.timer): 60 s window quantiles,
  cumulative count, and a ``..._seconds`` classic histogram.
* RequestsPerSec{request,version}: meter marked once per request. ErrorsPerSec{request,error}: every
  ``error_code`` field in the response body (top level and per topic/partition, as Kafka's ``errorCounts``),
  marked by its count, error = the Errors enum name (NONE included); requests the broker cannot parse or serve
  (the connection is closed) count once under their error: UNSUPPORTED_VERSION, INVALID_REQUEST for a frame
  that does not match its schema or breaks a rule of its version, UNKNOWN_SERVER_ERROR for a handler failure.
* RequestChannel RequestQueueSize (*analogue*): requests read and not yet answered (being handled, incl. parked
  in the purgatory); ResponseQueueSize: encoded responses still being written to a slow socket.
* NetworkProcessorAvgIdlePercent / RequestHandlerAvgIdlePercent (*analogue*): one event loop is both the network
  processor and the handler pool, so both measure the share of wall time the loop spends blocked in
  ``selector.select()`` (idle). RequestHandlerAvgIdlePercent is a meter marked with idle nanoseconds and a
  nanosecond rate unit (as Kafka), so MeanRate/OneMinuteRate read as a 0..1 fraction;
  NetworkProcessorAvgIdlePercent is a gauge of the same meter's OneMinuteRate.
* socket-server-metrics{listener,networkProcessor="0"}: connection-count (live), connection-creation/close-rate
  (Kafka's Rate: 2 × 30 s samples) and -total.

Topic throughput (``kafka.server:type=BrokerTopicMetrics[,topic=T]``; per topic created on first event, topics that
exist only): MessagesInPerSec (record count from the batch header of each appended batch, duplicates excluded),
BytesInPerSec (appended batch bytes), BytesOutPerSec (consumer-fetch record bytes returned; follower fetches go to
ReplicationBytesOutPerSec), BytesRejectedPerSec (batch bytes refused as too large or corrupt),
Total/FailedProduceRequestsPerSec and Total/FailedFetchRequestsPerSec (per partition in the request, as
ReplicaManager; "failed" excludes the errors Kafka does not count as failures: unknown partition, not leader,
too large, corrupt, storage).

Purgatory (``DelayedOperationPurgatory,delayedOperation=Produce|Fetch``): PurgatorySize = watch entries (an
operation watched on N partitions counts N), NumDelayedOperations = operations waiting.

Replication and controller: gauges over a :class:`ReplicaView`; standalone the ISR is this broker alone, the
broker is the active controller, no elections or ISR changes happen. The cluster implementation replaces the view
(``set_replica_view``) and marks ``isr_shrinks``/``isr_expands``/``unclean_elections``/``leader_election``.
Partition/leader counts, UnderReplicated (isr < replicas), UnderMinIsr (isr < min.insync.replicas), AtMinIsr
(isr == min.insync.replicas: with RF 1 and min ISR 1 that is every partition, as in Kafka), OfflinePartitionsCount
(no leader), PreferredReplicaImbalanceCount (leader is not the preferred replica), per-partition
``kafka.cluster:type=Partition`` gauges, ReplicaFetcherManager MaxLag.

Cluster mode only (a standalone broker has no honest values for these, so they are not defined there):
* LeaderElectionRateAndTimeMs (timer, ms) and UncleanLeaderElectionsPerSec (meter): the controller thread calls
  ``Controller.on_leader_election(ms, unclean)`` for every leader it elects (a dead or shutting-down leader
  replaced, a new partition's first leader, preferred-leader and reassignment moves); ms = from the start of
  that partition's decision to its fenced ZooKeeper write. The call is handed to the event loop
  (``call_soon_threadsafe``), so only the active controller's counts move, as in Kafka. (Kafka's ZK
  controller times whole BrokerChange events under this name; ours times each partition's election.)
* ReplicationBytesInPerSec: bytes of every batch a replica fetcher appends as follower
  (``ReplicaFetcherManager.on_bytes_in``); ReplicationBytesOutPerSec is the leader side (follower fetches).
* ZooKeeper client (``kafka.server:type=SessionExpireListener``): ZooKeeperSyncConnectsPerSec,
  ZooKeeperDisconnectsPerSec and ZooKeeperExpiresPerSec are marked on kazoo's CONNECTED, SUSPENDED and LOST
  transitions (a connection-state listener); SessionState is Kafka's string gauge made numeric as a state set,
  ``SessionState{state=S}`` = 1 for kazoo's current client state S (CONNECTED, CONNECTING, CONNECTED_RO,
  EXPIRED_SESSION, AUTH_FAILED, CLOSED), 0 for the others. ``ZooKeeperClientMetrics`` ZooKeeperRequestLatencyMs
  (timer, ms): every request kazoo queues (``KazooClient._call``), from queueing to its result.

Logs (``kafka.log:type=Log,topic,partition``): Size, LogEndOffset, LogStartOffset, NumLogSegments read at scrape.
Group coordinator: NumGroups and NumGroups<State>. Process: linux-disk-read/write-bytes (/proc/self/io),
free bytes per log dir, OfflineLogDirectoryCount (dirs not writable), BrokerState (3 = RUNNING),
``process_*`` (CPU, open fds, memory; prometheus-client's process collector), Python GC collections and pause time
per generation (``gc.callbacks``) as ``python_gc_pause_seconds{generation}`` and, for the JVM GC panels,
``jvm_gc_collection_seconds{gc="python-gen<N>"}``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from broker.errors import ErrorCode
from exporter.registry import Meter, RawFamily, RawSample, Registry, SampledRate

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
    6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator",
    11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords",
    22: "InitProducerId", 23: "OffsetForLeaderEpoch", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn",
    26: "EndTxn", 27: "WriteTxnMarkers", 28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls",
    31: "DeleteAcls", 32: "DescribeConfigs", 33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35: "DescribeLogDirs",
    36: "SaslAuthenticate", 37: "CreatePartitions", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders",
    44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas", 50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials", 52: "Vote", 53: "BeginQuorumEpoch", 54: "EndQuorumEpoch", 55: "DescribeQuorum",
    56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope", 59: "FetchSnapshot", 60: "DescribeCluster",
    61: "DescribeProducers", 62: "BrokerRegistration", 63: "BrokerHeartbeat", 64: "UnregisterBroker",
    65: "DescribeTransactions", 66: "ListTransactions", 67: "AllocateProducerIds", 68: "ConsumerGroupHeartbeat",
}
FETCH = 1
REQUEST_TIMERS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
                  "ResponseSendTimeMs", "TotalTimeMs")
TOPIC_METERS = ("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec", "BytesRejectedPerSec",
                "TotalProduceRequestsPerSec", "FailedProduceRequestsPerSec", "TotalFetchRequestsPerSec",
                "FailedFetchRequestsPerSec")
DELAYED_OPERATIONS = ("Produce", "Fetch")
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
BROKER_STATE_RUNNING = 3
# ReplicaManager does not count these as failed produce/fetch requests.
_NOT_FAILURES = frozenset({ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
                           ErrorCode.message_too_large, ErrorCode.record_list_too_large,
                           ErrorCode.corrupt_message, ErrorCode.kafka_storage_error})
_REJECTED = frozenset({ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.corrupt_message,
                       ErrorCode.invalid_record})


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_{code}"


def count_errors(body: Any, out: dict[int, int]) -> None:
    """Add every ``error_code`` in a response body (dicts and lists of dicts) to `out`."""
    if type(body) is not dict:
        return
    ec = body.get("error_code")
    if ec is not None:
        out[ec] = out.get(ec, 0) + 1
    for v in body.values():
        if type(v) is list:
            for item in v:
                if type(item) is dict:
                    count_errors(item, out)


# ---------------------------------------------------------------- replication seam


@dataclass(frozen=True, slots=True)
class PartitionStats:
    topic: str
    partition: int
    replicas: int
    isr: int
    min_isr: int
    has_leader: bool
    is_local_leader: bool
    preferred_is_leader: bool


class ReplicaView(Protocol):
    """What the replication metrics read; the cluster code supplies its own implementation."""

    def partition_states(self) -> Iterable[PartitionStats]: ...

    def is_active_controller(self) -> bool: ...

    def max_lag(self) -> int: ...


class BrokerReplicaView:
    """Reads the metadata store's partition states (the whole cluster as this broker sees it) and the
    replica fetchers; the same code serves standalone and cluster mode."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def partition_states(self) -> Iterable[PartitionStats]:
        b = self._broker
        me = b.node_id
        for name, info in b.metadata.topics().items():
            min_isr = b.log_config(name).min_insync_replicas
            for p in range(info.partitions):
                st = b.metadata.partition_state(name, p)
                if st is None:
                    continue
                yield PartitionStats(name, p, len(st.replicas), len(st.isr), min_isr, st.online,
                                     st.leader == me, bool(st.replicas) and st.replicas[0] == st.leader)

    def is_active_controller(self) -> bool:
        return self._broker.metadata.controller_id == self._broker.node_id

    def max_lag(self) -> int:
        fetchers = self._broker.replicas.fetchers
        return fetchers.max_lag() if fetchers is not None else 0


# ---------------------------------------------------------------- per-connection request stamps


class RequestStats:
    """Reused per connection: what dispatch learnt about the request being served."""

    __slots__ = ("api_key", "version", "t1", "t2", "ctx", "result", "body", "phase")

    def __init__(self) -> None:
        self.api_key = -1
        self.version = 0
        self.t1 = self.t2 = 0.0
        self.ctx = self.result = self.body = None
        self.phase = 0  # 0 reading, 1 in the handler, 2 writing the response


class _RequestGroup:
    __slots__ = ("name", "timers", "requests", "errors", "_reg")

    def __init__(self, reg: Registry, name: str) -> None:
        self._reg = reg
        self.name = name
        self.timers = tuple(reg.timer("kafka.network", "RequestMetrics", t, request=name) for t in REQUEST_TIMERS)
        self.requests: dict[int, Meter] = {}
        self.errors: dict[int, Meter] = {}

    def record(self, version: int, queue: float, local: float, remote: float, respq: float, send: float,
               total: float) -> None:
        tq, tl, tr, trq, ts, tt = self.timers
        tq.update(queue)
        tl.update(local)
        tr.update(remote)
        trq.update(respq)
        ts.update(send)
        tt.update(total)
        m = self.requests.get(version)
        if m is None:
            m = self.requests[version] = self._reg.meter("kafka.network", "RequestMetrics", "RequestsPerSec",
                                                         request=self.name, version=version)
        m.mark()

    def error(self, code: int, n: int = 1) -> None:
        m = self.errors.get(code)
        if m is None:
            m = self.errors[code] = self._reg.meter("kafka.network", "RequestMetrics", "ErrorsPerSec",
                                                    request=self.name, error=error_name(code))
        m.mark(n)


class _TopicStats:
    __slots__ = TOPIC_METERS_SLOTS = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "total_produce",
                                      "failed_produce", "total_fetch", "failed_fetch")

    def __init__(self, reg: Registry, topic: str | None) -> None:
        for slot, name in zip(self.TOPIC_METERS_SLOTS, TOPIC_METERS, strict=True):
            setattr(self, slot, reg.meter("kafka.server", "BrokerTopicMetrics", name, topic=topic))


class BrokerMetrics:
    def __init__(self, broker: Broker, registry: Registry | None = None) -> None:
        self.broker = broker
        self.registry = reg = registry or Registry(broker.clock)
        self.replica_view: ReplicaView = BrokerReplicaView(broker)
        self._loop_idle = reg.meter("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent",
                                    scale=1e-9)
        self._live_stats: set[RequestStats] = set()
        self._topics: dict[str, _TopicStats] = {}
        self.all_topics = _TopicStats(reg, None)
        self.replication_bytes_out = reg.meter("kafka.server", "BrokerTopicMetrics", "ReplicationBytesOutPerSec")
        self.replication_bytes_in = reg.meter("kafka.server", "BrokerTopicMetrics", "ReplicationBytesInPerSec")
        self._groups: dict[int, _RequestGroup] = {}
        from broker.protocol.api import HANDLERS, load_handlers

        load_handlers()
        for key in sorted(HANDLERS):
            self._group(key)
        self.fetch_consumer = _RequestGroup(reg, "FetchConsumer")
        self.fetch_follower = _RequestGroup(reg, "FetchFollower")
        # Replication and controller: marked by the cluster code; standalone they stay at zero.
        self.isr_shrinks = reg.meter("kafka.server", "ReplicaManager", "IsrShrinksPerSec")
        self.isr_expands = reg.meter("kafka.server", "ReplicaManager", "IsrExpandsPerSec")
        self.failed_isr_updates = reg.meter("kafka.server", "ReplicaManager", "FailedIsrUpdatesPerSec")
        self.unclean_elections = reg.meter("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec")
        self.leader_election = reg.timer("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")
        self._conn_created = SampledRate(reg.clock)
        self._conn_closed = SampledRate(reg.clock)
        self._gc_start = 0.0
        self._gc = {g: [0, 0.0] for g in range(3)}
        self._state_cache: tuple[float, list[PartitionStats]] = (-1.0, [])
        self._define_gauges()
        self._http = None
        self._tick_task: asyncio.Task | None = None
        self._hdr_writers: dict[str, Any] = {}
        self._wall_offset = time.time() - reg.clock.monotonic()
        self._restore_select = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if broker.clustered:
            sel = ("kafka.server", "SessionExpireListener")
            self.zk_sync_connects = reg.meter(*sel, "ZooKeeperSyncConnectsPerSec")
            self.zk_disconnects = reg.meter(*sel, "ZooKeeperDisconnectsPerSec")
            self.zk_expires = reg.meter(*sel, "ZooKeeperExpiresPerSec")
            self.zk_request_latency = reg.timer("kafka.server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs")
            reg.gauge_family(*sel, "SessionState", self._zk_session_state)

    # ------------------------------------------------------------ definitions

    def _group(self, api_key: int) -> _RequestGroup:
        g = self._groups.get(api_key)
        if g is None:
            g = self._groups[api_key] = _RequestGroup(self.registry, API_NAMES.get(api_key, f"Unknown{api_key}"))
        return g

    def topic(self, topic: str) -> _TopicStats:
        s = self._topics.get(topic)
        if s is None:
            s = self._topics[topic] = _TopicStats(self.registry, topic)
        return s

    def _define_gauges(self) -> None:
        reg, b = self.registry, self.broker
        rm = ("kafka.server", "ReplicaManager")
        reg.gauge(*rm, "PartitionCount", lambda: len(b.logs.partitions()))
        reg.gauge(*rm, "LeaderCount", lambda: sum(s.is_local_leader for s in self._states()))
        reg.gauge(*rm, "UnderReplicatedPartitions",
                  lambda: sum(s.is_local_leader and s.isr < s.replicas for s in self._states()))
        reg.gauge(*rm, "UnderMinIsrPartitionCount",
                  lambda: sum(s.is_local_leader and s.isr < s.min_isr for s in self._states()))
        reg.gauge(*rm, "AtMinIsrPartitionCount",
                  lambda: sum(s.is_local_leader and s.isr == s.min_isr for s in self._states()))
        reg.gauge(*rm, "OfflineReplicaCount", lambda: 0)
        kc = ("kafka.controller", "KafkaController")
        reg.gauge(*kc, "ActiveControllerCount", lambda: int(self.replica_view.is_active_controller()))
        reg.gauge(*kc, "OfflinePartitionsCount", lambda: self._controller(lambda s: not s.has_leader))
        reg.gauge(*kc, "PreferredReplicaImbalanceCount", lambda: self._controller(lambda s: not s.preferred_is_leader))
        reg.gauge(*kc, "GlobalTopicCount", lambda: len(b.metadata.topics()) if self._is_controller() else 0)
        reg.gauge(*kc, "GlobalPartitionCount", lambda: self._controller(lambda s: True))
        reg.gauge("kafka.server", "ReplicaFetcherManager", "MaxLag", lambda: self.replica_view.max_lag(),
                  clientId="Replica")
        for name, fn in (("UnderReplicated", lambda s: int(s.isr < s.replicas)),
                         ("UnderMinIsr", lambda s: int(s.isr < s.min_isr)),
                         ("AtMinIsr", lambda s: int(s.isr == s.min_isr)),
                         ("InSyncReplicasCount", lambda s: s.isr if s.is_local_leader else 0),
                         ("ReplicasCount", lambda s: s.replicas if s.is_local_leader else 0)):
            reg.gauge_family("kafka.cluster", "Partition", name,
                             lambda fn=fn: (((("topic", s.topic), ("partition", str(s.partition))), fn(s))
                                             for s in self._states()))
        for name, attr in (("Size", "size_bytes"), ("LogEndOffset", "log_end_offset"),
                           ("LogStartOffset", "log_start_offset"), ("NumLogSegments", "segment_count")):
            reg.gauge_family("kafka.log", "Log", name,
                             lambda attr=attr: (((("topic", pl.topic), ("partition", str(pl.partition))),
                                                 getattr(pl, attr)) for pl in b.logs.logs()))
        for op in DELAYED_OPERATIONS:
            reg.gauge("kafka.server", "DelayedOperationPurgatory", "PurgatorySize",
                      lambda op=op: b.purgatory.watched(op), delayedOperation=op)
            reg.gauge("kafka.server", "DelayedOperationPurgatory", "NumDelayedOperations",
                      lambda op=op: b.purgatory.delayed(op), delayedOperation=op)
        cg = ("kafka.coordinator.group", "GroupMetadataManager")
        reg.gauge(*cg, "NumGroups", lambda: len(self._group_states()))
        for st in GROUP_STATES:
            reg.gauge(*cg, f"NumGroups{st}", lambda st=st: sum(1 for s in self._group_states() if s == st))
        reg.gauge("kafka.network", "RequestChannel", "RequestQueueSize",
                  lambda: sum(1 for s in self._live_stats if s.phase == 1))
        reg.gauge("kafka.network", "RequestChannel", "ResponseQueueSize",
                  lambda: sum(1 for s in self._live_stats if s.phase == 2))
        reg.gauge("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent",
                  lambda: min(1.0, self._loop_idle.one_minute_rate))
        ssm = dict(listener=b.config.listener.name or "PLAINTEXT", networkProcessor="0")
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
        reg.gauge(*ks, "linux-disk-read-bytes", lambda: _proc_io().get("read_bytes", 0))
        reg.gauge(*ks, "linux-disk-write-bytes", lambda: _proc_io().get("write_bytes", 0))
        dirs = b.config.log_dir_list
        reg.gauge("kafka.log", "LogManager", "OfflineLogDirectoryCount",
                  lambda: sum(not os.access(d, os.W_OK) for d in dirs))
        reg.gauge_family("kafkascope.log", "LogDir", "FreeBytes",
                         lambda: (((("logDir", str(d)),), _free(d)) for d in dirs))
        reg.raw(self._gc_families)

    def _states(self) -> list[PartitionStats]:
        now = self.registry.clock.monotonic()
        at, states = self._state_cache
        if now - at > 0.5 or at < 0:
            states = list(self.replica_view.partition_states())
            self._state_cache = (now, states)
        return states

    def _is_controller(self) -> bool:
        return self.replica_view.is_active_controller()

    def _controller(self, pred) -> int:
        return sum(1 for s in self._states() if pred(s)) if self._is_controller() else 0

    def _group_states(self) -> list[str]:
        groups = getattr(self.broker.group_coordinator, "_groups", {})
        return [g.state.value for g in groups.values()]

    def isr_changed(self, shrink: bool) -> None:
        (self.isr_shrinks if shrink else self.isr_expands).mark()

    def set_replica_view(self, view: ReplicaView) -> None:
        self.replica_view = view
        self._state_cache = (-1.0, [])

    # ------------------------------------------------------------ recording (called from the edges)

    def new_request_stats(self) -> RequestStats:
        s = RequestStats()
        self._live_stats.add(s)
        self._conn_created.record()
        return s

    def connection_closed(self, stats: RequestStats | None) -> None:
        if stats is not None:
            self._live_stats.discard(stats)
        self._conn_closed.record()

    def request_done(self, s: RequestStats, t0: float, t3: float, t4: float) -> None:
        """One served request: stamps t0 (read) .. t4 (written), the rest from ``s`` (seconds)."""
        s.phase = 0
        t1, t2 = s.t1 or t0, s.t2 or t0
        ctx = s.ctx
        remote = ctx.remote_s if ctx is not None else 0.0
        queue, local, respq, send, total = (t1 - t0) * 1e3, (t2 - t1 - remote) * 1e3, (t3 - t2) * 1e3, \
            (t4 - t3) * 1e3, (t4 - t0) * 1e3
        remote *= 1e3
        api_key = s.api_key
        g = self._groups.get(api_key) or self._group(api_key)
        g.record(s.version, queue, local, remote, respq, send, total)
        split = None
        if api_key == FETCH:
            split = self.fetch_follower if getattr(s.body, "replica_id", -1) >= 0 else self.fetch_consumer
            split.record(s.version, queue, local, remote, respq, send, total)
        result = s.result
        if result is not None:
            errors: dict[int, int] = {}
            count_errors(result, errors)
            for code, n in errors.items():
                g.error(code, n)
        s.ctx = s.result = s.body = None

    def request_failed(self, api_key: int, code: int) -> None:
        """A request answered by closing the connection (unsupported version, invalid request, handler failure)."""
        self._group(api_key).error(code)

    def produced(self, topic: str, nbytes: int, nrecords: int) -> None:
        t, a = self.topic(topic), self.all_topics
        t.total_produce.mark()
        a.total_produce.mark()
        t.bytes_in.mark(nbytes)
        a.bytes_in.mark(nbytes)
        t.messages_in.mark(nrecords)
        a.messages_in.mark(nrecords)

    def produce_failed(self, topic: str, code: int, nbytes: int) -> None:
        known = code != ErrorCode.unknown_topic_or_partition
        stats = (self.topic(topic), self.all_topics) if known else (self.all_topics,)
        for s in stats:
            s.total_produce.mark()
            if code not in _NOT_FAILURES:
                s.failed_produce.mark()
            if code in _REJECTED:
                s.bytes_rejected.mark(nbytes)

    def fetched(self, topics: list[dict], follower: bool) -> None:
        """Per partition of a Fetch response body (kio field names, as the fetch handler builds it)."""
        a = self.all_topics
        for t in topics:
            name = t["topic"]
            ts = None
            for p in t["partitions"]:
                code = p["error_code"]
                if code == ErrorCode.unknown_topic_or_partition:
                    a.total_fetch.mark()
                    continue
                if ts is None:
                    ts = self.topic(name)
                ts.total_fetch.mark()
                a.total_fetch.mark()
                if code:
                    if code not in _NOT_FAILURES:
                        ts.failed_fetch.mark()
                        a.failed_fetch.mark()
                    continue
                n = len(p["records"] or b"")
                if follower:
                    self.replication_bytes_out.mark(n)
                else:
                    ts.bytes_out.mark(n)
                    a.bytes_out.mark(n)

    # ------------------------------------------------------------ GC

    def _gc_callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            g = self._gc.get(info.get("generation", 0))
            if g is not None:
                g[0] += 1
                g[1] += time.perf_counter() - self._gc_start

    def _gc_families(self) -> Iterable[RawFamily]:
        py, jvm = [], []
        for gen, (n, secs) in sorted(self._gc.items()):
            py += [RawSample("_count", {"generation": str(gen)}, n), RawSample("_sum", {"generation": str(gen)}, secs)]
            lbl = {"gc": f"python-gen{gen}"}
            jvm += [RawSample("_count", lbl, n), RawSample("_sum", lbl, secs)]
        yield RawFamily("python_gc_pause_seconds", "summary", "Python GC pauses per generation (gc.callbacks)", py)
        yield RawFamily("jvm_gc_collection_seconds", "summary",
                        "Python GC pauses, under the JVM GC name the dashboards query", jvm)

    # ------------------------------------------------------------ lifecycle

    def _install_idle_probe(self) -> None:
        """Time the event loop's blocking select(): that is the loop's idle time."""
        loop = asyncio.get_running_loop()
        selector = getattr(loop, "_selector", None)
        if selector is None:
            log.warning("event loop has no selector; idle metrics will read 0")
            return
        orig = selector.select
        mark = self._loop_idle.mark
        perf_ns = time.perf_counter_ns

        def select(timeout=None):
            t = perf_ns()
            try:
                return orig(timeout)
            finally:
                mark(perf_ns() - t)

        selector.select = select
        self._restore_select = (selector, orig)

    # ------------------------------------------------------------ cluster mode hooks

    def _post(self, fn, *args: object) -> None:  # noqa: ANN001
        """Record on the event loop from another thread (controller, kazoo)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # loop closing
                pass

    def _on_leader_election(self, ms: float, unclean: bool) -> None:  # controller thread
        self._post(self._record_election, ms, unclean)

    def _record_election(self, ms: float, unclean: bool) -> None:
        self.leader_election.update(ms)
        if unclean:
            self.unclean_elections.mark()

    def _on_zk_state(self, state: str) -> None:  # kazoo thread; never block
        meter = {"CONNECTED": self.zk_sync_connects, "SUSPENDED": self.zk_disconnects,
                 "LOST": self.zk_expires}.get(str(state))
        if meter is not None:
            self._post(meter.mark)

    ZK_CLIENT_STATES = ("CONNECTED", "CONNECTING", "CONNECTED_RO", "EXPIRED_SESSION", "AUTH_FAILED", "CLOSED")

    def _zk_session_state(self) -> Iterable[tuple]:
        zk = getattr(self.broker.metadata, "_zk", None)
        current = str(zk.client_state) if zk is not None else "CLOSED"
        return (((("state", st),), int(st == current)) for st in self.ZK_CLIENT_STATES)

    def _wrap_zk_calls(self, zk) -> None:  # noqa: ANN001
        """Time every request kazoo queues, from queueing to its result (ZooKeeperRequestLatencyMs)."""
        orig = zk._call
        timer_update = self.zk_request_latency.update
        post = self._post
        perf = time.perf_counter

        def _call(request, async_object):  # noqa: ANN001, ANN202
            t0 = perf()
            try:
                async_object.rawlink(lambda _r: post(timer_update, (perf() - t0) * 1000))
            except Exception:  # noqa: BLE001, S110 - never break a ZooKeeper request for a metric
                pass
            return orig(request, async_object)

        zk._call = _call

    def _wire_cluster(self) -> None:
        b = self.broker
        if b.replicas.fetchers is not None:
            b.replicas.fetchers.on_bytes_in = self.replication_bytes_in.mark
        if not b.clustered:
            return
        controller = getattr(b.metadata, "controller", None)
        if controller is not None:
            controller.on_leader_election = self._on_leader_election
        zk = getattr(b.metadata, "_zk", None)
        if zk is not None:
            zk.add_listener(self._on_zk_state)
            self._wrap_zk_calls(zk)

    async def start(self) -> None:
        cfg = self.broker.config
        gc.callbacks.append(self._gc_callback)
        self._install_idle_probe()
        self._loop = asyncio.get_running_loop()
        self._wire_cluster()
        if cfg.prometheus_listener:
            from exporter.collector import build_prometheus_registry, render
            from exporter.http import MetricsHTTPServer

            host, _, port = cfg.prometheus_listener.rpartition(":")
            prom = build_prometheus_registry(self.registry, cfg.prometheus_naming)
            self._http = MetricsHTTPServer(lambda: render(prom), host or "127.0.0.1", int(port))
            bound = await self._http.start()
            log.info("prometheus metrics on http://%s:%d/metrics (%s naming)", host or "127.0.0.1", bound,
                     cfg.prometheus_naming)
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
                self.registry.tick()
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
        if self._gc_callback in gc.callbacks:
            gc.callbacks.remove(self._gc_callback)
        if self._restore_select is not None:
            selector, orig = self._restore_select
            selector.select = orig
        for w in self._hdr_writers.values():
            w.close()


def _proc_io() -> dict[str, int]:
    try:
        with open("/proc/self/io") as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}
    except OSError:
        return {}


def _free(d: Path) -> int:
    try:
        return shutil.disk_usage(d).free
    except OSError:
        return 0
