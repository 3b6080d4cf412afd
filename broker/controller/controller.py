"""The controller: one broker at a time (elected through the ephemeral /controller znode) decides leaders.

It runs on its own thread, fed by an event queue (events.py, Kafka's ControllerEventManager): ZooKeeper watches
(watches.py) and requests (ElectLeaders) only enqueue, so neither the broker's event loop nor kazoo's callback
thread ever waits on it. It reads the cluster from the shared `MetadataCache` (its ControllerContext) and puts
what it writes to ZooKeeper back into it. Every write is a multi-op fenced by a version check on /controller_epoch: a controller
that lost its seat (paused, session expired) fails its first write and resigns.

All decisions come from election.py; the controller reconciles the whole cluster against them on each batch of
events (cheap: it reads the in-memory cache, and writes only partitions that need a change).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)

from broker.controller import election
from broker.controller import zk_paths as zp
from broker.controller.cache import MetadataCache
from broker.controller.elect_leaders import PREFERRED, elect_leaders
from broker.controller.events import ControllerEventQueue
from broker.controller.new_partitions import create_states
from broker.controller.reassignment import finish_legacy_reassignment, process_legacy_reassignment
from broker.controller.state import NO_LEADER, PartitionState
from broker.controller.state_writes import write_states
from broker.controller.watches import refresh_state, refresh_topic
from broker.errors import ErrorCode

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from broker.config import BrokerConfig

log = logging.getLogger(__name__)

PIPELINE = 1000  # new partitions' reads and creates in flight at once (new_partitions.py)
Decide = Callable[[PartitionState], "election.Decision | None"]


def _plan_write(moves: list[tuple[str, int, Decide]], rest: list[tuple[str, int, Decide]], topic: str,
                partition: int, state: PartitionState, live: set[int], shutting: set[int], unclean: bool,
                offline: Mapping[tuple[str, int], set[int]]) -> None:
    """Queue a partition's reconcile write: into `moves` when its leader must change (written first,
    `Controller._write_leaders_first`), else into `rest`. The write re-decides on the state it reads. A replica
    offline on a live broker (`offline`: a failed log dir) counts as dead for this partition only."""
    if gone := offline.get((topic, partition)):
        live = live - gone
    def decide(c: PartitionState) -> election.Decision | None:
        return election.reconcile(c.replicas, c.leader, c.isr, live, unclean, shutting)
    moving = election.leader_moves(state.replicas, state.leader, live, shutting)
    (moves if moving else rest).append((topic, partition, decide))


@dataclass(frozen=True)
class ControllerSettings:
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_s: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10
    unclean_leader_election_enable: bool = False  # broker default; the topic config overrides it

    @classmethod
    def from_config(cls, c: BrokerConfig) -> ControllerSettings:
        return cls(c.auto_leader_rebalance_enable, float(c.leader_imbalance_check_interval_seconds),
                   c.leader_imbalance_per_broker_percentage, c.unclean_leader_election_enable)


@dataclass
class ControllerStats:
    """Kafka's controller metrics (meaningful on the active controller)."""

    active: bool = False
    epoch: int = 0
    leader_elections: int = 0          # LeaderElectionRateAndTimeMs count
    unclean_leader_elections: int = 0  # UncleanLeaderElectionsPerSec count
    offline_partitions: int = 0
    preferred_replica_imbalance: int = 0
    global_topic_count: int = 0
    global_partition_count: int = 0
    event_queue_size: int = 0
    reassigning_partitions: int = 0


class Fenced(Exception):
    """Our controller epoch is no longer current."""


