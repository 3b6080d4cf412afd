"""Idempotent producer state of one partition (Kafka's ProducerStateManager, KIP-98).

Per producer id: the current epoch and the last 5 appended batches (first/last sequence, first/last offset),
enough to answer any retry a producer with max.in.flight <= 5 can send, and the first offset of its ongoing
transaction (currentTxnFirstOffset), from which the partition's first unstable offset and so its Last Stable
Offset follow; a marker ends the transaction (`CompletedTxn`). Snapshots are
`<20-digit offset>.snapshot` JSON files holding the state as of that offset; on recovery the log replays batch
headers from the newest usable snapshot (headers carry producerId, producerEpoch and baseSequence).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from broker.errors import ErrorCode, KafkaError
from broker.log.records import BatchHeader
from broker.log.txn_index import ABORT, COMMIT, CompletedTxn

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
MAX_CACHED_BATCHES = 5
_SNAPSHOTS_KEPT = 2
INT32_MAX = 0x7FFFFFFF


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: list[BatchMetadata] = field(default_factory=list)
    last_timestamp: int = -1
    current_txn_first_offset: int = -1
    coordinator_epoch: int = -1  # of the last marker: an older coordinator's markers are fenced

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == INT32_MAX and next_seq == 0)


class ProducerStateManager:
    """Checks and records idempotent batches; snapshots to the partition directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}

    def _reindex(self) -> None:
        """The open transactions by producer (Kafka's ongoingTxns), read on every fetch through the LSO: kept
        apart from the (maybe many) idempotent producers."""
        self._ongoing = {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                         if e.current_txn_first_offset >= 0}

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest ongoing transaction (None: none is open)."""
        return min(self._ongoing.values()) if self._ongoing else None

    def in_transaction(self, producer_id: int) -> bool:
        return producer_id in self._ongoing

    def ongoing(self) -> dict[int, int]:
        """producerId -> first offset of its open transaction."""
        return dict(self._ongoing)

    def last_stable_after(self, txn: CompletedTxn) -> int:
        """The LSO once `txn` is complete: the first offset of another still open transaction, else the offset
        after its marker (Kafka's ProducerStateManager.lastStableOffset)."""
        others = [first for pid, first in self._ongoing.items() if pid != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers without an open transaction whose last batch is `expiration_ms` old
        (producer.id.expiration.ms; Kafka's removeExpiredProducers, by the batch's max timestamp); their next
        batch starts afresh. Returns how many went."""
        expired = [pid for pid, e in self.producers.items()
                   if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def check(self, h: BatchHeader) -> BatchMetadata | None:
        """Validate a leader append. Returns the cached batch if `h` duplicates one (do not append it).

        Raises INVALID_PRODUCER_EPOCH for a stale epoch and OUT_OF_ORDER_SEQUENCE_NUMBER for a sequence gap or a
        new epoch not starting at 0. A producer with no state may start at any sequence.
        """
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None
        if h.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.invalid_producer_epoch,
                             f"epoch {h.producer_epoch} is older than the current epoch {entry.epoch}")
        if not h.is_transactional and entry.current_txn_first_offset >= 0 and h.producer_epoch == entry.epoch:
            # ProducerAppendInfo: a plain batch while the producer's transaction is open.
            raise KafkaError(ErrorCode.invalid_txn_state,
                             f"non-transactional batch while transaction from {entry.current_txn_first_offset} "
                             "is open")
        if h.producer_epoch > entry.epoch:
            if h.base_sequence != 0:
                raise KafkaError(ErrorCode.out_of_order_sequence_number,
                                 f"new epoch {h.producer_epoch} must start at sequence 0, got {h.base_sequence}")
            return None
        last_seq = h.last_sequence
        for b in entry.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last_seq:
                return b
        if entry.batches and not _in_sequence(entry.last_seq, h.base_sequence):
            raise KafkaError(ErrorCode.out_of_order_sequence_number,
                             f"expected sequence {entry.last_seq + 1}, got {h.base_sequence}")
        return None

    def update(self, h: BatchHeader, control_type: int = -1, coordinator_epoch: int = -1) -> CompletedTxn | None:
        """Record an appended batch (leader, follower or recovery replay). `h` carries its assigned offsets;
        `control_type` is a control batch's ControlRecordType and `coordinator_epoch` its marker's. Returns the
        transaction a marker completed."""
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None or h.producer_epoch != entry.epoch:
            # A new epoch keeps an open transaction: the coordinator aborts it with a marker of the new epoch.
            first = entry.current_txn_first_offset if entry is not None else -1
            coordinator_epoch_before = entry.coordinator_epoch if entry is not None else -1
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_id, h.producer_epoch)
            entry.current_txn_first_offset = first
            entry.coordinator_epoch = coordinator_epoch_before
        entry.last_timestamp = h.max_timestamp
        if h.is_control:
            # Markers carry no sequence; they end the producer's transaction, if one is open here.
            if control_type in (ABORT, COMMIT):
                entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
            if control_type not in (ABORT, COMMIT) or entry.current_txn_first_offset < 0:
                return None
            done = CompletedTxn(h.producer_id, entry.current_txn_first_offset, h.base_offset,
                                control_type == ABORT)
            entry.current_txn_first_offset = -1
            self._ongoing.pop(h.producer_id, None)
            return done
        if h.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = self._ongoing[h.producer_id] = h.base_offset
        if h.base_sequence < 0:
            return None
        entry.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.base_offset, h.last_offset))
        del entry.batches[:-MAX_CACHED_BATCHES]
        return None

    def evict_below(self, log_start_offset: int) -> None:
        """Forget producers whose last batch is gone (retention, DeleteRecords): they may restart anywhere."""
        for pid in [p for p, e in self.producers.items()
                    if e.last_offset < log_start_offset and e.current_txn_first_offset < 0]:
            del self.producers[pid]

    # ---------------------------------------------------------------- snapshots

    def _snapshot_offsets(self) -> list[int]:
        out = []
        for name in os.listdir(self.directory):
            stem, _, suffix = name.partition(".")
            if suffix == "snapshot" and stem.isdigit():
                out.append(int(stem))
            elif suffix == "snapshot.tmp":
                (self.directory / name).unlink()  # a snapshot write cut short
        return sorted(out)

    def _path(self, offset: int) -> Path:
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def take_snapshot(self, offset: int) -> None:
        """Write the state as of `offset` (the log end offset) atomically; keep the newest few."""
        doc = {
            "version": 2,
            "offset": offset,
            "producers": [
                [e.producer_id, e.epoch, e.last_timestamp,
                 [[b.first_seq, b.last_seq, b.first_offset, b.last_offset] for b in e.batches],
                 e.current_txn_first_offset, e.coordinator_epoch]
                for e in self.producers.values()
            ],
        }
        tmp = self._path(offset).with_suffix(".snapshot.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path(offset))
        for old in self._snapshot_offsets()[:-_SNAPSHOTS_KEPT]:
            self._path(old).unlink(missing_ok=True)

    def load(self, log_end_offset: int) -> int | None:
        """Load the newest readable snapshot at or below `log_end_offset`; return its offset (replay from there).

        Snapshots beyond the log end (the log was truncated) are deleted. None means no snapshot: replay it all.
        """
        self.producers = {}
        self._ongoing = {}
        for offset in reversed(self._snapshot_offsets()):
            path = self._path(offset)
            if offset > log_end_offset:
                path.unlink()
                continue
            try:
                doc = json.loads(path.read_text())
                producers = {}
                for pid, epoch, ts, batches, *txn in doc["producers"]:
                    # Version 1 (before transactions) has no currentTxnFirstOffset.
                    producers[pid] = ProducerEntry(pid, epoch, [BatchMetadata(*b) for b in batches], ts,
                                                   *txn[:2])
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("ignoring unreadable producer snapshot %s: %s", path, e)
                path.unlink(missing_ok=True)
                continue
            self.producers = producers
            self._reindex()
            return offset
        return None
