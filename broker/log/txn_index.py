"""Transaction markers and the aborted-transactions index (KIP-98).

Control records: a commit or abort marker is a control batch (attributes bit 5 control, bit 4 transactional)
holding one record whose key is Kafka's ControlRecordType key (version int16 = 0, type int16: 0 ABORT,
1 COMMIT) and whose value is EndTransactionMarker (version int16 = 0, coordinatorEpoch int32).

`.txnindex` (Kafka's TransactionIndex): one 34-byte entry per aborted transaction whose marker is in the
segment — version int16 = 0, producerId int64, firstOffset int64, lastOffset int64 (the marker's offset),
lastStableOffset int64 (the LSO once the abort completed). A read_committed fetch lists the aborted
transactions overlapping the fetched range so that the consumer drops their records.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass
from pathlib import Path

from broker.log.index import _IndexFile
from broker.log.records import Record, build_batch, decode_records

TXN_INDEX_SUFFIX = ".txnindex"
ABORT, COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """Kafka's AbortedTxn."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                 timestamp_ms: int) -> bytes:
    """An end-transaction marker batch at base offset 0 (Kafka's MemoryRecords.withEndTransactionMarker)."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch([Record(offset=0, timestamp=timestamp_ms, key=key, value=value)], 0,
                       producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
                       is_control=True)


def control_type(batch: bytes | memoryview) -> tuple[int, int]:
    """(ControlRecordType, coordinator epoch) of a control batch's first record: ABORT or COMMIT with the
    EndTransactionMarker's coordinatorEpoch, or another type Kafka defines with -1.

    Raises ValueError for a record whose key is not a ControlRecordType key."""
    records = decode_records(batch)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise ValueError("control batch without a control record key")
    version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    if version < 0:
        raise ValueError(f"control record key version {version}")
    value = records[0].value
    if kind in (ABORT, COMMIT) and value is not None and len(value) >= _MARKER_VALUE.size:
        return kind, marker_fields(value)[1]
    return kind, -1


def marker_fields(value: bytes) -> tuple[int, int]:
    """(version, coordinatorEpoch) of an EndTransactionMarker value."""
    return _MARKER_VALUE.unpack_from(value)


class TransactionIndex:
    """The aborted transactions whose markers are in one segment, in marker order, kept in memory and
    appended to the file as they are made (like the offset index, see index.py)."""

    def __init__(self, path: Path) -> None:
        self._file = _IndexFile(path)
        self._entries: list[AbortedTxn] | None = None  # read on first use
        self._unwritten = 0   # entries at the end of `entries` the file does not hold yet (a full disk)

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            data = self._file.read_all()
            usable = len(data) - len(data) % _ENTRY.size  # a torn last entry is dropped (recovery re-adds it)
            self._entries = []
            for pos in range(0, usable, _ENTRY.size):
                _, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
                self._entries.append(AbortedTxn(pid, first, last, lso))
            if usable != len(data):
                self._file.truncate(usable)
        return self._entries

    def append(self, txn: AbortedTxn) -> bool:
        """Add an entry; one whose marker is not past the last entry's is already there (a recovery replay
        over markers indexed before the crash) and is skipped. Returns whether it was added."""
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            return False
        entries.append(txn)
        self._unwritten += 1
        with contextlib.suppress(OSError):   # the marker is in the log: the entry waits in memory (see `sync`)
            self.sync()
        return True

    @property
    def unwritten(self) -> bool:
        return self._unwritten > 0

    def sync(self) -> None:
        """Write the entries the file lacks; OSError if the disk still cannot take them. Reads use the entries in
        memory meanwhile; the log takes no producer-state snapshot past them (log.py), so a restart's replay
        indexes their markers again. Leaving one out is not an option as for the offset index: a read_committed
        consumer would take that transaction's aborted records for committed ones."""
        if not self._unwritten:
            return
        entries = self.entries
        self._file.write(b"".join(_ENTRY.pack(0, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                                  for e in entries[len(entries) - self._unwritten:]))   # whole, or nothing written
        self._unwritten = 0

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after `offset` (the log was truncated there)."""
        entries = self.entries
        keep = sum(1 for e in entries if e.last_offset < offset)
        if keep != len(entries):
            written = len(entries) - self._unwritten
            del entries[keep:]
            self._unwritten = max(0, keep - written)
            self._file.truncate(min(keep, written) * _ENTRY.size)

    def reset(self) -> None:
        self._entries = []
        self._unwritten = 0
        self._file.truncate(0)

    def collect(self, fetch_offset: int, upper_bound: int, out: list[AbortedTxn]) -> bool:
        """Append to `out` the aborted transactions overlapping [fetch_offset, upper_bound); True when no later
        segment can hold more (an entry's lastStableOffset reached the bound), as Kafka's
        TransactionIndex.collectAbortedTxns."""
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
            if e.last_stable_offset >= upper_bound:
                return True
        return False

    def fsync(self) -> None:
        self._file.fsync()

    def release(self) -> None:
        self._file.release()

    def delete(self) -> None:
        self._entries = []
        self._file.release()
        self._file.path.unlink(missing_ok=True)
