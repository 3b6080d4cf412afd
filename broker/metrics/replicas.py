"""Replication and controller gauges: ReplicaManager, KafkaController, ReplicaFetcherManager and the
per-partition ``kafka.cluster:type=Partition`` gauges, read at scrape time through a :class:`ReplicaView`."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol, TypedDict

from broker.metrics.logs import partition_tags
from common.steps import run_steps
from exporter.registry import Columns, Meter, MetricName, Registry, Tags

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

    def reassigning_leaders(self) -> int: ...


class FetcherManagerView(Protocol):
    """What the metrics read of the replica fetcher manager (ReplicaFetcherManager)."""

    def max_lag(self) -> int: ...

    def active(self) -> list[ReplicaFetcher]: ...


class BrokerReplicaView:
    """Reads the metadata store's partition states (the whole cluster as this broker sees it) and the
    replica fetchers (once the broker hands them over); the same code serves standalone and cluster mode.

    A topic's states are kept while its ``MetadataStore.topic_generation`` (which moves with its assignment and
    every state of its partitions), partition count and min.insync.replicas are unchanged and this broker hosts
    the same of its replicas: at 10,000 partitions re-reading every state (a lock and a composed PartitionState
    each, in cluster mode) was a sixth of a scrape. The Last Stable Offset lag is read afresh each time."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.fetchers: FetcherManagerView | None = None
        self._memo: dict[str, tuple[tuple, list[PartitionStats]]] = {}  # topic -> (key, states without LSO lag)

    def partition_states(self) -> Iterator[PartitionStats]:
        """Lazily, topic by topic: a stepped snapshot reads them across loop turns, so the topics are a copy and a
        replica that left meanwhile is skipped."""
        b = self._broker
        md = b.metadata
        hosted = b.replicas.partitions
        memo: dict[str, tuple[tuple, list[PartitionStats]]] = {}
        for name, info in list(md.topics().items()):
            key = (md.topic_generation(name), info.partitions, b.log_config(name).min_insync_replicas)
            got = self._memo.get(name)
            if got is None or got[0] != key or any(s.hosted != ((name, s.partition) in hosted) for s in got[1]):
                got = (key, self._read_topic(name, info.partitions, key[2]))
            memo[name] = got
            for s in got[1]:
                if s.is_local_leader and s.hosted:  # KIP-98: HW - LSO, which an open transaction holds back
                    replica = hosted.get((name, s.partition))
                    if replica is None:
                        continue
                    log = replica.log
                    lag = log.high_watermark - log.last_stable_offset
                    if lag:
                        s = PartitionStats(s.topic, s.partition, s.replicas, s.isr, s.min_isr, s.has_leader,
                                           True, s.preferred_is_leader, True, lag)
                yield s
        self._memo = memo  # deleted topics leave with it

    def _read_topic(self, name: str, partitions: int, min_isr: int) -> list[PartitionStats]:
        b = self._broker
        me = b.node_id
        hosted = b.replicas.partitions
        out = []
        for p in range(partitions):
            st = b.metadata.partition_state(name, p)
            if st is not None:
                out.append(PartitionStats(name, p, len(st.replicas), len(st.isr), min_isr, st.online, st.leader == me,
                                          bool(st.replicas) and st.replicas[0] == st.leader, (name, p) in hosted))
        return out

    def is_active_controller(self) -> bool:
        return self._broker.metadata.controller_id == self._broker.node_id

    def max_lag(self) -> int:
        return self.fetchers.max_lag() if self.fetchers is not None else 0

    def reassigning_leaders(self) -> int:
        """Partitions this broker leads that a reassignment is moving (ReplicaManager ReassigningPartitions)."""
        md, me = self._broker.metadata, self._broker.node_id
        return sum(1 for t, p in md.reassignments() if (st := md.partition_state(t, p)) is not None
                   and st.leader == me)


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    """Counts over every partition state (ReplicaManager's and, on the controller, KafkaController's gauges)."""

    leaders: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0
    offline: int = 0
    not_preferred: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """One read of the partition states, with everything the gauges show of it."""

    states: list[PartitionStats]
    tags: tuple[Tags, ...]            # the hosted replicas' tags, in state order
    columns: dict[str, list[int]]     # Partition gauge name -> its value per hosted replica, in `tags`' order
    summary: PartitionSummary


