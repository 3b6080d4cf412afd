"""Kafka's TransactionCoordinator with its TransactionStateManager: the transactional ids of the
`__transaction_state` partitions this broker leads, their state machine and its persistence (KIP-98).

I/O goes through two small interfaces the broker implements: `TxnStateLog` (append to / read a
`__transaction_state` partition) and `MarkerWriter` (WriteTxnMarkers to the partitions' leaders, Kafka's
TransactionMarkerChannelManager). Time comes from the clock passed in. Markers of a commit or abort are written
after EndTxn is answered, as in Kafka; the id then stays in PrepareCommit/PrepareAbort (CONCURRENT_TRANSACTIONS
to its producer) until every marker is written and CompleteCommit/CompleteAbort is persisted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from broker.coordinator.group_metadata_manager import coordinator_partition
from broker.coordinator.loading import apply_readable
from broker.coordinator.transaction import log_schema
from broker.coordinator.transaction.metadata import COMPLETED, TransactionMetadata, TxnState, TxnTransit
from broker.errors import ErrorCode, KafkaError
from common.clock import Clock

if TYPE_CHECKING:
    from broker.config import BrokerConfig

log = logging.getLogger(__name__)

TXN_STATE_TOPIC = "__transaction_state"
Partitions = set[tuple[str, int]]


class TxnStateLog(Protocol):
    async def append(self, partition: int, key: bytes, value: bytes | None) -> None:
        """Append one record and wait until it is committed; raises KafkaError."""

    def read(self, partition: int) -> Iterable[tuple[bytes, bytes | None]]:
        """Every (key, value) of the partition, oldest first."""


class MarkerWriter(Protocol):
    async def write(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                    partitions: Partitions) -> None:
        """Write the marker to every partition's leader, retrying until done or the partition is gone."""


