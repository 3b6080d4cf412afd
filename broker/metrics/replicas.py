"""Replication and controller gauges: ReplicaManager, KafkaController, ReplicaFetcherManager and the
per-partition ``kafka.cluster:type=Partition`` gauges, read at scrape time through a :class:`ReplicaView`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypedDict

from exporter.registry import Meter, MetricName, Registry, Tags

if TYPE_CHECKING:
    from broker.broker import Broker
    from broker.replication.fetcher import ReplicaFetcher


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
    hosted: bool = True  # this broker has a replica (Kafka has a Partition object, hence its gauges)
    lso_lag: int = 0  # the leader's high watermark - Last Stable Offset (an open transaction holds it back)


# kafka.cluster.Partition's definitions. The leader alone reports the ISR state; the min ISR is the effective one,
# min(min.insync.replicas, replication factor), so RF 1 with min.insync.replicas 2 is at, not under, its minimum.


def effective_min_isr(s: PartitionStats) -> int:
    return min(s.min_isr, s.replicas)


def is_under_replicated(s: PartitionStats) -> bool:
    return s.is_local_leader and s.isr < s.replicas


def is_under_min_isr(s: PartitionStats) -> bool:
    return s.is_local_leader and s.isr < effective_min_isr(s)


def is_at_min_isr(s: PartitionStats) -> bool:
    return s.is_local_leader and s.isr == effective_min_isr(s)


# (name, value) of each kafka.cluster:type=Partition gauge. LastStableOffsetLag is the leader's HW - LSO (KIP-98:
# it grows while a transaction stays open), 0 on followers, as Kafka's Partition reports it.
PARTITION_GAUGES: tuple[tuple[str, Callable[[PartitionStats], int]], ...] = (
    ("UnderReplicated", lambda s: int(is_under_replicated(s))),
    ("InSyncReplicasCount", lambda s: s.isr if s.is_local_leader else 0),
    ("UnderMinIsr", lambda s: int(is_under_min_isr(s))),
    ("AtMinIsr", lambda s: int(is_at_min_isr(s))),
    ("ReplicasCount", lambda s: s.replicas if s.is_local_leader else 0),
    ("LastStableOffsetLag", lambda s: s.lso_lag),
)


class ReplicaView(Protocol):
    """What the replication metrics read; the cluster code supplies its own implementation."""

    def partition_states(self) -> Iterable[PartitionStats]: ...

    def is_active_controller(self) -> bool: ...

    def max_lag(self) -> int: ...


class FetcherManagerView(Protocol):
    """What the metrics read of the replica fetcher manager (ReplicaFetcherManager)."""

    def max_lag(self) -> int: ...

    def active(self) -> list[ReplicaFetcher]: ...


class BrokerReplicaView:
    """Reads the metadata store's partition states (the whole cluster as this broker sees it) and the
    replica fetchers (once the broker hands them over); the same code serves standalone and cluster mode."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.fetchers: FetcherManagerView | None = None

    def partition_states(self) -> Iterable[PartitionStats]:
        b = self._broker
        me = b.node_id
        hosted = b.replicas.partitions
        for name, info in b.metadata.topics().items():
            min_isr = b.log_config(name).min_insync_replicas
            for p in range(info.partitions):
                st = b.metadata.partition_state(name, p)
                if st is None:
                    continue
                part = hosted.get((name, p)) if st.leader == me else None
                lso_lag = part.log.high_watermark - part.log.last_stable_offset if part is not None else 0
                yield PartitionStats(name, p, len(st.replicas), len(st.isr), min_isr, st.online,
                                     st.leader == me, bool(st.replicas) and st.replicas[0] == st.leader,
                                     (name, p) in hosted, lso_lag)

    def is_active_controller(self) -> bool:
        return self._broker.metadata.controller_id == self._broker.node_id

    def max_lag(self) -> int:
        return self.fetchers.max_lag() if self.fetchers is not None else 0


def hosted_rows(states: Iterable[PartitionStats]) -> list[tuple[Tags, PartitionStats]]:
    """(tags, state) of every replica this broker hosts, and of no other partition: the rows of each Partition
    gauge, built once per states refresh rather than once per gauge (six gauges, 10,000 partitions)."""
    return [((("topic", s.topic), ("partition", str(s.partition))), s) for s in states if s.hosted]


