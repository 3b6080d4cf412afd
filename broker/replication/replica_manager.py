"""Replica manager: this broker's role for each partition it hosts, the leader's view of its followers,
the high watermark, ISR shrink/expand, and the acks=all wait.

It is the `ClusterListener` of the metadata store: partition states arrive here (on the event loop) and
make this broker leader or follower. ISR decisions are the pure functions of `isr.py`; the ISR is
written through `MetadataStore.update_isr` (a conditional ZooKeeper write in cluster mode).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from broker.config import BrokerConfig
from broker.controller.state import PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.log.log import AppendResult, PartitionLog
from broker.log.manager import LogManager
from broker.purgatory import Attempt, Purgatory
from broker.replication import isr as isr_rules
from common.clock import Clock

if TYPE_CHECKING:
    from broker.metadata import MetadataStore

log = logging.getLogger(__name__)


def hw_key(topic: str, partition: int) -> tuple:
    """Purgatory key woken when the high watermark moves (consumer fetches, acks=all produces)."""
    return ("hw", topic, partition)


def leo_key(topic: str, partition: int) -> tuple:
    """Purgatory key woken when the leader's log end offset moves (follower fetches)."""
    return ("leo", topic, partition)


@dataclass(slots=True)
class ProducePartitionStatus:
    """One partition of an acks=all write waiting for the high watermark to pass its last offset (Kafka's
    ProducePartitionStatus in DelayedProduce)."""

    part: Partition
    last_offset: int
    leadership: int   # the partition's leadership at the append: lost since, the write fails
    outcome: ErrorCode | None = None   # None while undecided


@dataclass
class Partition:
    """A partition this broker hosts a replica of."""

    topic: str
    index: int
    log: PartitionLog
    state: PartitionState
    followers: dict[int, isr_rules.FollowerState] = field(default_factory=dict)
    epoch_start_offset: int = 0
    isr_update_in_flight: bool = False
    # Bumped each time this broker takes over leadership (not on a controller epoch bump while it stays
    # leader, e.g. an ISR shrink after a follower died): acks=all waiters fail only if leadership was lost.
    leadership: int = 0

    @property
    def is_leader_of(self) -> int:
        return self.state.leader

    @property
    def replicated(self) -> bool:
        return len(self.state.replicas) > 1


def effective_min_isr(part: Partition) -> int:
    """min.insync.replicas capped at the replication factor (Kafka's Partition.effectiveMinIsr): Kafka 3.9 takes an
    acks=all write to a partition of 1 replica when min.insync.replicas is 2."""
    return min(part.log.config.min_insync_replicas, len(part.state.replicas))


class ReplicaFetchers(Protocol):
    """What the replica manager asks of the follower side (fetcher.ReplicaFetcherManager)."""

    def follow(self, part: Partition, leader_id: int, leader_epoch: int) -> None:
        """Replicate `part` from `leader_id` at `leader_epoch` (truncating first)."""
    def unfollow(self, key: tuple[str, int]) -> None:
        """Stop replicating the partition, if followed."""
    def on_brokers_changed(self) -> None:
        """Brokers may have new endpoints: reconnect."""