class TransactionCoordinator:
    def __init__(self, config: BrokerConfig, clock: Clock, state_log: TxnStateLog, markers: MarkerWriter,
                 allocate_producer_id: Callable[[], int]) -> None:
        self._config = config
        self._clock = clock
        self._log = state_log
        self._markers = markers
        self._allocate = allocate_producer_id
        self._owned: dict[int, dict[str, TransactionMetadata]] = {}  # txn state partition -> ids
        self._epochs: dict[int, int] = {}  # coordinator epoch per owned partition (its leader epoch)
        self._loading: set[int] = set()
        self._tasks: set[asyncio.Task] = set()
        # Called when markers complete a transaction, with (producer id, commit, partitions): the group
        # coordinator makes TxnOffsetCommit offsets visible on commit.
        self.on_complete: Callable[[int, bool, Partitions], None] | None = None
        # Called with the ms each partition load took (the metrics' partition-load-time).
        self.on_partition_loaded: Callable[[float], None] | None = None

    # ---------------------------------------------------------------- ownership

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's TransactionStateManager.partitionFor: abs(String.hashCode) % num partitions."""
        return coordinator_partition(transactional_id, self._config.transaction_state_log_num_partitions)

    def _lookup(self, transactional_id: str) -> tuple[dict[str, TransactionMetadata], int]:
        p = self.partition_for(transactional_id)
        if p in self._loading:
            raise KafkaError(ErrorCode.coordinator_load_in_progress)
        ids = self._owned.get(p)
        if ids is None:
            raise KafkaError(ErrorCode.not_coordinator)
        return ids, p

    def _get(self, transactional_id: str) -> TransactionMetadata:
        ids, _ = self._lookup(transactional_id)
        md = ids.get(transactional_id)
        if md is None:
            raise KafkaError(ErrorCode.invalid_producer_id_mapping, f"unknown transactional id {transactional_id}")
        return md

    # ---------------------------------------------------------------- persistence

    async def _persist(self, md: TransactionMetadata, transit: TxnTransit) -> None:
        p = self.partition_for(md.transactional_id)
        value = None if transit.state == TxnState.DEAD else log_schema.encode_value(transit)
        try:
            await self._log.append(p, log_schema.encode_key(md.transactional_id), value)
        except KafkaError as e:
            md.abandon()
            # TransactionStateManager.appendTransactionToLog's error mapping for the client.
            if e.code in (ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition):
                raise KafkaError(ErrorCode.not_coordinator, e.message) from None
            raise KafkaError(ErrorCode.coordinator_not_available, e.message) from None
        if self._owned.get(p) is None:  # unloaded while writing: another broker owns it now
            raise KafkaError(ErrorCode.not_coordinator)
        md.complete(transit)

    # ---------------------------------------------------------------- InitProducerId

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_pid: int = -1,
                               expected_epoch: int = -1) -> tuple[int, int]:
        """(producer id, epoch) for a transactional producer (handleInitProducerId). An ongoing transaction is
        aborted with a bumped epoch (the old producer is fenced) and CONCURRENT_TRANSACTIONS asks the caller to
        retry once the abort is done."""
        if not 0 < timeout_ms <= self._config.transaction_max_timeout_ms:
            raise KafkaError(ErrorCode.invalid_transaction_timeout,
                             f"transaction.timeout.ms {timeout_ms} is not in (0, transaction.max.timeout.ms "
                             f"{self._config.transaction_max_timeout_ms}]")
        ids, _ = self._lookup(transactional_id)
        now = self._clock.now_ms()
        md = ids.get(transactional_id)
        if md is None:
            md = ids[transactional_id] = TransactionMetadata(transactional_id, self._allocate(), -1, timeout_ms,
                                                             update_ms=now)
        if md.pending is not None or md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                                                  TxnState.PREPARE_EPOCH_FENCE):
            raise KafkaError(ErrorCode.concurrent_transactions)
        if md.state == TxnState.ONGOING:
            self._fence_and_abort(md, now)
            raise KafkaError(ErrorCode.concurrent_transactions, "aborting the fenced producer's transaction")
        if expected_pid >= 0 and (expected_pid, expected_epoch) not in (
                (md.producer_id, md.producer_epoch), (md.last_producer_id, md.last_producer_epoch)):
            # KIP-360: a producer bumping its own epoch must still be the current one.
            raise KafkaError(ErrorCode.producer_fenced, f"{transactional_id}: producer {expected_pid} epoch "
                             f"{expected_epoch} is not the current {md.producer_id}/{md.producer_epoch}")
        new_pid = self._allocate() if md.needs_new_producer_id() else None
        await self._persist(md, md.prepare_init(new_pid, timeout_ms, now))
        return md.producer_id, md.producer_epoch

    # ---------------------------------------------------------------- AddPartitionsToTxn / AddOffsetsToTxn

    def _check_producer(self, md: TransactionMetadata, producer_id: int, producer_epoch: int) -> None:
        if md.producer_id != producer_id:
            raise KafkaError(ErrorCode.invalid_producer_id_mapping,
                             f"{md.transactional_id} is mapped to producer {md.producer_id}, not {producer_id}")
        if md.producer_epoch != producer_epoch:
            raise KafkaError(ErrorCode.producer_fenced,
                             f"epoch {producer_epoch} is not the current epoch {md.producer_epoch}")

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Partitions) -> None:
        """Add partitions to the (maybe new) transaction (handleAddPartitionsToTransaction)."""
        md = self._get(transactional_id)
        self._check_producer(md, producer_id, producer_epoch)
        if md.pending is not None or md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                                                  TxnState.PREPARE_EPOCH_FENCE):
            raise KafkaError(ErrorCode.concurrent_transactions)
        if md.state == TxnState.ONGOING and partitions <= md.partitions:
            return  # nothing new: no write (Kafka answers at once too)
        await self._persist(md, md.prepare_add_partitions(partitions, self._clock.now_ms()))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Partitions) -> ErrorCode:
        """KIP-890 part 1 (AddPartitionsToTxn v4 verifyOnly): is each partition in the ongoing transaction?"""
        try:
            md = self._get(transactional_id)
            self._check_producer(md, producer_id, producer_epoch)
        except KafkaError as e:
            return e.code
        if md.state != TxnState.ONGOING or not partitions <= md.partitions:
            return ErrorCode.invalid_txn_state
        return ErrorCode.none

    # ---------------------------------------------------------------- EndTxn

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """EndTxn (handleEndTransaction): PrepareCommit/PrepareAbort written, markers and completion after."""
        md = self._get(transactional_id)
        self._check_producer(md, producer_id, producer_epoch)
        if md.pending is not None:
            raise KafkaError(ErrorCode.concurrent_transactions)
        state = md.state
        if state == TxnState.ONGOING:
            await self._persist(md, md.prepare_end(commit, self._clock.now_ms()))
            self._spawn(self._complete(md))
            return
        # A retry of an end already decided: OK if it is the same, else INVALID_TXN_STATE.
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            if (state == TxnState.COMPLETE_COMMIT) == commit:
                return
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            if (state == TxnState.PREPARE_COMMIT) == commit:
                raise KafkaError(ErrorCode.concurrent_transactions)
        raise KafkaError(ErrorCode.invalid_txn_state,
                         f"{transactional_id} is {state.kafka_name}: cannot {'commit' if commit else 'abort'}")

    def _fence_and_abort(self, md: TransactionMetadata, now: int) -> None:
        """Bump the epoch in memory (PrepareEpochFence) and abort with it (Kafka does not persist the fence)."""
        md.complete(md.prepare_fence(now))
        self._spawn(self._abort_fenced(md))

    async def _abort_fenced(self, md: TransactionMetadata) -> None:
        try:
            await self._persist(md, md.prepare_end(False, self._clock.now_ms()))
        except KafkaError as e:
            log.warning("aborting %s failed: %s", md.transactional_id, e)
            md.state = TxnState.ONGOING  # with the bumped epoch: the timeout tries again
            return
        await self._complete(md)

    async def _complete(self, md: TransactionMetadata) -> None:
        """Write the markers, then CompleteCommit/CompleteAbort (TransactionMarkerChannelManager's completion)."""
        commit = md.state == TxnState.PREPARE_COMMIT
        partitions = set(md.partitions)
        epoch = self._epochs.get(self.partition_for(md.transactional_id), 0)
        await self._markers.write(md.producer_id, md.producer_epoch, epoch, commit, partitions)
        if self.on_complete is not None:
            self.on_complete(md.producer_id, commit, partitions)
        for attempt in range(100):  # bounded: a coordinator move hands the id to the new owner's reload
            try:
                await self._persist(md, md.prepare_complete(self._clock.now_ms()))
                return
            except KafkaError as e:
                if e.code == ErrorCode.not_coordinator:
                    return
                log.warning("completing %s failed (attempt %d): %s", md.transactional_id, attempt, e)
                await asyncio.sleep(0.1 * min(attempt + 1, 10))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait until the marker writes started so far are done (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ---------------------------------------------------------------- timers

    async def abort_timed_out(self) -> int:
        """Abort ongoing transactions past their timeout, fencing their producers
        (abortTimedOutTransactions). Returns how many were started."""
        now = self._clock.now_ms()
        n = 0
        for ids in self._owned.values():
            for md in list(ids.values()):
                if md.expired(now):
                    self._fence_and_abort(md, now)
                    n += 1
        return n

    async def remove_expired(self) -> int:
        """Tombstone ids idle for transactional.id.expiration.ms (removeExpiredTransactionalIds)."""
        now = self._clock.now_ms()
        removed = 0
        for ids in list(self._owned.values()):
            for md in [m for m in ids.values() if m.idle_expired(now, self._config.transactional_id_expiration_ms)]:
                try:
                    await self._persist(md, md.prepare_dead(now))
                except KafkaError:
                    continue
                ids.pop(md.transactional_id, None)
                removed += 1
        return removed

    # ---------------------------------------------------------------- admin

    def describe(self, transactional_id: str) -> TransactionMetadata:
        ids, _ = self._lookup(transactional_id)
        md = ids.get(transactional_id)
        if md is None:
            raise KafkaError(ErrorCode.transactional_id_not_found)
        return md

    def list_transactions(self, states: set[str], producer_ids: set[int], min_duration_ms: int = -1
             ) -> list[TransactionMetadata]:
        """ListTransactions filters: state names, producer ids, running for at least `min_duration_ms`."""
        now = self._clock.now_ms()
        return [md for ids in self._owned.values() for md in ids.values()
                if (not states or md.state.kafka_name in states)
                and (not producer_ids or md.producer_id in producer_ids)
                and (min_duration_ms < 0 or (md.state == TxnState.ONGOING and now - md.start_ms >= min_duration_ms))]

    # ---------------------------------------------------------------- loading

    def load_partition(self, partition: int, coordinator_epoch: int) -> list[TransactionMetadata]:
        """Become coordinator of a `__transaction_state` partition: rebuild its ids from the log, then finish
        what was being committed or aborted (loadTransactionsForTxnTopicPartition). Ongoing transactions stay
        ongoing; the timeout aborts them if their producer is gone. Returns the ids being completed."""
        self._loading.add(partition)
        started = self._clock.monotonic()
        ids: dict[str, TransactionMetadata] = {}

        def apply(key: bytes, value: bytes | None) -> None:
            tid = log_schema.decode_key(key)
            if value is None:
                ids.pop(tid, None)
            else:
                ids[tid] = TransactionMetadata.from_transit(tid, log_schema.decode_value(value))

        try:
            apply_readable(self._log.read(partition), apply, f"{TXN_STATE_TOPIC}-{partition}")
        finally:
            self._loading.discard(partition)
        self._owned[partition] = ids
        self._epochs[partition] = coordinator_epoch
        if self.on_partition_loaded is not None:
            self.on_partition_loaded((self._clock.monotonic() - started) * 1000)
        resuming = [md for md in ids.values() if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)]
        for md in resuming:
            self._spawn(self._complete(md))
        for md in ids.values():
            if md.state == TxnState.PREPARE_EPOCH_FENCE:  # never persisted by us; Kafka's older versions did
                md.state = TxnState.ONGOING
        return resuming

    def unload_partition(self, partition: int) -> None:
        self._owned.pop(partition, None)
        self._epochs.pop(partition, None)

    def owned_partitions(self) -> list[int]:
        return sorted(self._owned)

    def ongoing_count(self) -> int:
        return sum(1 for ids in self._owned.values() for md in ids.values() if md.state not in COMPLETED
                   and md.state != TxnState.EMPTY)
