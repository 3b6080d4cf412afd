"""Log compaction for topics whose cleanup.policy includes compact.

One pass over a log (`LogCleaner.clean`):

1. The cleanable range is the non-active segments, stopping at the first one holding a record younger than
   min.compaction.lag.ms. Its dirty part starts at the log's cleaner checkpoint; the pass runs only when
   dirty bytes / cleanable bytes >= min.cleanable.dirty.ratio.
2. A key → latest offset map is built over the dirty part.
3. Every cleanable segment is rewritten, keeping a record unless a later offset for its key is in the map,
   or it is a tombstone (null value) whose batch's maxTimestamp is older than delete.retention.ms. (Kafka marks
   batches with a delete horizon instead; using the batch timestamp gives consumers at least
   delete.retention.ms, by producer time, to see a tombstone.) Offsets and order never change: a batch that
   keeps all its records is copied verbatim, a partly kept batch is rebuilt with the same base offset, offset
   deltas, last offset delta, producer fields and compression; an emptied batch is dropped.
4. Consecutive segments are merged while their combined size fits segment.bytes. Each merged segment is
   written as a normal segment under `cleaner-tmp/` and swapped in under the log's lock
   (`PartitionLog.replace_segments`), so produce and fetch are blocked only for a few renames.

Transactions (KIP-98): only segments below the Last Stable Offset are cleaned; batches of aborted transactions
are dropped and their keys ignored; markers are kept, and the segments' `.txnindex` entries move into the
merged segment.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from broker.log.log import CLEANER_TMP_DIR, PartitionLog
from broker.log.records import BatchHeader, Record, build_batch, decode_records, iter_batches, read_header
from broker.log.segment import LogSegment
from common.clock import Clock

log = logging.getLogger(__name__)

_MAX_RELATIVE_OFFSET = 0x7FFFFFFF
_Ranges = dict[int, list[tuple[int, int]]]  # producer id -> [first offset, marker offset) of aborted transactions


def _aborted_ranges(plog: PartitionLog, start: int, end: int) -> _Ranges:
    ranges: _Ranges = {}
    for a in plog.aborted_transactions(start, end):
        ranges.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))
    return ranges


def _is_aborted(h: BatchHeader, aborted: _Ranges) -> bool:
    """A data batch of an aborted transaction: Kafka's cleaner discards those and ignores their keys, so that
    an aborted write never supersedes a committed one."""
    return h.is_transactional and not h.is_control and any(
        first <= h.base_offset < marker for first, marker in aborted.get(h.producer_id, ()))


@dataclass(slots=True)
class CleanerStats:
    segments_read: int = 0
    segments_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0


def _group_by_size(segments: list[LogSegment], max_bytes: int, end_offset: int) -> list[list[LogSegment]]:
    """Runs of consecutive segments whose total size fits one segment and whose offsets fit int32."""
    groups: list[list[LogSegment]] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else end_offset
        if groups:
            g = groups[-1]
            if sum(s.size for s in g) + seg.size <= max_bytes and nxt - g[0].base_offset <= _MAX_RELATIVE_OFFSET:
                g.append(seg)
                continue
        groups.append([seg])
    return groups


class LogCleaner:
    """Compacts logs; `clean` runs one pass, `start`/`stop` run passes in a background thread."""

    def __init__(self, clock: Clock, backoff_ms: int = 15_000) -> None:
        self.clock = clock
        self.backoff_ms = backoff_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def clean(self, plog: PartitionLog, force: bool = False) -> CleanerStats | None:
        """One compaction pass over `plog`; None when there is nothing (or not enough) to clean.

        `force` ignores min.cleanable.dirty.ratio.
        """
        with plog.lock:
            cfg = plog.config
            if not cfg.compact or not plog.segments:
                return None
            now = self.clock.now_ms()
            candidates = list(plog.segments[:-1])
            active_base = plog.active_segment.base_offset
            first_dirty = max(plog.cleaner_checkpoint, plog.log_start_offset)
            # Under the lock: a sealed segment's max timestamp may be its first use, which reads its files.
            cleanable: list[LogSegment] = []
            lso = plog.last_stable_offset  # an undecided transaction's records must stay as they are
            for seg in candidates:
                if cfg.min_compaction_lag_ms > 0 and seg.max_timestamp > now - cfg.min_compaction_lag_ms:
                    break
                if seg.next_offset > lso:
                    break
                cleanable.append(seg)
        if not cleanable:
            return None
        end = candidates[len(cleanable)].base_offset if len(cleanable) < len(candidates) else active_base
        dirty = [s for i, s in enumerate(cleanable)
                 if (cleanable[i + 1].base_offset if i + 1 < len(cleanable) else end) > first_dirty]
        dirty_bytes, total = sum(s.size for s in dirty), sum(s.size for s in cleanable)
        if not dirty_bytes or (not force and dirty_bytes / total < cfg.min_cleanable_dirty_ratio):
            return None
        stats = CleanerStats()
        aborted = _aborted_ranges(plog, cleanable[0].base_offset, end)
        try:
            latest = self._build_key_map(dirty, first_dirty, end, aborted, stats)
            for group in _group_by_size(cleanable, cfg.segment_bytes, end):
                if not self._clean_group(plog, group, latest, aborted, now - cfg.delete_retention_ms, stats):
                    return stats
        except FileNotFoundError:
            # Retention or topic deletion removed a segment under us; the next pass starts over.
            log.info("log %s-%d changed during cleaning; pass abandoned", plog.topic, plog.partition)
            return stats
        finally:
            shutil.rmtree(plog.directory / CLEANER_TMP_DIR, ignore_errors=True)
        plog.set_cleaner_checkpoint(end)
        return stats

    @staticmethod
    def _read(seg: LogSegment, stats: CleanerStats) -> bytes:
        # Non-active segments are immutable; read through a private descriptor so a concurrent close is harmless.
        with open(seg.log_path, "rb") as f:
            data = f.read(seg.size)
        stats.bytes_read += len(data)
        return data

    def _build_key_map(self, dirty: list[LogSegment], start: int, end: int, aborted: _Ranges,
                       stats: CleanerStats) -> dict[bytes, int]:
        latest: dict[bytes, int] = {}
        for seg in dirty:
            data = self._read(seg, stats)
            for pos, h in iter_batches(data):
                if h.is_control or h.last_offset < start or _is_aborted(h, aborted):
                    continue
                for r in decode_records(memoryview(data)[pos: pos + h.size]):
                    if r.key is not None and start <= r.offset < end:
                        latest[r.key] = r.offset
        return latest

    def _clean_group(self, plog: PartitionLog, group: list[LogSegment], latest: dict[bytes, int],
                     aborted: _Ranges, delete_horizon_ms: int, stats: CleanerStats) -> bool:
        staging = plog.directory / CLEANER_TMP_DIR
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        out = LogSegment.create(staging, group[0].base_offset, plog.config.index_interval_bytes)
        try:
            for seg in group:
                data = self._read(seg, stats)
                stats.segments_read += 1
                for pos, h in iter_batches(data):
                    batch = memoryview(data)[pos: pos + h.size]
                    if _is_aborted(h, aborted):
                        stats.records_removed += h.record_count  # never visible to read_committed consumers
                        continue
                    if not h.is_control:
                        records = decode_records(batch)
                        kept = self._filter(records, latest, h.max_timestamp <= delete_horizon_ms, stats)
                        if not kept:
                            continue
                        if len(kept) < len(records):
                            batch = memoryview(self._rebuild(h, kept))
                    out.append(batch, [(0, read_header(batch))], self.clock.now_ms())
            for seg in group:  # the aborted transactions index moves with the markers
                for entry in seg.txn_index.entries:
                    out.txn_index.append(entry)
            out.seal()
            stats.bytes_written += out.size
        finally:
            out.close()
        stats.segments_written += 1
        return plog.replace_segments(group, group[0].base_offset, staging)

    @staticmethod
    def _filter(records: list[Record], latest: dict[bytes, int], tombstones_expired: bool,
                stats: CleanerStats) -> list[Record]:
        kept = []
        for r in records:
            if r.key is not None and latest.get(r.key, -1) > r.offset:
                stats.records_removed += 1
            elif r.value is None and r.key is not None and tombstones_expired:
                stats.records_removed += 1
                stats.tombstones_removed += 1
            else:
                kept.append(r)
        return kept

    @staticmethod
    def _rebuild(h: BatchHeader, kept: list[Record]) -> bytes:
        return build_batch(
            kept,
            h.base_offset,
            compression=h.compression,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            timestamp_type=h.timestamp_type,
            is_transactional=h.is_transactional,
            partition_leader_epoch=h.partition_leader_epoch,
            last_offset_delta=h.last_offset_delta,
            base_timestamp=h.base_timestamp,
            # LogAppendTime batches carry their time in maxTimestamp only.
            max_timestamp=h.max_timestamp if h.timestamp_type else None,
        )

    # ---------------------------------------------------------------- background thread

    def start(self, logs: Callable[[], Iterable[PartitionLog]]) -> None:
        """Clean every compacted log from `logs()` every backoff_ms in a daemon thread."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(logs,), name="log-cleaner", daemon=True)
        self._thread.start()

    def _run(self, logs: Callable[[], Iterable[PartitionLog]]) -> None:
        while not self._stop.wait(self.backoff_ms / 1000):
            for plog in list(logs()):
                if self._stop.is_set():
                    return
                try:
                    self.clean(plog)
                except Exception:
                    log.exception("cleaning %s-%d failed", plog.topic, plog.partition)

    def stop(self) -> None:
        """Stop the thread, waiting for a pass in progress to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