class Controller:
    """Kafka's KafkaController (ZooKeeper mode), built from the ZooKeeper client, the cluster-state cache it
    shares with the store, and its event queue; `start` once the client is connected."""

    def __init__(self, zk: KazooClient, cache: MetadataCache, events: ControllerEventQueue, broker_id: int,
                 settings: ControllerSettings) -> None:
        self.zk = zk
        self.cache = cache
        self.events = events
        self.settings = settings
        # The broker default of unclean.leader.election.enable: server.properties, unless the metadata store reads
        # a dynamic one (a broker config set with kafka-configs.sh, which then also asks for a reconcile).
        self.unclean_default: Callable[[], bool] = lambda: settings.unclean_leader_election_enable
        self.me = broker_id
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.leader_elections = 0
        self.unclean_leader_elections = 0
        # Metrics hook, called on this thread with (milliseconds the election took, unclean) for every leader
        # this controller elects (LeaderElectionRateAndTimeMs, UncleanLeaderElectionsPerSec).
        self.on_leader_election: Callable[[float, bool], None] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._next_rebalance = time.monotonic() + settings.leader_imbalance_check_interval_s
        self._czxids: dict[int, int] = {}
        self._shutdown_seen: dict[int, float] = {}  # broker in controlled shutdown -> when this controller saw it

    # ------------------------------------------------------------ thread and queue

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"controller-event-thread-{self.me}", daemon=True)
        self._thread.start()
        self.enqueue("elect")

    def stop(self) -> None:
        self._stopping = True
        self.events.put("stop")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def enqueue(self, kind: str, *args: object) -> None:
        self.events.put(kind, *args)

    def submit(self, fn: Callable[[], object]) -> concurrent.futures.Future:
        """Run `fn` on the controller thread; the future carries its result."""
        return self.events.submit(fn)

    def stats(self) -> ControllerStats:
        states = self.cache.partition_states()
        assigns = self.cache.assignments()
        return ControllerStats(
            active=self.active, epoch=self.epoch, leader_elections=self.leader_elections,
            unclean_leader_elections=self.unclean_leader_elections,
            offline_partitions=sum(1 for s in states.values() if s.leader == NO_LEADER),
            preferred_replica_imbalance=election.preferred_imbalance_count(
                (s.replicas, s.leader) for s in states.values()),
            global_topic_count=len(assigns), global_partition_count=sum(len(a.partitions) for a in assigns.values()),
            event_queue_size=self.events.size(), reassigning_partitions=len(self.cache.reassignments()))

    def _run(self) -> None:
        while not self._stopping:
            events = self.events.take(max(0.0, self._next_rebalance - time.monotonic()))
            if not events:
                self._periodic()
                continue
            try:
                self._process(events)
            except Fenced:
                self._resign("fenced by a newer controller epoch")
            except KazooException as e:
                log.warning("controller %d: ZooKeeper error %r; retrying", self.me, e)
                if self.active and not self._stopping:
                    time.sleep(0.2)
                    self.enqueue("reconcile")
            except Exception:
                log.exception("controller %d: event processing failed", self.me)

    def _process(self, events: list[tuple]) -> None:
        kinds = {e[0] for e in events}
        if "stop" in kinds:
            self._stopping = True
            self._fail_calls(events)
            return
        if "resign" in kinds:
            self._resign("ZooKeeper session lost")
        if "controller_changed" in kinds and self.active and self.cache.controller_id != self.me:
            self._resign(f"broker {self.cache.controller_id} is the controller now")
        if "elect" in kinds and not self.active:
            self._elect()
        if self.active and kinds - {"call", "controller_changed", "resign", "state"}:
            self._reconcile()
        elif self.active and "state" in kinds:
            # Partition states alone changed (leaders' ISR writes): only those partitions can need a decision.
            # A whole-cluster pass per burst of them cost O(partitions) each time while thousands of ISRs grew
            # back after a restart.
            self._reconcile_partitions({(e[1], e[2]) for e in events if e[0] == "state"})
        for e in events:
            if e[0] == "call":
                _, fn, fut = e
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(fn())
                except BaseException as ex:  # delivered to the caller
                    fut.set_exception(ex)

    def _fail_calls(self, events: list[tuple]) -> None:
        for e in events:
            if e[0] == "call" and e[2].set_running_or_notify_cancel():
                e[2].set_exception(RuntimeError("controller stopped"))

    def _periodic(self) -> None:
        self._next_rebalance = time.monotonic() + self.settings.leader_imbalance_check_interval_s
        if not self.active or not self.settings.auto_leader_rebalance_enable:
            return
        try:
            self.rebalance()
        except Fenced:
            self._resign("fenced by a newer controller epoch")
        except KazooException as e:
            log.warning("controller %d: rebalance failed: %r", self.me, e)

    # ------------------------------------------------------------ election of the controller

    def _elect(self) -> None:
        zk = self.zk
        try:
            data, stat = zk.get(zp.CONTROLLER_EPOCH)
        except NoNodeError:
            try:
                zk.create(zp.CONTROLLER_EPOCH, b"0")
            except NodeExistsError:
                pass
            data, stat = zk.get(zp.CONTROLLER_EPOCH)
        epoch = int(data.decode() or 0) + 1
        tx = zk.transaction()
        tx.create(zp.CONTROLLER, zp.encode_controller(self.me), ephemeral=True)
        tx.set_data(zp.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
        res = tx.commit()
        if isinstance(res[0], NodeExistsError):
            try:
                cid = zp.decode_controller(zk.get(zp.CONTROLLER)[0])
            except NoNodeError:
                self.enqueue("elect")
                return
            self.cache.controller_id = cid
            return
        if isinstance(res[1], BadVersionError) or any(isinstance(r, Exception) for r in res):
            log.info("controller %d: lost the controller race (%r)", self.me, res)
            self.enqueue("elect")
            return
        self.active = True
        self._czxids = self.cache.broker_czxids()
        self.epoch = epoch
        self.epoch_zk_version = res[1].version
        self.cache.controller_id = self.me
        self._next_rebalance = time.monotonic() + self.settings.leader_imbalance_check_interval_s
        log.info("broker %d is the controller (epoch %d)", self.me, epoch)

    def _resign(self, why: str) -> None:
        if self.active:
            log.warning("controller %d resigns: %s", self.me, why)
        self.active = False

    def fenced(self) -> Fenced:
        """The exception that makes the controller resign (for the pipelined writers in other modules)."""
        return Fenced()

    def _commit(self, build: Callable[[Any], None]) -> list:
        """Run a multi-op behind a /controller_epoch version check; results of `build`'s ops."""
        tx = self.zk.transaction()
        tx.check(zp.CONTROLLER_EPOCH, self.epoch_zk_version)
        build(tx)
        res = tx.commit()
        if isinstance(res[0], (BadVersionError, NoNodeError)):
            raise Fenced()
        return res[1:]

    # ------------------------------------------------------------ partition state writes

    def _unclean(self, topic: str) -> bool:
        info = self.cache.topic(topic)
        return election.unclean_enabled(info.configs if info else {}, self.unclean_default())

    def _plan(self, t: str, p: int, decide: Callable[[PartitionState], election.Decision | None]
              ) -> tuple[PartitionState, PartitionState, election.Decision] | None:
        """(current, new, decision) of one partition from the cache, or None when nothing is to be written."""
        cur = self.cache.partition_state(t, p)
        if cur is None:
            return None
        d = decide(cur)
        if d is None:
            return None
        return cur, PartitionState(replicas=cur.replicas, leader=d.leader, leader_epoch=cur.leader_epoch + 1,
                                   isr=tuple(d.isr), controller_epoch=self.epoch, version=cur.version), d

    def _written(self, t: str, p: int, planned: tuple[PartitionState, PartitionState, election.Decision],
                 version: int, started: float) -> PartitionState:
        """Cache a state ZooKeeper accepted (znode `version`), count and log the election."""
        cur, new, d = planned
        written = replace(new, version=version)
        self.cache.put_state(t, p, written)
        if d.leader != cur.leader and d.leader != NO_LEADER:
            self._elected(started, d.unclean)
        elif d.unclean:
            self.unclean_leader_elections += 1
        if d.unclean:
            log.warning("controller %d: UNCLEAN leader election for %s-%d: leader %d (ISR was %s)",
                        self.me, t, p, d.leader, list(cur.isr))
        return written

    def _write_state(self, t: str, p: int,
                     decide: Callable[[PartitionState], election.Decision | None]) -> PartitionState | None:
        """Apply `decide` to the current state with a conditional, fenced write; re-read and retry when the
        state moved underneath (a leader's ISR change). Returns the state written (or None)."""
        started = time.monotonic()
        for _ in range(5):
            planned = self._plan(t, p, decide)
            if planned is None:
                return None
            new = planned[1]

            def build(tx: Any, new: PartitionState = new) -> None:
                tx.set_data(zp.state_path(t, p), zp.encode_state(new), version=new.version)
            res = self._commit(build)
            if isinstance(res[0], Exception):
                refresh_state(self.zk, self.cache, t, p)
                continue
            return self._written(t, p, planned, res[0].version, started)
        return None

    def _write_states(self, items: Iterable[tuple[str, int, Decide]]) -> dict[tuple[str, int], PartitionState]:
        """`_write_state` for many partitions, batched and pipelined (state_writes.py); the states written."""
        return write_states(self, items)

    def _elected(self, started: float, unclean: bool = False) -> None:
        self.leader_elections += 1
        if unclean:
            self.unclean_leader_elections += 1
        if self.on_leader_election is not None:
            try:
                self.on_leader_election((time.monotonic() - started) * 1000, unclean)
            except Exception:
                log.exception("leader election hook failed")

    # ------------------------------------------------------------ reconcile

    def _reconcile(self) -> None:
        live = self.cache.live_broker_ids()
        czxids = self.cache.broker_czxids()
        bounced = {b for b in live if b in self._czxids and self._czxids[b] != czxids.get(b)}
        if bounced:
            # Restarted between two looks (kill -9 then start): handle as a failure first, as Kafka does.
            log.info("controller %d: brokers %s bounced", self.me, sorted(bounced))
            self._reconcile_with(live - bounced)
        self._czxids = czxids
        self._reconcile_with(live)

    def _reconcile_with(self, live: set[int]) -> None:
        cache = self.cache
        shutting = cache.shutting_down_brokers() & live
        for b in shutting:
            self._shutdown_seen.setdefault(b, time.monotonic())
        self._process_deletes()
        process_legacy_reassignment(self, live)
        self._process_preferred_znode(live)
        moves: list[tuple[str, int, Decide]] = []
        writes: list[tuple[str, int, Decide]] = []
        reassigning: list[tuple[str, int]] = []
        missing: list[tuple[str, int, tuple[int, ...]]] = []
        offline = cache.offline_replicas()
        for t, a in cache.assignments().items():
            if t in cache.pending_deletes():
                continue
            unclean = self._unclean(t)
            for p, replicas in a.partitions.items():
                s = cache.partition_state(t, p)
                if s is None:
                    missing.append((t, p, replicas))
                    continue
                _plan_write(moves, writes, t, p, s, live, shutting, unclean, offline)
                if a.reassigning(p):
                    reassigning.append((t, p))
        again = create_states(self, missing, live, PIPELINE) > 0  # those that existed: reconcile them next
        self._write_leaders_first(moves, writes)
        for t, p in reassigning:
            again |= self._maybe_complete_reassignment(t, p, live, shutting)
        self._answer_shutdowns(shutting)
        if again:
            self.enqueue("reconcile")

    def _reconcile_partitions(self, keys: set[tuple[str, int]]) -> None:
        cache = self.cache
        live = cache.live_broker_ids()
        shutting = cache.shutting_down_brokers() & live
        deleting = cache.pending_deletes()
        offline = cache.offline_replicas()
        moves: list[tuple[str, int, Decide]] = []
        writes: list[tuple[str, int, Decide]] = []
        reassigning: list[tuple[str, int]] = []
        for t, p in sorted(keys):
            a = cache.assignment(t)
            s = cache.partition_state(t, p)
            if t in deleting or a is None or s is None:
                continue
            _plan_write(moves, writes, t, p, s, live, shutting, self._unclean(t), offline)
            if a.reassigning(p):
                reassigning.append((t, p))
        self._write_leaders_first(moves, writes)
        if any([self._maybe_complete_reassignment(t, p, live, shutting) for t, p in reassigning]):
            self.enqueue("reconcile")

    def _write_leaders_first(self, moves: list[tuple[str, int, Decide]],
                             rest: list[tuple[str, int, Decide]]) -> None:
        """The partitions that need a new leader, all written and acknowledged, before the others (ISR shrinks):
        Kafka's KafkaController.onReplicasBecomeOffline order (PartitionStateMachine to OnlinePartition, then
        ReplicaStateMachine to OfflineReplica). Each write bumps the leader epoch and every broker re-reads and
        re-applies it, so with one broker of three dead, two thirds of the writes are ISR shrinks; in assignment
        order they delayed the last new leader until the last of them."""
        self._write_states(moves)
        self._write_states(rest)

    def _answer_shutdowns(self, shutting: set[int]) -> None:
        zk = self.zk
        states = self.cache.partition_states()
        for b in shutting:
            path = zp.controlled_shutdown_path(b)
            try:
                data, stat = zk.get(path)
            except NoNodeError:
                continue
            if zp.decode_shutdown(data).get("status") != "requested":
                continue
            remaining = sum(1 for s in states.values() if s.leader == b and len(s.replicas) > 1)
            try:
                zk.set(path, zp.encode_shutdown(b, "done", remaining), version=stat.version)
            except (BadVersionError, NoNodeError):
                pass
            seen = self._shutdown_seen.pop(b, None)
            log.info("controller %d: controlled shutdown of broker %d done in %.2fs (%d partitions still led)",
                     self.me, b, -1.0 if seen is None else time.monotonic() - seen, remaining)

    def _process_deletes(self) -> None:
        zk = self.zk
        for t in sorted(self.cache.pending_deletes()):
            try:
                parts = zk.get_children(zp.partitions_path(t))
            except NoNodeError:
                parts = []
            ops: list[str] = []
            for p in parts:
                try:
                    if zk.exists(zp.state_path(t, int(p))):
                        ops.append(zp.state_path(t, int(p)))
                except ValueError:
                    continue
                ops.append(zp.partition_path(t, int(p)))
            if parts or zk.exists(zp.partitions_path(t)):
                ops.append(zp.partitions_path(t))
            if zk.exists(zp.topic_path(t)):
                ops.append(zp.topic_path(t))
            if zk.exists(zp.topic_config_path(t)):
                ops.append(zp.topic_config_path(t))
            ops.append(zp.delete_topic_path(t))

            def build(tx, ops=ops) -> None:
                for path in ops:
                    tx.delete(path)
            res = self._commit(build)
            bad = [r for r in res if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
            if bad and not all(isinstance(r, (NoNodeError, NotEmptyError)) for r in bad):
                log.warning("controller %d: deleting topic %s: %r", self.me, t, bad)
            if bad:
                self.enqueue("delete")  # someone raced us (a new partition): retry with a fresh listing
            else:
                log.info("controller %d: deleted topic %s", self.me, t)

    # ------------------------------------------------------------ reassignment

    def _maybe_complete_reassignment(self, t: str, p: int, live: set[int], shutting: set[int]) -> bool:
        """Phase B: once every target replica is in the ISR, lead from the target set and drop the others.
        Returns True when a retry is needed (the topic znode moved)."""
        started = time.monotonic()
        a = self.cache.assignment(t)
        cur = self.cache.partition_state(t, p)
        if a is None or cur is None or not a.reassigning(p):
            return False
        trs = a.target(p)
        if not set(trs) <= set(cur.isr):
            return False
        leader: int | None = cur.leader
        if leader not in trs or leader not in live or leader in shutting:
            leader = election.clean_leader(trs, cur.isr, live, exclude=shutting)
            if leader is None:
                leader = election.clean_leader(trs, cur.isr, live)
        if leader is None:
            return False
        new_state = PartitionState(replicas=trs, leader=leader, leader_epoch=cur.leader_epoch + 1,
                                   isr=tuple(r for r in cur.isr if r in trs), controller_epoch=self.epoch,
                                   version=cur.version)
        adding, removing = dict(a.adding), dict(a.removing)
        adding.pop(p, None)
        removing.pop(p, None)
        new_a = replace(a, partitions={**a.partitions, p: trs}, adding=adding, removing=removing)

        def build(tx) -> None:
            tx.set_data(zp.state_path(t, p), zp.encode_state(new_state), version=cur.version)
            tx.set_data(zp.topic_path(t), zp.encode_topic(new_a), version=a.version)
        res = self._commit(build)
        if any(isinstance(r, Exception) for r in res):
            refresh_state(self.zk, self.cache, t, p)
            refresh_topic(self.zk, self.cache, t)
            return True
        self.cache.put_assignment(t, replace(new_a, version=res[1].version))
        self.cache.put_state(t, p, replace(new_state, version=res[0].version))
        if leader != cur.leader:
            self._elected(started)
        log.info("controller %d: reassignment of %s-%d complete: replicas %s", self.me, t, p, list(trs))
        finish_legacy_reassignment(self, t, p)
        return False

    # ------------------------------------------------------------ preferred leaders

    def _process_preferred_znode(self, live: set[int]) -> None:
        zk = self.zk
        try:
            data, stat = zk.get(zp.PREFERRED_REPLICA_ELECTION)
        except NoNodeError:
            return
        try:
            parts = zp.decode_partition_list(data)
        except (ValueError, KeyError):
            parts = []
        self.elect(PREFERRED, parts)
        self._commit(lambda tx: tx.delete(zp.PREFERRED_REPLICA_ELECTION))

    def rebalance(self) -> int:
        """Preferred-leader rebalance for brokers above leader.imbalance.per.broker.percentage; returns the
        number of partitions moved back to their preferred leader."""
        if not self.active:
            return 0
        cache = self.cache
        live = cache.live_broker_ids()
        shutting = cache.shutting_down_brokers()
        reassigning = set(cache.reassignments())
        deleting = cache.pending_deletes()
        states = {k: s for k, s in cache.partition_states().items() if k not in reassigning and k[0] not in deleting}
        brokers = election.imbalanced_brokers(((s.replicas, s.leader) for s in states.values()),
                                              self.settings.leader_imbalance_per_broker_percentage)
        def decide(c: PartitionState) -> election.Decision | None:
            return election.preferred(c.replicas, c.leader, c.isr, live, shutting)[1]
        moved = len(self._write_states((t, p, decide) for (t, p), s in sorted(states.items())
                                       if s.replicas and s.replicas[0] in brokers and s.leader != s.replicas[0]))
        if moved:
            log.info("controller %d: preferred-leader rebalance moved %d partitions", self.me, moved)
        return moved

    def elect(self, election_type: int, partitions: Sequence[tuple[str, int]] | None
              ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """ElectLeaders on the controller thread (elect_leaders.py)."""
        if not self.active:
            raise RuntimeError("not the controller")
        return elect_leaders(self, election_type, partitions)
