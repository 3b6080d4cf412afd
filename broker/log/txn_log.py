"""The transactional part of a partition's log (KIP-98), mixed into `PartitionLog`: producer-state tracking of
each appended batch (markers complete transactions, aborts go to the segment's `.txnindex`), the Last Stable
Offset, the aborted transactions a read_committed Fetch needs, and markers appended as leader."""

from __future__ import annotations

import logging
import threading
from bisect import bisect_right
from typing import TYPE_CHECKING

from broker.errors import ErrorCode, KafkaError
from broker.log.producer_state import ProducerStateManager
from broker.log.records import BatchHeader, read_header
from broker.log.txn_index import AbortedTxn, CompletedTxn, control_type, marker_batch
from common.clock import Clock

if TYPE_CHECKING:
    from broker.log.segment import LogSegment

log = logging.getLogger(__name__)


class TransactionalLog:
    """Needs the log's lock, segments, high watermark and producer state, and its `_append_assigned`."""

    topic: str
    partition: int
    clock: Clock
    lock: threading.RLock
    segments: list[LogSegment]
    _bases: list[int]
    high_watermark: int
    producer_state: ProducerStateManager
    # Completed transactions whose marker is not below the high watermark yet: still unstable, as the marker may
    # be lost to a leader change (Kafka's unreplicatedTxns).
    _unreplicated: list[CompletedTxn]

    def _append_assigned(self, buf: bytearray, h: BatchHeader, leader_epoch: int) -> tuple[int, int]:
        raise NotImplementedError

    def append_as_coordinator(self, records: bytes, leader_epoch: int) -> int:
        """Append a transactional batch a coordinator built (TxnOffsetCommit's offsets in `__consumer_offsets`;
        Kafka's AppendOrigin.COORDINATOR): it has no sequence, so only the producer epoch is checked. Returns
        its last offset."""
        buf = bytearray(records)
        h = read_header(buf)
        with self.lock:
            entry = self.producer_state.producers.get(h.producer_id)
            if entry is not None and h.producer_epoch < entry.epoch:
                raise KafkaError(ErrorCode.invalid_producer_epoch,
                                 f"epoch {h.producer_epoch} is older than the producer's {entry.epoch}")
            self._append_assigned(buf, h, leader_epoch)
            return h.last_offset

    def _track(self, seg: LogSegment, batch: bytes | memoryview, h: BatchHeader) -> None:
        """Producer state for a batch appended to `seg` (`batch`: its bytes, needed for a control batch); a
        marker completes its producer's transaction, and an abort is indexed in `seg`'s `.txnindex`."""
        kind = coordinator_epoch = -1
        if h.is_control and h.producer_id >= 0:
            try:
                kind, coordinator_epoch = control_type(batch)
            except ValueError as e:
                log.warning("%s-%d: unreadable control batch at %d: %s", self.topic, self.partition,
                            h.base_offset, e)
        done = self.producer_state.update(h, kind, coordinator_epoch)
        if done is None:
            return
        if done.last_offset >= self.high_watermark:
            self._unreplicated.append(done)
        if done.aborted:
            seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                            self.producer_state.last_stable_after(done)))
            if seg.txn_index.unwritten:
                log.warning("%s-%d: aborted transaction of producer %d not yet in %s's index (disk full); "
                            "kept in memory", self.topic, self.partition, done.producer_id, seg.base_offset)

    @property
    def last_stable_offset(self) -> int:
        """LSO: the first offset of the earliest open (or not yet replicated) transaction, else the high
        watermark (Kafka's UnifiedLog.lastStableOffset)."""
        with self.lock:
            hw = self.high_watermark
            self._unreplicated = [t for t in self._unreplicated if t.last_offset >= hw]
            first = self.producer_state.first_unstable_offset()
            for t in self._unreplicated:
                first = t.first_offset if first is None else min(first, t.first_offset)
            return hw if first is None else min(first, hw)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), for a read_committed Fetch (Kafka's
        UnifiedLog.collectAbortedTransactions)."""
        out: list[AbortedTxn] = []
        with self.lock:
            for seg in self.segments[max(0, bisect_right(self._bases, fetch_offset) - 1):]:
                if seg.txn_index.collect(fetch_offset, upper_bound, out):
                    break
        return out

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      leader_epoch: int) -> int:
        """Write a COMMIT or ABORT marker as leader (WriteTxnMarkers; Kafka appends it with
        AppendOrigin.COORDINATOR). Returns its offset. INVALID_PRODUCER_EPOCH if the producer has moved to a
        newer epoch than the marker's, TRANSACTION_COORDINATOR_FENCED if a newer coordinator wrote its last one."""
        with self.lock:
            entry = self.producer_state.producers.get(producer_id)
            if entry is not None and producer_epoch < entry.epoch:
                raise KafkaError(ErrorCode.invalid_producer_epoch,
                                 f"marker epoch {producer_epoch} is older than the producer's {entry.epoch}")
            if entry is not None and coordinator_epoch < entry.coordinator_epoch:
                raise KafkaError(ErrorCode.transaction_coordinator_fenced,
                                 f"coordinator epoch {coordinator_epoch} < {entry.coordinator_epoch}")
            buf = bytearray(marker_batch(producer_id, producer_epoch, coordinator_epoch, commit,
                                         self.clock.now_ms()))
            return self._append_assigned(buf, read_header(buf), leader_epoch)[0]
