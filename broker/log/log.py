"""`PartitionLog`: one partition's segments, validation on append, reads, retention and recovery."""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from broker.config import LogConfig
from broker.errors import ErrorCode, KafkaError
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.producer_state import ProducerStateManager
from broker.log.records import (
    COMPRESSION_NAMES,
    HEADER_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
    build_batch,
    crc_ok,
    decode_records,
    header_is_sane,
    iter_batches,
    read_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from broker.log.recovery import CLEANER_TMP_DIR, SWAP_SUFFIX, finish_interrupted_swap, segment_bases
from broker.log.segment import LOG_SUFFIX, FileRegion, LogSegment, segment_name
from broker.log.txn_index import TXN_INDEX_SUFFIX
from broker.log.txn_log import TransactionalLog
from common.clock import Clock

log = logging.getLogger(__name__)

LOG_START_OFFSET_FILE = "log-start-offset"
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
DELETE_DIR_SUFFIX = "-delete"
# Offsets inside a segment are stored relative to its base as int32.
_MAX_RELATIVE_OFFSET = 0x7FFFFFFF
_REPLAY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What a Produce response needs for one partition."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 for CreateTime topics
    log_start_offset: int
    record_count: int
    duplicate: bool = False
    converted: int = 0  # records rebuilt to the topic's compression.type (Kafka counts them as conversions)


def _read_int_file(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _write_int_file(path: Path, value: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


class PartitionLog(TransactionalLog):
    """The log of one partition in `<log dir>/<topic>-<partition>/`.

    All state changes happen under `lock`; the log cleaner does its heavy work outside it and only swaps
    segments under it.
    """

    def __init__(self, topic: str, partition: int, directory: Path, config: LogConfig, clock: Clock,
                 epoch_writer: Callable[[LeaderEpochCache], None] | None = None) -> None:
        """`epoch_writer` takes leader-epoch checkpoints to write later (LogManager's CheckpointWriter.submit);
        without it they are written at once."""
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.config = config
        self.clock = clock
        self.lock = threading.RLock()
        # Told of a failed disk write before it is answered KAFKA_STORAGE_ERROR (LogManager: the log dir's
        # LogDirFailureChannel, which takes the dir offline in a cluster).
        self.io_failed: Callable[[OSError], object] | None = None
        # Held while loading: a segment file opened here may otherwise be closed by another thread's opening
        # (segment.open_log_files), which takes only free partition locks.
        with self.lock:
            directory.mkdir(parents=True, exist_ok=True)
            names = os.listdir(directory)
            if CLEANER_TMP_DIR in names or any(n.endswith(SWAP_SUFFIX) for n in names):
                finish_interrupted_swap(directory)
                names = os.listdir(directory)
            bases = segment_bases(directory, names)
            # Only the active segment is checked now: the others were fsynced when they rolled, and are read (and
            # recovered if need be) on first use, as Kafka opens their indexes lazily.
            self.segments: list[LogSegment] = [
                LogSegment.open(directory, base, config.index_interval_bytes, lazy=i < len(bases) - 1,
                                lock=self.lock)
                for i, base in enumerate(bases)
            ]
            stored_start = _read_int_file(directory / LOG_START_OFFSET_FILE) or 0
            if not self.segments:
                self.segments.append(LogSegment.create(directory, stored_start, config.index_interval_bytes,
                                                       self.lock))
            self._bases = [s.base_offset for s in self.segments]
            self.log_end_offset = self.segments[-1].next_offset
            self.log_start_offset = min(max(stored_start, self.segments[0].base_offset), self.log_end_offset)
            self._stored_start = stored_start  # what the log-start-offset file holds (0: none)
            # Standalone the high watermark follows the log end offset; a replicated partition's leader moves it
            # (replication/replica_manager.py sets `auto_high_watermark` off).
            self.high_watermark = self.log_end_offset
            self.auto_high_watermark = True
            self.leader_epochs = LeaderEpochCache(directory, epoch_writer)
            self.cleaner_checkpoint = _read_int_file(directory / CLEANER_CHECKPOINT_FILE) or self.log_start_offset
            self.producer_state = ProducerStateManager(directory)
            self._unreplicated = []
            # A kill -9 may have cut the active segment short after its abort was indexed; replay re-adds it.
            self.active_segment.txn_index.truncate_to(self.log_end_offset)
            self._snapshot_offset = self._load_producer_state()
            for seg in self.segments:
                seg.release_file()  # a partition holds no descriptor until it is read or written

    # ---------------------------------------------------------------- recovery

    def _load_producer_state(self) -> int:
        """Newest snapshot, then replay the batch headers after it. Returns the snapshot's offset (-1: none)."""
        snapshot = self.producer_state.load(self.log_end_offset)
        start = self.segments[0].base_offset if snapshot is None else snapshot
        # A snapshot at the log end offset leaves nothing to replay, and no segment to read.
        first = bisect_right(self._bases, start) - 1 if start < self.log_end_offset else len(self.segments)
        for seg in self.segments[max(0, first):]:
            found = seg.find(start)
            if found is None:
                continue
            for pos, h in seg.batches(found[0], _REPLAY_CHUNK):
                if h.last_offset < start:
                    continue
                if h.partition_leader_epoch > self.leader_epochs.latest_epoch:
                    # An epoch assigned after the snapshot may not have reached the checkpoint before a crash
                    # (`snapshot_producer_state` writes it first): its first batch says where it started.
                    self.leader_epochs.assign(h.partition_leader_epoch, h.base_offset)
                if h.producer_id >= 0:
                    self._track(seg, seg.read_batch(pos, h) if h.is_control else b"", h)
        self.producer_state.evict_below(self.log_start_offset)
        self._unreplicated = []
        return -1 if snapshot is None else snapshot

    # ---------------------------------------------------------------- properties

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size_bytes(self) -> int:
        with self.lock:
            return sum(s.size for s in self.segments)

    @property
    def segment_count(self) -> int:
        return len(self.segments)

    # ---------------------------------------------------------------- append

    def _validate(self, buf: bytearray) -> BatchHeader:
        """Kafka's produce-side checks (LogValidator); the log is untouched when this raises."""
        if len(buf) < HEADER_SIZE:
            raise KafkaError(ErrorCode.corrupt_message, "record set is smaller than a batch header")
        h = read_header(buf, 0)
        if h.magic != MAGIC:
            raise KafkaError(ErrorCode.unsupported_for_message_format, f"magic {h.magic} is not supported")
        if h.batch_length < MIN_BATCH_LENGTH or h.size > len(buf):
            raise KafkaError(ErrorCode.corrupt_message, "batch length does not match the record set")
        # Produce v3+ (all magic-2 clients) carries exactly one batch per partition (Kafka's
        # ProduceRequest.validateRecords); a trailing partial batch is ignored, as Kafka trims it.
        if len(buf) - h.size >= HEADER_SIZE and header_is_sane(read_header(buf, h.size)):
            raise KafkaError(ErrorCode.invalid_record, "more than one record batch for the partition")
        if h.base_offset != 0:
            raise KafkaError(ErrorCode.invalid_record, f"a client batch must have baseOffset 0, not {h.base_offset}")
        if h.size > self.config.max_message_bytes:
            raise KafkaError(ErrorCode.message_too_large,
                             f"batch of {h.size} bytes exceeds max.message.bytes {self.config.max_message_bytes}")
        if h.size > self.config.segment_bytes:
            raise KafkaError(ErrorCode.record_list_too_large,
                             f"batch of {h.size} bytes exceeds segment.bytes {self.config.segment_bytes}")
        if not crc_ok(buf, 0, h):
            raise KafkaError(ErrorCode.corrupt_message, "batch CRC mismatch")
        if h.record_count <= 0 or h.last_offset_delta + 1 != h.record_count:
            raise KafkaError(ErrorCode.invalid_record, "lastOffsetDelta does not match the record count")
        if h.is_control:
            raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
        if h.timestamp_type == 1:
            raise KafkaError(ErrorCode.invalid_timestamp, "clients may not write LogAppendTime batches")
        if h.producer_id >= 0 and h.base_sequence < 0:
            raise KafkaError(ErrorCode.invalid_record, "idempotent batch without a base sequence")
        if self.config.compact:
            try:
                records = decode_records(memoryview(buf)[: h.size])
            except ValueError as e:
                raise KafkaError(ErrorCode.corrupt_message, f"undecodable records: {e}") from None
            if any(r.key is None for r in records):
                raise KafkaError(ErrorCode.invalid_record, "compacted topic requires a key on every record")
        return h

    @staticmethod
    def _recompress(buf: bytearray, h: BatchHeader, codec: int) -> bytes:
        """Rewrite a batch in the topic's compression.type (Kafka recompresses on a codec mismatch too)."""
        try:
            records = decode_records(memoryview(buf)[: h.size])
        except ValueError as e:
            raise KafkaError(ErrorCode.corrupt_message, f"undecodable records: {e}") from None
        return build_batch(records, 0, compression=codec, producer_id=h.producer_id,
                           producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                           is_transactional=h.is_transactional, base_timestamp=h.base_timestamp,
                           max_timestamp=h.max_timestamp)

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendResult:
        """Validate one client batch, assign offsets from the log end offset, append it.

        Raises KafkaError (nothing appended). A retried idempotent batch is acknowledged with its original
        offsets and not appended again (`duplicate=True`).
        """
        # A private copy: offsets, leader epoch and maybe the timestamp are patched in place.
        buf = bytearray(records)
        h = self._validate(buf)
        target = COMPRESSION_NAMES.get(self.config.compression_type)  # None: keep the producer's codec
        converted = 0
        if target is not None and target != h.compression:
            buf = bytearray(self._recompress(buf, h, target))
            h = read_header(buf)
            converted = h.record_count
        with self.lock:
            dup = self.producer_state.check(h)
            if dup is not None:
                return AppendResult(dup.first_offset, dup.last_offset, -1, self.log_start_offset,
                                    h.record_count, duplicate=True, converted=converted)
            base, append_time = self._append_assigned(buf, h, leader_epoch)
            return AppendResult(base, h.last_offset, append_time, self.log_start_offset, h.record_count,
                                converted=converted)

    def _append_assigned(self, buf: bytearray, h: BatchHeader, leader_epoch: int) -> tuple[int, int]:
        """Give a validated batch its offsets and leader epoch and append it (lock held). Returns (base offset,
        LogAppendTime or -1)."""
        now = self.clock.now_ms()
        append_time = -1
        with self._storage_errors():
            self._maybe_roll(h.size, h.last_offset_delta, now)
            h.base_offset = self.log_end_offset
            h.partition_leader_epoch = leader_epoch
            set_base_offset(buf, 0, h.base_offset)
            set_partition_leader_epoch(buf, 0, leader_epoch)
            if self.config.log_append_time:
                set_log_append_time(buf, 0, h, now)
                append_time = now
            self.leader_epochs.assign(leader_epoch, h.base_offset)
            self.active_segment.append(memoryview(buf)[: h.size], [(0, h)], now)
        self.log_end_offset = h.last_offset + 1
        if self.auto_high_watermark:
            self.high_watermark = self.log_end_offset
        self._track(self.active_segment, memoryview(buf)[: h.size], h)
        return h.base_offset, append_time

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> None:
        """Append batches that already carry offsets (replication). Batches below the log end offset are
        skipped; a CRC failure or an offset gap raises CORRUPT_MESSAGE with nothing appended."""
        data = bytes(records)
        batches = []
        expected = self.log_end_offset
        for pos, h in iter_batches(data):
            if h.last_offset < expected:
                continue
            if not crc_ok(data, pos, h) or h.base_offset != expected:
                raise KafkaError(ErrorCode.corrupt_message, f"follower batch at offset {h.base_offset} is invalid")
            batches.append((pos, h))
            expected = h.next_offset
        with self.lock:
            for pos, h in batches:
                now = self.clock.now_ms()
                with self._storage_errors():
                    self._maybe_roll(h.size, h.last_offset_delta, now)
                    self.leader_epochs.assign(h.partition_leader_epoch, h.base_offset)
                    self.active_segment.append(memoryview(data)[pos: pos + h.size], [(0, h)], now)
                self.log_end_offset = h.next_offset
                self._track(self.active_segment, memoryview(data)[pos: pos + h.size], h)

    @contextmanager
    def _storage_errors(self) -> Iterator[None]:
        """A failed disk write (ENOSPC, EIO) is KAFKA_STORAGE_ERROR, retriable, with nothing appended: the
        segment cut its short write back, and the log end offset and producer state move only after it."""
        try:
            yield
        except OSError as e:
            if self.io_failed is not None:
                self.io_failed(e)
            raise KafkaError(ErrorCode.kafka_storage_error, f"{self.directory.name}: {e}") from None

    def _maybe_roll(self, size: int, last_offset_delta: int, now: int) -> None:
        seg = self.active_segment
        if not seg.size:
            return
        cfg = self.config
        if (
            seg.size + size > cfg.segment_bytes
            or (seg.rolling_base_ms is not None and now - seg.rolling_base_ms > cfg.segment_ms)
            or len(seg.offset_index) >= cfg.segment_index_bytes // seg.offset_index.ENTRY_SIZE
            or self.log_end_offset + last_offset_delta - seg.base_offset > _MAX_RELATIVE_OFFSET
        ):
            self.roll()

    def roll(self) -> None:
        """Seal the active segment and start a new one at the log end offset."""
        with self.lock:
            self.active_segment.seal()
            self.active_segment.release_file()  # reopened if read: only segments in use hold a descriptor
            seg = LogSegment.create(self.directory, self.log_end_offset, self.config.index_interval_bytes, self.lock)
            self.segments.append(seg)
            self._bases.append(seg.base_offset)
            try:
                self.snapshot_producer_state()
            except OSError as e:   # a full disk: recovery replays from an older snapshot; the roll stands
                log.warning("%s: producer-state snapshot at the roll failed: %s", self.directory.name, e)

    # ---------------------------------------------------------------- read

    def read_region(self, offset: int, max_bytes: int, max_offset: int | None = None) -> FileRegion | None:
        """Whole batches from the one containing `offset`: at least one batch even if larger than `max_bytes`
        (KIP-74), none reaching `max_offset` (e.g. the high watermark). None at the log end offset.

        Raises OFFSET_OUT_OF_RANGE outside [log start offset, log end offset].
        """
        with self.lock:
            if offset < self.log_start_offset or offset > self.log_end_offset:
                raise KafkaError(ErrorCode.offset_out_of_range,
                                 f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}]")
            if offset == self.log_end_offset or (max_offset is not None and offset >= max_offset):
                return None
            for seg in self.segments[max(0, bisect_right(self._bases, offset) - 1):]:
                found = seg.find(offset)
                if found is not None:
                    pos, h = found
                    if max_offset is not None and h.last_offset >= max_offset:
                        return None
                    return seg.read_region(pos, h.size, max_bytes, max_offset)
            return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """`read_region` read into memory (b"" at the log end offset)."""
        region = self.read_region(offset, max_bytes, max_offset)
        return region.read_bytes() if region is not None else b""

    def truncate_to(self, offset: int) -> None:
        """Remove everything from `offset` on (a follower whose log diverged from the new leader's)."""
        with self.lock:
            if offset >= self.log_end_offset:
                return
            if offset <= self.log_start_offset:
                offset = self.log_start_offset
            while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
                self.segments.pop().delete_files()
                self._bases.pop()
            self.segments[-1].truncate_to(offset)
            self.log_end_offset = self.segments[-1].next_offset
            self.high_watermark = min(self.high_watermark, self.log_end_offset)
            self.cleaner_checkpoint = min(self.cleaner_checkpoint, self.log_end_offset)
            self.leader_epochs.truncate_from_end(self.log_end_offset)
            self._snapshot_offset = self._load_producer_state()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and restart it empty at `offset` (a follower behind the leader's log start)."""
        with self.lock:
            for seg in self.segments:
                seg.delete_files()
            self.segments = [LogSegment.create(self.directory, offset, self.config.index_interval_bytes, self.lock)]
            self._bases = [offset]
            self.log_start_offset = self.log_end_offset = self.high_watermark = offset
            self._persist_log_start()
            self.cleaner_checkpoint = offset
            self.leader_epochs.truncate_from_end(-1)
            self._snapshot_offset = self._load_producer_state()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) from the leader epoch cache."""
        with self.lock:
            return self.leader_epochs.end_offset_for(epoch, self.log_end_offset)

    def offset_for_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the earliest record with timestamp >= `ts_ms`, or None."""
        with self.lock:
            for seg in self.segments:
                found = seg.find_by_timestamp(ts_ms, self.log_start_offset)
                if found is not None:
                    return found
            return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets MAX_TIMESTAMP, -3)."""
        with self.lock:
            best = None
            for seg in self.segments:
                if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                    best = seg
            if best is None:
                return None
            found = best.find(best.offset_of_max_timestamp)
            if found is not None:
                pos, h = found
                for r in decode_records(best.read_batch(pos, h)):
                    if r.timestamp == best.max_timestamp:
                        return r.offset, r.timestamp
            return best.offset_of_max_timestamp, best.max_timestamp

    # ---------------------------------------------------------------- deletion

    def _persist_log_start(self) -> None:
        """Write the log start offset unless a reload would derive it anyway (from the file and the segments):
        closing thousands of untouched partitions at shutdown rewrote thousands of files (issue 20)."""
        if self.log_start_offset == min(max(self._stored_start, self.segments[0].base_offset), self.log_end_offset):
            return
        _write_int_file(self.directory / LOG_START_OFFSET_FILE, self.log_start_offset)
        self._stored_start = self.log_start_offset

    def _delete_oldest(self, count: int) -> None:
        """Delete the `count` oldest segments, rolling first if that includes the active one."""
        if count <= 0:
            return
        if count >= len(self.segments):
            self.roll()
        for seg in self.segments[:count]:
            seg.delete_files()
        del self.segments[:count]
        del self._bases[:count]
        if self.segments[0].base_offset > self.log_start_offset:
            self.log_start_offset = self.segments[0].base_offset
        self._persist_log_start()
        self.producer_state.evict_below(self.log_start_offset)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to `offset` and delete whole segments below it.

        Returns the new log start offset; OFFSET_OUT_OF_RANGE if `offset` is beyond the high watermark.
        """
        with self.lock:
            if offset > self.high_watermark:
                raise KafkaError(ErrorCode.offset_out_of_range,
                                 f"offset {offset} is beyond the high watermark {self.high_watermark}")
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                self._persist_log_start()
                self._delete_oldest(self._segments_below_log_start(include_active=True))
            return self.log_start_offset

    def _segments_below_log_start(self, include_active: bool) -> int:
        n = 0
        last = len(self.segments) if include_active else len(self.segments) - 1
        while n < last:
            seg = self.segments[n]
            end = self.segments[n + 1].base_offset if n + 1 < len(self.segments) else self.log_end_offset
            if end > self.log_start_offset or (n + 1 == len(self.segments) and not seg.size):
                break
            n += 1
        return n

    def apply_retention(self) -> int:
        """Delete old segments by retention.ms (largest timestamp) and retention.bytes, when cleanup.policy
        includes delete, and any segment wholly below the log start offset. Returns how many.

        As in Kafka, an expired non-empty active segment goes too (the log rolls first), so an idle topic
        empties; nothing above the high watermark is deleted."""
        with self.lock:
            n = self._segments_below_log_start(include_active=False)
            cfg = self.config
            old = self.segments[:-1]
            if cfg.delete and cfg.retention_ms >= 0:
                now = self.clock.now_ms()
                candidates = self.segments if self.active_segment.size else old
                k = 0
                while (k < len(candidates) and now - candidates[k].max_timestamp > cfg.retention_ms
                       and candidates[k].next_offset <= self.high_watermark):
                    k += 1
                n = max(n, k)
            if cfg.delete and cfg.retention_bytes >= 0:
                diff = self.size_bytes - cfg.retention_bytes
                k = 0
                while k < len(old) and diff - old[k].size >= 0:
                    diff -= old[k].size
                    k += 1
                n = max(n, k)
            self._delete_oldest(n)
            return n

    # ---------------------------------------------------------------- cleaner support

    def set_cleaner_checkpoint(self, offset: int) -> None:
        """Record the first dirty offset: everything below it has been compacted."""
        with self.lock:
            self.cleaner_checkpoint = offset
            _write_int_file(self.directory / CLEANER_CHECKPOINT_FILE, offset)

    def replace_segments(self, old: list[LogSegment], staged_base: int, staged_dir: Path) -> bool:
        """Swap `old` (consecutive segments) for the cleaned segment `staged_base` written in `staged_dir`.

        Protocol (crash-safe, see `_finish_interrupted_swap`): move the staged files in as `*.swap`, the .log
        last; delete the old segments; drop the `.swap` suffix. Returns False (nothing changed) if `old` is no
        longer in the log, e.g. retention deleted it meanwhile.
        """
        with self.lock:
            try:
                i = self.segments.index(old[0])
            except ValueError:
                return False
            if self.segments[i: i + len(old)] != old or i + len(old) >= len(self.segments):
                return False
            name = segment_name(staged_base)
            for suffix in (".index", ".timeindex", TXN_INDEX_SUFFIX, LOG_SUFFIX):
                os.replace(staged_dir / (name + suffix), self.directory / (name + suffix + SWAP_SUFFIX))
            for seg in old:
                seg.delete_files()
            for suffix in (".index", ".timeindex", TXN_INDEX_SUFFIX, LOG_SUFFIX):
                os.replace(self.directory / (name + suffix + SWAP_SUFFIX), self.directory / (name + suffix))
            new = LogSegment.open(self.directory, staged_base, self.config.index_interval_bytes, lock=self.lock)
            self.segments[i: i + len(old)] = [new]
            self._bases = [s.base_offset for s in self.segments]
            return True

    # ---------------------------------------------------------------- lifecycle

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs; they take effect from the next append or retention check."""
        with self.lock:
            self.config = config
            self.active_segment.index_interval_bytes = config.index_interval_bytes

    def snapshot_producer_state(self) -> None:
        """Snapshot idempotent-producer state at the log end offset if it moved since the last snapshot. An empty
        log has nothing to replay, so no snapshot (Kafka's ProducerStateManager.takeSnapshot likewise skips an
        offset it already has): its fsync was a quarter of shutting down 3,000 new partitions (issue 20)."""
        with self.lock:
            # Epochs that start before the snapshot must be on disk: replay after a crash starts at the snapshot.
            self.leader_epochs.flush()
            if self.log_end_offset == self.segments[0].base_offset:
                return
            if self._snapshot_offset != self.log_end_offset:
                # No snapshot past an abort its segment's index does not hold yet: replay must index it again.
                for seg in self.segments:
                    seg.txn_index.sync()   # OSError: no snapshot now (callers take that as a failed snapshot)
                self.producer_state.take_snapshot(self.log_end_offset)
                self._snapshot_offset = self.log_end_offset

    def flush(self) -> None:
        """fsync the active segment and checkpoint producer state and the log start offset."""
        with self.lock:
            self.active_segment.flush()
            self.snapshot_producer_state()
            self._persist_log_start()

    def close(self) -> None:
        """Seal the active segment, checkpoint state and close every file; closing twice is harmless."""
        with self.lock:
            if not self.segments:
                return
            self.active_segment.seal()
            self.snapshot_producer_state()
            self._persist_log_start()
            for seg in self.segments:
                seg.close()
            self.segments = []

    def delete(self) -> None:
        """Close and remove the partition directory.

        As in Kafka it is first renamed to `<topic>-<partition>.<uuid>-delete`, so a crash mid-removal leaves
        nothing that loads as a partition (LogManager removes such leftovers at startup).
        """
        with self.lock:
            self.leader_epochs.discard()
            for seg in self.segments:
                seg.close()
            self.segments = []
            doomed = self.directory.with_name(f"{self.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            os.replace(self.directory, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