class ReplicaManager:
    """Roles, high watermarks and ISR for every local replica."""

    def __init__(self, config: BrokerConfig, clock: Clock, logs: LogManager, store: MetadataStore,
                 purgatory: Purgatory, fetchers: ReplicaFetchers) -> None:
        self.broker_id = config.broker_id
        self.config = config
        self.clock = clock
        self.logs = logs
        self.store = store
        self.purgatory = purgatory
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Replicas whose log dir went offline (Kafka's HostedPartition.Offline): KAFKA_STORAGE_ERROR until restart.
        self.offline: set[tuple[str, int]] = set()
        self.fetchers = fetchers
        # Called with (topic, partition, is_leader) on role changes: the group coordinator follows
        # the leadership of __consumer_offsets partitions.
        self.role_listeners: list[Callable[[str, int, bool], None]] = []
        self.on_isr_change: Callable[[bool], None] = lambda shrink: None
        self._isr_task: asyncio.Task | None = None

    # ------------------------------------------------------------ ClusterListener

    def on_partition_state(self, topic: str, partition: int, state: PartitionState) -> None:
        key = (topic, partition)
        if key in self.offline:   # Kafka answers its LeaderAndIsr with KAFKA_STORAGE_ERROR and changes nothing
            if self.broker_id not in state.replicas:
                self.offline.discard(key)
            return
        if self.broker_id not in state.replicas:
            if key in self.partitions:  # reassigned away from this broker
                self._stop_following(key)
                del self.partitions[key]
                self.logs.delete_partition(topic, partition)
            return
        part = self.partitions.get(key)
        if part is None:
            part = Partition(topic, partition, self.logs.get_or_create(topic, partition), state)
            self.partitions[key] = part
            self._become(part, state, first=True)
        elif (state.leader, state.leader_epoch) != (part.state.leader, part.state.leader_epoch):
            self._become(part, state, first=False)
        else:
            part.state = state  # ISR or version changed (often our own write coming back)
            if state.leader == self.broker_id:
                self._maybe_advance_hw(part)

    def on_topic_deleted(self, topic: str) -> None:
        self.offline = {k for k in self.offline if k[0] != topic}
        for key in [k for k in self.partitions if k[0] == topic]:
            self._stop_following(key)
            part = self.partitions.pop(key)
            for notify in self.role_listeners:
                notify(topic, part.index, False)
            self.purgatory.notify(hw_key(*key))
            self.purgatory.notify(leo_key(*key))
        self.logs.delete_topic(topic)

    def on_topic_config_changed(self, topic: str) -> None:
        self.logs.update_config(topic)

    def on_brokers_changed(self) -> None:
        self.fetchers.on_brokers_changed()

    # ------------------------------------------------------------ role changes

    def _become(self, part: Partition, state: PartitionState, first: bool) -> None:
        was_leader = not first and part.state.leader == self.broker_id
        part.state = state
        key = (part.topic, part.index)
        if state.leader == self.broker_id:
            self._stop_following(key)
            if not was_leader:
                part.leadership += 1
            now = self.clock.now_ms()
            # Followers start with a fresh caught-up time, so a new leader does not shrink the ISR at once.
            part.followers = {r: isr_rules.FollowerState(last_caught_up_ms=now)
                              for r in state.replicas if r != self.broker_id}
            part.log.auto_high_watermark = not part.replicated
            part.log.leader_epochs.assign(state.leader_epoch, part.log.log_end_offset)
            part.epoch_start_offset = part.log.log_end_offset
            if not part.replicated:
                part.log.high_watermark = part.log.log_end_offset
            self._maybe_advance_hw(part)
            log.info("leader of %s-%d at epoch %d (ISR %s)", part.topic, part.index, state.leader_epoch,
                     list(state.isr))
        else:
            part.followers = {}
            part.log.auto_high_watermark = False
            if state.online:
                self.fetchers.follow(part, state.leader, state.leader_epoch)
            else:
                self._stop_following(key)
            log.info("follower of %s-%d (leader %d, epoch %d)", part.topic, part.index, state.leader,
                     state.leader_epoch)
        # Waiters on a partition whose role changed must re-check (NOT_LEADER_OR_FOLLOWER).
        self.purgatory.notify(hw_key(*key))
        self.purgatory.notify(leo_key(*key))
        is_leader = state.leader == self.broker_id
        if first or is_leader != was_leader:
            for notify in self.role_listeners:
                notify(part.topic, part.index, is_leader)

    def _stop_following(self, key: tuple[str, int]) -> None:
        self.fetchers.unfollow(key)

    def on_log_dir_failure(self, log_dir: Path) -> list[tuple[str, int]]:
        """Take every replica in `log_dir` offline (Kafka's ReplicaManager.handleLogDirFailure): no fetcher, no
        leadership here, KAFKA_STORAGE_ERROR to every request for it and to the acks=all writes waiting on it.
        Returns the replicas taken offline."""
        gone = [key for key, part in self.partitions.items() if self.logs.log_dir_of(part.log) == log_dir]
        for key in gone:
            self._stop_following(key)
            part = self.partitions.pop(key)
            self.offline.add(key)
            if part.state.leader == self.broker_id:
                for notify in self.role_listeners:
                    notify(part.topic, part.index, False)
            self.purgatory.notify(hw_key(*key))
            self.purgatory.notify(leo_key(*key))
        log.error("%d replicas in offline log dir %s are offline: %s", len(gone), log_dir,
                  ", ".join(f"{t}-{p}" for t, p in sorted(gone)[:20]) + (" ..." if len(gone) > 20 else ""))
        return gone

    # ------------------------------------------------------------ lookups

    def partition(self, topic: str, partition: int) -> Partition:
        part = self.partitions.get((topic, partition))
        if part is not None:
            return part
        if (topic, partition) in self.offline:
            raise KafkaError(ErrorCode.kafka_storage_error, f"{topic}-{partition} is in an offline log dir")
        info = self.store.topic(topic)
        if info is None or not 0 <= partition < info.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        raise KafkaError(ErrorCode.not_leader_or_follower, f"{topic}-{partition} has no replica here")

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition:
        """The partition if this broker leads it; Kafka's errors otherwise."""
        part = self.partition(topic, partition)
        if part.state.leader != self.broker_id:
            raise KafkaError(ErrorCode.not_leader_or_follower)
        self._check_epoch(part, current_leader_epoch)
        return part

    @staticmethod
    def _check_epoch(part: Partition, current_leader_epoch: int) -> None:
        if current_leader_epoch >= 0:
            if current_leader_epoch < part.state.leader_epoch:
                raise KafkaError(ErrorCode.fenced_leader_epoch)
            if current_leader_epoch > part.state.leader_epoch:
                raise KafkaError(ErrorCode.unknown_leader_epoch)

    def leader_log(self, topic: str, partition: int) -> PartitionLog:
        return self.leader_partition(topic, partition).log

    def local_partitions(self) -> Iterator[Partition]:
        return iter(self.partitions.values())

    # ------------------------------------------------------------ produce

    def append(self, topic: str, partition: int, records: bytes | memoryview, required_acks: int
               ) -> tuple[Partition, AppendResult]:
        """Append as leader; for acks=all, min.insync.replicas is checked before appending."""
        part = self.leader_partition(topic, partition)
        if required_acks == -1 and len(part.state.isr) < (min_isr := effective_min_isr(part)):
            raise KafkaError(ErrorCode.not_enough_replicas,
                             f"ISR {list(part.state.isr)} is smaller than min.insync.replicas {min_isr}")
        hw_before = part.log.high_watermark
        result = part.log.append_as_leader(records, part.state.leader_epoch)
        if not result.duplicate:
            self._appended(part, hw_before)
        return part, result

    def appending_together(self) -> AbstractContextManager[None]:
        """A block of appends whose parked fetches are completed once, with every partition appended, when it
        ends (Purgatory.held: Kafka's ReplicaManager completes delayed fetches after the whole produce)."""
        return self.purgatory.held()

    def append_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, commit: bool) -> tuple[Partition, int]:
        """WriteTxnMarkers: a COMMIT or ABORT marker appended as leader (Kafka appends it with
        AppendOrigin.COORDINATOR and acks=all). Returns the partition and the marker's offset."""
        part = self.leader_partition(topic, partition)
        hw_before = part.log.high_watermark
        offset = part.log.append_marker(producer_id, producer_epoch, coordinator_epoch, commit,
                                        part.state.leader_epoch)
        self._appended(part, hw_before)
        return part, offset

    def append_as_coordinator(self, topic: str, partition: int, records: bytes) -> tuple[Partition, int]:
        """A coordinator's transactional batch (TxnOffsetCommit): the partition and the batch's last offset."""
        part = self.leader_partition(topic, partition)
        hw_before = part.log.high_watermark
        last = part.log.append_as_coordinator(records, part.state.leader_epoch)
        self._appended(part, hw_before)
        return part, last

    def _appended(self, part: Partition, hw_before: int) -> None:
        self.purgatory.notify(leo_key(part.topic, part.index))
        if part.log.high_watermark != hw_before:  # unreplicated: the log moved its HW with the append
            self.purgatory.notify(hw_key(part.topic, part.index))
        self._maybe_advance_hw(part)

    def replication_outcome(self, part: Partition, last_offset: int, leadership: int) -> ErrorCode | None:
        """acks=all: the produce's outcome once decided (Kafka's DelayedProduce.tryComplete), None while the high
        watermark is still at or below `last_offset`. `leadership` is the partition's leadership at the append."""
        current = self.partitions.get((part.topic, part.index))
        if current is None and (part.topic, part.index) in self.offline:
            return ErrorCode.kafka_storage_error
        if current is not part or part.state.leader != self.broker_id or part.leadership != leadership:
            return ErrorCode.not_leader_or_follower
        if part.log.high_watermark <= last_offset:
            return None
        if len(part.state.isr) < effective_min_isr(part):
            return ErrorCode.not_enough_replicas_after_append
        return ErrorCode.none

    def decide(self, statuses: list[ProducePartitionStatus]) -> bool:
        """Record the outcome of every status that is decided now; True when none is left undecided."""
        left = False
        for s in statuses:
            if s.outcome is None:
                s.outcome = self.replication_outcome(s.part, s.last_offset, s.leadership)
                left = left or s.outcome is None
        return not left

    async def await_replication(self, statuses: list[ProducePartitionStatus], deadline: float,
                                on_complete: Callable[[], None] | None = None,
                                on_park: Callable[[], None] | None = None) -> bool:
        """acks=all: park until every status is decided, or the monotonic `deadline` passes (the rest then time
        out): Kafka's DelayedProduce, one timeout for the request. With `on_complete`, the purgatory calls it
        inside the notify that decides the last partition (DelayedProduce.onComplete in the notifying thread),
        and True is returned: the caller answered there. False: every outcome is in the statuses. `on_park` is
        called before the first park, never when everything is decided at once (the request's remote time
        starts there)."""
        completed = False

        def complete(_moved: list) -> Attempt:
            nonlocal completed
            try:
                if not self.decide(statuses):
                    return Attempt.WATCH
            except Exception:   # never into the notifier (another request's fetch): decided again on resuming
                log.exception("completing a produce in the purgatory failed")
                return Attempt.RESUME
            completed = True
            assert on_complete is not None
            on_complete()
            return Attempt.COMPLETED

        while not self.decide(statuses):
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                for s in statuses:
                    if s.outcome is None:
                        s.outcome = ErrorCode.request_timed_out
                break
            keys = [hw_key(s.part.topic, s.part.index) for s in statuses if s.outcome is None]
            if on_park is not None:
                on_park()
                on_park = None
            await self.purgatory.wait(keys, remaining, kind="Produce",
                                      complete=complete if on_complete is not None else None)
            if completed:
                return True
        return False

    async def wait_for_replication(self, part: Partition, last_offset: int, timeout_s: float,
                                   leadership: int | None = None) -> ErrorCode:
        """acks=all for one partition: wait until the high watermark passes `last_offset`; `leadership` is the
        partition's at the append (default: its current one)."""
        status = ProducePartitionStatus(part, last_offset, part.leadership if leadership is None else leadership)
        await self.await_replication([status], self.clock.monotonic() + timeout_s)
        assert status.outcome is not None
        return status.outcome

    # ------------------------------------------------------------ high watermark and ISR

    def _maybe_advance_hw(self, part: Partition) -> None:
        if part.state.leader != self.broker_id:
            return
        old = part.log.high_watermark
        new = isr_rules.high_watermark(self.broker_id, part.log.log_end_offset, part.state.isr, part.followers,
                                       old)
        if new != old:
            part.log.high_watermark = new
            self.purgatory.notify(hw_key(part.topic, part.index))

    def on_follower_fetch(self, part: Partition, replica_id: int, fetch_offset: int) -> None:
        """Leader side of a follower's Fetch: its log end offset, caught-up time, ISR expansion, HW."""
        follower = part.followers.setdefault(replica_id, isr_rules.FollowerState())
        follower.on_fetch(fetch_offset, part.log.log_end_offset, self.clock.now_ms())
        if (replica_id not in part.state.isr and replica_id in part.state.replicas
                and replica_id not in self.store.shutting_down_brokers()
                and isr_rules.can_join_isr(follower, part.log.high_watermark, part.epoch_start_offset)):
            self._write_isr(part, tuple(sorted(set(part.state.isr) | {replica_id})), shrink=False)
        self._maybe_advance_hw(part)

    def on_quiet_follower_fetch(self, topic: str, partition: int, replica_id: int, fetch_offset: int,
                                leader_epoch: int, sent_high_watermark: int, sent_log_start_offset: int) -> bool:
        """The cheap case of `on_follower_fetch`, for a partition of a follower's incremental fetch session: True
        when the follower, in the ISR, asks again for the log end offset it already had and the high watermark
        and log start offset are those its session was last told. Then only its fetch state is updated (it
        stays caught up): its log end offset is unchanged, so neither the ISR nor the high watermark can move,
        and the answer leaves the partition out. False (nothing updated): the full path must run."""
        part = self.partitions.get((topic, partition))
        if part is None or part.state.leader != self.broker_id:
            return False
        if leader_epoch >= 0 and leader_epoch != part.state.leader_epoch:
            return False
        plog = part.log
        follower = part.followers.get(replica_id)
        if (follower is None or fetch_offset != plog.log_end_offset or follower.log_end_offset != fetch_offset
                or plog.high_watermark != sent_high_watermark or plog.log_start_offset != sent_log_start_offset
                or replica_id not in part.state.isr):
            return False
        follower.on_fetch(fetch_offset, fetch_offset, self.clock.now_ms())
        return True

    @staticmethod
    def on_follower_progress(part: Partition, leader_high_watermark: int) -> None:
        """Follower side: the leader's high watermark, bounded by what we have (the fetchers' progress callback;
        static, so the fetcher manager can be built before the replica manager that uses it)."""
        part.log.high_watermark = max(part.log.high_watermark,
                                      min(leader_high_watermark, part.log.log_end_offset))

    def shrink_isrs(self) -> None:
        """Drop followers that fell behind for replica.lag.time.max.ms (run periodically)."""
        now = self.clock.now_ms()
        for part in list(self.partitions.values()):
            if part.state.leader != self.broker_id or not part.replicated:
                continue
            lagging = isr_rules.out_of_sync_replicas(self.broker_id, part.state.isr, part.followers, now,
                                                     self.config.replica_lag_time_max_ms)
            if lagging:
                log.info("shrinking ISR of %s-%d: %s out of sync", part.topic, part.index, sorted(lagging))
                self._write_isr(part, tuple(r for r in part.state.isr if r not in lagging), shrink=True)

    def _write_isr(self, part: Partition, isr: tuple[int, ...], shrink: bool) -> None:
        """Sent without waiting (MetadataStore.submit_isr_update): a ZooKeeper round trip per partition on the
        event loop stalled every fetch while thousands of ISRs changed at once."""
        if part.isr_update_in_flight or isr == part.state.isr:
            return
        part.isr_update_in_flight = True
        self.store.submit_isr_update(part.topic, part.index, part.state, isr,
                                     lambda new_state: self._isr_written(part, new_state, shrink))

    def _isr_written(self, part: Partition, new_state: PartitionState | None, shrink: bool) -> None:
        part.isr_update_in_flight = False
        if new_state is None:
            log.info("ISR update of %s-%d lost a race; waiting for the new state", part.topic, part.index)
            return
        if new_state.version < part.state.version:  # a newer state (the controller's) arrived meanwhile
            return
        part.state = new_state
        self.on_isr_change(shrink)
        self._maybe_advance_hw(part)
        self.purgatory.notify(hw_key(part.topic, part.index))  # acks=all waiters re-check min ISR

    async def run(self) -> None:
        """Periodic ISR shrink check, every half of replica.lag.time.max.ms (as Kafka schedules it)."""
        interval = max(self.config.replica_lag_time_max_ms / 2000, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                self.shrink_isrs()
            except Exception:
                log.exception("ISR check failed")
