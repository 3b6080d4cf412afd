"""A transactional id's state, as Kafka's TransactionMetadata and TransactionState (KIP-98).

Pure logic: every decision takes `now_ms`; nothing here does I/O. A change is made in two steps, as in Kafka:
`prepare_*` checks the transition and returns the target (`TxnTransit`), which the coordinator persists to
`__transaction_state`; `complete(transit)` applies it once written. While a write is in flight the id has a
pending state and every other request gets CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from broker.errors import ErrorCode, KafkaError

MAX_EPOCH = 32767  # Short.MAX_VALUE: the epoch after it needs a new producer id


class TxnState(enum.IntEnum):
    """Kafka's TransactionState, with its ids in TransactionLogValue.TransactionStatus."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions / ListTransactions use (TransactionState.name in Kafka)."""
        return "".join(w.capitalize() for w in self.name.split("_"))


_S = TxnState
# TransactionState.validPreviousStates
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
COMPLETED = frozenset({_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """What a transition writes (Kafka's TxnTransitMetadata): the whole state after it."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    start_ms: int
    update_ms: int


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    pending: TxnState | None = None  # the state being written
    coordinator_epoch: int = 0

    # ---------------------------------------------------------------- transitions

    def _transit(self, state: TxnState, now_ms: int, **changes: object) -> TxnTransit:
        if self.pending is not None:
            raise KafkaError(ErrorCode.concurrent_transactions, f"{self.transactional_id}: {self.pending.name} "
                             "is being written")
        if self.state not in VALID_PREVIOUS[state]:
            raise KafkaError(ErrorCode.invalid_txn_state,
                             f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name}")
        base = TxnTransit(self.producer_id, self.last_producer_id, self.producer_epoch, self.last_producer_epoch,
                          self.timeout_ms, state, frozenset(self.partitions), self.start_ms, now_ms)
        transit = replace(base, **changes)  # type: ignore[arg-type]
        self.pending = state
        return transit

    def prepare_init(self, new_producer_id: int | None, timeout_ms: int, now_ms: int) -> TxnTransit:
        """InitProducerId on an idle id: bump the epoch (a new producer id when the epoch is exhausted, passed
        in as `new_producer_id`), back to Empty with no partitions (prepareIncrementProducerEpoch)."""
        if new_producer_id is not None:
            return self._transit(TxnState.EMPTY, now_ms, producer_id=new_producer_id,
                                 last_producer_id=self.producer_id, producer_epoch=0, last_producer_epoch=-1,
                                 timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1)
        return self._transit(TxnState.EMPTY, now_ms, producer_epoch=self.producer_epoch + 1,
                             last_producer_epoch=self.producer_epoch, timeout_ms=timeout_ms,
                             partitions=frozenset(), start_ms=-1)

    def needs_new_producer_id(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def prepare_fence(self, now_ms: int) -> TxnTransit:
        """Fence the producer of an ongoing transaction by bumping its epoch before aborting it
        (prepareFenceProducerEpoch: a newer InitProducerId, or the transaction timed out). Kept in memory
        only, as Kafka does: the abort that follows is written with the new epoch."""
        epoch = self.producer_epoch + 1 if self.producer_epoch < MAX_EPOCH else self.producer_epoch
        return self._transit(TxnState.PREPARE_EPOCH_FENCE, now_ms, producer_epoch=epoch,
                             last_producer_epoch=self.producer_epoch)

    def prepare_add_partitions(self, partitions: set[tuple[str, int]], now_ms: int) -> TxnTransit:
        """AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with these partitions too; a new transaction starts
        its clock now (prepareAddPartitions)."""
        start = now_ms if self.state in (TxnState.EMPTY, *COMPLETED) else self.start_ms
        return self._transit(TxnState.ONGOING, now_ms, partitions=frozenset(self.partitions | partitions),
                             start_ms=start)

    def prepare_end(self, commit: bool, now_ms: int) -> TxnTransit:
        """EndTxn (or a timeout/fence abort): PrepareCommit or PrepareAbort (prepareAbortOrCommit)."""
        return self._transit(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Markers written: CompleteCommit / CompleteAbort, the partitions forgotten (prepareComplete)."""
        state = TxnState.COMPLETE_COMMIT if self.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        return self._transit(state, now_ms, partitions=frozenset())

    def prepare_dead(self, now_ms: int) -> TxnTransit:
        """transactional.id.expiration.ms passed with nothing ongoing: the id is removed (a tombstone)."""
        return self._transit(TxnState.DEAD, now_ms, partitions=frozenset())

    def complete(self, transit: TxnTransit) -> None:
        """Apply a transition once written (completeTransitionTo)."""
        self.producer_id, self.last_producer_id = transit.producer_id, transit.last_producer_id
        self.producer_epoch, self.last_producer_epoch = transit.producer_epoch, transit.last_producer_epoch
        self.timeout_ms, self.state = transit.timeout_ms, transit.state
        self.partitions = set(transit.partitions)
        self.start_ms, self.update_ms = transit.start_ms, transit.update_ms
        self.pending = None

    def abandon(self) -> None:
        """A write failed: the transition is dropped and the state stays as it was."""
        self.pending = None

    # ---------------------------------------------------------------- questions

    def expired(self, now_ms: int) -> bool:
        """An ongoing transaction past its transaction.timeout.ms (timedOutTransactions)."""
        return self.state == TxnState.ONGOING and self.pending is None and now_ms > self.start_ms + self.timeout_ms

    def idle_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """Nothing ongoing and unused for transactional.id.expiration.ms."""
        return (self.state in (TxnState.EMPTY, *COMPLETED) and self.pending is None
                and now_ms - self.update_ms >= expiration_ms)

    @classmethod
    def from_transit(cls, transactional_id: str, transit: TxnTransit) -> TransactionMetadata:
        """Rebuilt from a `__transaction_state` record when the partition loads."""
        md = cls(transactional_id, transit.producer_id, transit.producer_epoch, transit.timeout_ms)
        md.complete(transit)
        return md