SNAPSHOT_STEP = 500  # partition states read between two yields of a stepped snapshot (~3 ms)


def take_snapshot(states: Iterable[PartitionStats], previous: PartitionSnapshot | None,
                  tag_cache: dict[tuple[str, int], Tags]) -> PartitionSnapshot:
    """The six Partition columns and the counts of `states` in one pass, as PARTITION_GAUGES and the
    is_* definitions above define them (ten passes with a call per state and gauge before: 10,000 partitions made
    that a quarter of a scrape). The tags are `previous`'s very tuple when the hosted replicas are the same, and
    each replica's tags are reused from `tag_cache`, so the exporter recognises the rows by identity."""
    return run_steps(take_snapshot_steps(states, previous, tag_cache))


def take_snapshot_steps(states: Iterable[PartitionStats], previous: PartitionSnapshot | None,
                        tag_cache: dict[tuple[str, int], Tags]) -> Generator[None, None, PartitionSnapshot]:
    """`take_snapshot`, yielding every `SNAPSHOT_STEP` states (10,000 partitions took 50 ms in one piece)."""
    read: list[PartitionStats] = []
    ur: list[int] = []
    in_sync: list[int] = []
    under_min: list[int] = []
    at_min: list[int] = []
    count: list[int] = []
    lso: list[int] = []
    tags: list[Tags] = []
    leaders = under = n_under_min = n_at_min = offline = not_preferred = 0
    for n, s in enumerate(states, 1):
        if n % SNAPSHOT_STEP == 0:
            yield
        read.append(s)
        offline += not s.has_leader
        not_preferred += not s.preferred_is_leader
        lead = s.is_local_leader
        if lead:
            isr, replicas = s.isr, s.replicas
            least = s.min_isr if s.min_isr < replicas else replicas  # effective_min_isr
            u, um, am = int(isr < replicas), int(isr < least), int(isr == least)
            leaders += 1
            under += u
            n_under_min += um
            n_at_min += am
        if not s.hosted:
            continue
        key = (s.topic, s.partition)
        t = tag_cache.get(key)
        if t is None:
            t = tag_cache[key] = partition_tags(s.topic, s.partition)
        tags.append(t)
        lso.append(s.lso_lag)
        if lead:
            ur.append(u)
            in_sync.append(isr)
            under_min.append(um)
            at_min.append(am)
            count.append(replicas)
        else:
            ur.append(0)
            in_sync.append(0)
            under_min.append(0)
            at_min.append(0)
            count.append(0)
    if len(tag_cache) > 2 * len(read) + 1000:  # partitions went away: do not keep their tags for ever
        tag_cache.clear()
    hosted = tuple(tags)
    if previous is not None and previous.tags == hosted:  # element by element by identity first: a C loop
        hosted = previous.tags
    columns = {"UnderReplicated": ur, "InSyncReplicasCount": in_sync, "UnderMinIsr": under_min,
               "AtMinIsr": at_min, "ReplicasCount": count, "LastStableOffsetLag": lso}
    return PartitionSnapshot(read, hosted, columns, PartitionSummary(
        leaders, under, n_under_min, n_at_min, offline, not_preferred, len(read)))