class ReplicaGauges:
    """Defines the gauges; partition states are read at most every 0.5 s however many gauges ask."""

    def __init__(self, reg: Registry, broker: Broker, clock_s: Callable[[], float]) -> None:
        self._reg = reg
        self._broker = broker
        self._clock_s = clock_s
        self._broker_view = BrokerReplicaView(broker)
        self.view: ReplicaView = self._broker_view
        self._cache: tuple[float, list[PartitionStats]] = (-1.0, [])
        self._rows: tuple[list[PartitionStats] | None, list[tuple[Tags, PartitionStats]]] = (None, [])
        self._define()

    def watch_fetchers(self, fetchers: FetcherManagerView) -> None:
        self._broker_view.fetchers = fetchers

    def set_view(self, view: ReplicaView) -> None:
        self.view = view
        self._cache = (-1.0, [])

    def states(self) -> list[PartitionStats]:
        now = self._clock_s()
        at, states = self._cache
        if now - at > 0.5 or at < 0:
            states = list(self.view.partition_states())
            self._cache = (now, states)
        return states

    def rows(self) -> list[tuple[Tags, PartitionStats]]:
        states = self.states()
        built_for, rows = self._rows
        if built_for is not states:
            rows = hosted_rows(states)
            self._rows = (states, rows)
        return rows

    def _is_controller(self) -> bool:
        return self.view.is_active_controller()

    def _controller(self, pred: Callable[[PartitionStats], bool]) -> int:
        return sum(1 for s in self.states() if pred(s)) if self._is_controller() else 0

    def _define(self) -> None:
        reg, b = self._reg, self._broker
        rm = ("kafka.server", "ReplicaManager")
        reg.gauge(*rm, "PartitionCount", lambda: len(b.logs.partitions()))
        reg.gauge(*rm, "LeaderCount", lambda: sum(s.is_local_leader for s in self.states()))
        reg.gauge(*rm, "UnderReplicatedPartitions", lambda: sum(map(is_under_replicated, self.states())))
        reg.gauge(*rm, "UnderMinIsrPartitionCount", lambda: sum(map(is_under_min_isr, self.states())))
        reg.gauge(*rm, "AtMinIsrPartitionCount", lambda: sum(map(is_at_min_isr, self.states())))
        reg.gauge(*rm, "OfflineReplicaCount", lambda: 0)
        kc = ("kafka.controller", "KafkaController")
        reg.gauge(*kc, "ActiveControllerCount", lambda: int(self.view.is_active_controller()))
        reg.gauge(*kc, "OfflinePartitionsCount", lambda: self._controller(lambda s: not s.has_leader))
        reg.gauge(*kc, "PreferredReplicaImbalanceCount", lambda: self._controller(lambda s: not s.preferred_is_leader))
        reg.gauge(*kc, "GlobalTopicCount", lambda: len(b.metadata.topics()) if self._is_controller() else 0)
        reg.gauge(*kc, "GlobalPartitionCount", lambda: self._controller(lambda s: True))
        reg.gauge("kafka.server", "ReplicaFetcherManager", "MaxLag", lambda: self.view.max_lag(),
                  clientId="Replica")
        for name, fn in PARTITION_GAUGES:
            def rows(fn: Callable[[PartitionStats], int] = fn) -> Iterable[tuple]:  # fn bound per gauge
                return [(tags, fn(s)) for tags, s in self.rows()]
            reg.gauge_family("kafka.cluster", "Partition", name, rows)


class _FetcherTags(TypedDict):
    """A fetcher's RequestsPerSec tags (MetricName.of drops an empty brokerHost)."""

    clientId: str
    brokerHost: str
    brokerPort: int


class FetcherMetrics:
    """Each replica fetcher's ``kafka.server:type=FetcherStats,name=RequestsPerSec`` meter (clientId
    ReplicaFetcherThread-0-<leader>, brokerHost, brokerPort: one fetcher per leader, as num.replica.fetchers=1) and
    ReplicaFetcherManager MinFetchRate: the smallest one-minute request rate over the fetchers following
    something, 0 with none (AbstractFetcherManager). A fetcher left with nothing to follow keeps its meter, which
    decays to 0; Kafka shuts such a fetcher down and drops it."""

    def __init__(self, reg: Registry, active: Callable[[], list[ReplicaFetcher]]) -> None:
        self._reg = reg
        self._active = active
        self._rates: dict[int, tuple[MetricName, Meter]] = {}
        reg.gauge("kafka.server", "ReplicaFetcherManager", "MinFetchRate", self.min_fetch_rate, clientId="Replica")

    def on_fetch_request(self, fetcher: ReplicaFetcher) -> None:
        host, port = fetcher.endpoint or ("", 0)
        tags: _FetcherTags = dict(clientId=f"ReplicaFetcherThread-0-{fetcher.leader_id}", brokerHost=host,
                                  brokerPort=port)
        name = MetricName.of("kafka.server", "FetcherStats", "RequestsPerSec", **tags)
        known = self._rates.get(fetcher.leader_id)
        if known is None or known[0] != name:  # first request, or the leader moved to another endpoint
            if known is not None:
                self._reg.remove(known[0])
            known = self._rates[fetcher.leader_id] = (name, self._reg.meter(name.domain, name.type, name.name,
                                                                            **tags))
        known[1].mark()

    def min_fetch_rate(self) -> float:
        rates = [(self._rates[f.leader_id][1].one_minute_rate if f.leader_id in self._rates else 0.0)
                 for f in self._active()]
        return min(rates, default=0.0)