class ReplicaGauges:
    """Defines the gauges; partition states are read at most every 0.5 s however many gauges ask, and every
    gauge is read off the one :class:`PartitionSnapshot` of that read."""

    def __init__(self, reg: Registry, broker: Broker, clock_s: Callable[[], float]) -> None:
        self._reg = reg
        self._broker = broker
        self._clock_s = clock_s
        self._broker_view = BrokerReplicaView(broker)
        self.view: ReplicaView = self._broker_view
        self._at = -1.0
        self._snapshot: PartitionSnapshot | None = None
        self._tag_cache: dict[tuple[str, int], Tags] = {}
        self._define()
        reg.before_read(self.refresh_steps)

    def watch_fetchers(self, fetchers: FetcherManagerView) -> None:
        self._broker_view.fetchers = fetchers

    def set_view(self, view: ReplicaView) -> None:
        self.view = view
        self._at = -1.0

    def snapshot(self) -> PartitionSnapshot:
        """The last snapshot while a read of the registry is in progress (the one its before-read step made: a
        stepped read of 10,000 partitions on a busy loop can outlast 0.5 s, and must not take a whole one
        meanwhile); otherwise a new one when the last is older than 0.5 s."""
        if self._snapshot is not None and self._reg.in_read:
            return self._snapshot
        run_steps(self.refresh_steps())   # nothing when the last is fresh
        assert self._snapshot is not None
        return self._snapshot

    def refresh_steps(self) -> Generator[None, None, None]:
        """A new snapshot in steps if the last is stale (a read of the registry runs this first: Registry.before_read)."""
        if not self._stale():
            return
        now = self._clock_s()
        self._snapshot = yield from take_snapshot_steps(self.view.partition_states(), self._snapshot,
                                                        self._tag_cache)
        self._at = now

    def _stale(self) -> bool:
        return self._snapshot is None or self._at < 0 or self._clock_s() - self._at > 0.5

    def states(self) -> list[PartitionStats]:
        return self.snapshot().states

    def _is_controller(self) -> bool:
        return self.view.is_active_controller()

    def _summary(self) -> PartitionSummary:
        return self.snapshot().summary

    def _controller(self, count: Callable[[PartitionSummary], int]) -> int:
        return count(self._summary()) if self._is_controller() else 0

    def _define(self) -> None:
        reg, b = self._reg, self._broker
        rm = ("kafka.server", "ReplicaManager")
        reg.gauge(*rm, "PartitionCount", lambda: len(b.logs.partitions()))
        reg.gauge(*rm, "ProducerIdCount", lambda: b.logs.producer_id_count())   # KIP-847
        reg.gauge(*rm, "LeaderCount", lambda: self._summary().leaders)
        reg.gauge(*rm, "UnderReplicatedPartitions", lambda: self._summary().under_replicated)
        reg.gauge(*rm, "UnderMinIsrPartitionCount", lambda: self._summary().under_min_isr)
        reg.gauge(*rm, "AtMinIsrPartitionCount", lambda: self._summary().at_min_isr)
        reg.gauge(*rm, "OfflineReplicaCount", lambda: len(b.replicas.offline))
        reg.gauge(*rm, "ReassigningPartitions", lambda: self.view.reassigning_leaders())
        kc = ("kafka.controller", "KafkaController")
        reg.gauge(*kc, "ActiveControllerCount", lambda: int(self.view.is_active_controller()))
        reg.gauge(*kc, "OfflinePartitionsCount", lambda: self._controller(attrgetter("offline")))
        reg.gauge(*kc, "PreferredReplicaImbalanceCount", lambda: self._controller(attrgetter("not_preferred")))
        reg.gauge(*kc, "GlobalTopicCount", lambda: len(b.metadata.topics()) if self._is_controller() else 0)
        reg.gauge(*kc, "GlobalPartitionCount", lambda: self._controller(attrgetter("total")))
        reg.gauge("kafka.server", "ReplicaFetcherManager", "MaxLag", lambda: self.view.max_lag(),
                  clientId="Replica")
        for name, _ in PARTITION_GAUGES:
            def column(name: str = name) -> Columns:  # bound per gauge
                snap = self.snapshot()
                return Columns(snap.tags, snap.columns[name])
            reg.gauge_family("kafka.cluster", "Partition", name, column)


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
