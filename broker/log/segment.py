"""One log segment: `<base offset>.log` plus its `.index` and `.timeindex`."""

from __future__ import annotations

import errno
import logging
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from broker.log.index import OffsetIndex, TimeIndex
from broker.log.open_files import share_of_open_files
from broker.log.records import HEADER_SIZE, BatchHeader, crc_ok, decode_records, header_is_sane, read_header
from broker.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

log = logging.getLogger(__name__)

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"

# Lazy loads and opens are guarded: the log cleaner thread may be the first user of a segment while the event
# loop is another. One lock of each for all segments, as both happen about once per segment; two, so that a long
# load (an index rebuilt) does not hold up the opening of other segments' files.
_load_lock = threading.Lock()
_open_lock = threading.Lock()


class OpenLogFiles:
    """The segments holding their `.log` open, at most `limit` of them (half the soft open-file limit unless
    set): past it the least recently used is closed, to be reopened on its next use. A broker writing to more
    partitions than it may open files then pays reopens instead of failing requests with EMFILE (Kafka keeps
    every segment open and relies on the operator's `ulimit -n`).

    Only a segment whose partition lock can be taken at once is closed: every use of a segment's descriptor
    happens under that lock, and no caller keeps a descriptor across another segment's opening. Called under
    `_open_lock`.
    """

    def __init__(self) -> None:
        self.limit: int | None = None
        self._lru: OrderedDict[LogSegment, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._lru)

    def _limit(self) -> int:
        if self.limit is None:
            self.limit = share_of_open_files(2, 16, 1 << 20)
        return self.limit

    def opened(self, seg: LogSegment) -> None:
        excess = len(self._lru) + 1 - self._limit()
        if excess > 0:
            self.evict(excess)
        self._lru[seg] = None

    def forget(self, seg: LogSegment) -> None:
        self._lru.pop(seg, None)

    def evict(self, n: int) -> int:
        """Close up to `n` descriptors, least recently used first (a used one gets a second chance, one in use
        elsewhere is skipped); returns how many."""
        closed = 0
        for _ in range(2 * len(self._lru)):
            if closed >= n or not self._lru:
                break
            seg, _ = self._lru.popitem(last=False)
            lock = seg.lock
            if seg._used or lock is None or not lock.acquire(blocking=False):
                seg._used = False
                self._lru[seg] = None
                continue
            try:
                os.close(seg._fd)
                seg._fd = -1
            finally:
                lock.release()
            closed += 1
        return closed


open_log_files = OpenLogFiles()


class FileRegion:
    """A byte range of a segment file, to be sent with sendfile (Fetch) or read into memory.

    It holds its own duplicate of the file descriptor, so that a segment deleted or compacted away while a
    response is still being sent cannot close the file under it (or hand its descriptor number to another
    file); the duplicate is closed when the region is released or garbage-collected.
    """

    __slots__ = ("fd", "position", "length", "slice_length")

    def __init__(self, fd: int, position: int, length: int, slice_length: int | None = None) -> None:
        self.fd = os.dup(fd)
        self.position = position
        self.length = length
        # What Kafka sends for the same read (LogSegment.read): bytes up to the limit, ending in a partial batch
        # the reader drops. The replication throttle counts that, as Kafka does; we send whole batches only.
        self.slice_length = length if slice_length is None else slice_length

    def __len__(self) -> int:
        return self.length

    def read_bytes(self) -> bytes:
        return os.pread(self.fd, self.length, self.position)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.release()


def segment_name(base_offset: int) -> str:
    """Kafka's file stem: the base offset zero-padded to 20 digits."""
    return f"{base_offset:020d}"


class LogSegment:
    """A log file of verbatim batches with a sparse offset index and time index.

    `next_offset` is one past the last offset in the segment; `max_timestamp` / `offset_of_max_timestamp`
    track the largest batch maxTimestamp (retention, ListOffsets -3).

    Nothing is held open until used, so a broker with tens of thousands of partitions starts within its
    open-file limit: the `.log` descriptor is opened on the first read or append and kept until `close`,
    `release_file` or eviction by `open_log_files`; index files are read on first use, and written through
    descriptors kept for the most recently written few (index.py's `write_descriptors`). A sealed segment opened
    with `lazy` is not even read before its first use (Kafka's LazyIndex).
    """

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 lock: threading.RLock | None = None) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        # The partition's lock, held by every user of the descriptor; without one the file is never evicted.
        self.lock = lock
        stem = directory / segment_name(base_offset)
        self.log_path = stem.with_suffix(LOG_SUFFIX)
        self._fd = -1
        self._used = False
        self._closed = False
        self._offset_index = OffsetIndex(stem.with_suffix(INDEX_SUFFIX), base_offset)
        self._time_index = TimeIndex(stem.with_suffix(TIME_INDEX_SUFFIX), base_offset)
        # Aborted transactions whose markers are here; read on first use like the other indexes.
        self.txn_index = TransactionIndex(stem.with_suffix(TXN_INDEX_SUFFIX))
        self.size = 0
        self._next_offset = base_offset
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        # segment.ms counts from here: the first batch's append (clock) time, or its maxTimestamp after restart.
        self._rolling_base_ms: int | None = None
        self._bytes_since_index = 0
        self._torn = False               # a failed write could not be cut back (see _undo_write)
        self._index_write_failed = False
        self._loaded = True

    # ---------------------------------------------------------------- lazily loaded state

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            with _load_lock:
                if not self._loaded:
                    opened = self._fd >= 0
                    self._load()
                    if not opened:
                        # Reads reopen it; a look at max_timestamp (retention, every few minutes, at the oldest
                        # segment of every partition) keeps nothing open. Loads run under the partition's lock.
                        self.release_file()
                    self._loaded = True

    @property
    def offset_index(self) -> OffsetIndex:
        self._ensure_loaded()
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        self._ensure_loaded()
        return self._time_index

    @property
    def next_offset(self) -> int:
        self._ensure_loaded()
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        self._ensure_loaded()
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        self._ensure_loaded()
        return self._offset_of_max_timestamp

    @property
    def rolling_base_ms(self) -> int | None:
        self._ensure_loaded()
        return self._rolling_base_ms

    def _file(self) -> int:
        """The `.log` descriptor, opened on first use (and again after `open_log_files` closed it)."""
        fd = self._fd
        if fd < 0:
            with _open_lock:
                if self._closed:
                    # Deleted (or shut down) meanwhile: the cleaner treats a vanished file as "log changed".
                    raise FileNotFoundError(errno.ENOENT, "segment is closed", str(self.log_path))
                if self._fd < 0:
                    self._fd = self._open_file()
                    open_log_files.opened(self)
                fd = self._fd
        self._used = True
        return fd

    def _open_file(self) -> int:
        try:
            return os.open(self.log_path, os.O_RDWR | os.O_APPEND)
        except OSError as e:
            # Sockets and in-flight Fetch regions took the room: give back half of the segments' share.
            if e.errno != errno.EMFILE or not open_log_files.evict(max(1, len(open_log_files) // 2)):
                raise
        return os.open(self.log_path, os.O_RDWR | os.O_APPEND)

    def release_file(self) -> None:
        """Close the `.log` descriptor until the next use, and the indexes' write descriptors. Only while nothing
        else can be using the segment (its partition's lock held, or the partition not yet shared)."""
        with _open_lock:
            open_log_files.forget(self)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        self._release_indexes()

    def _release_indexes(self) -> None:
        self._offset_index.release()
        self._time_index.release()
        self.txn_index.release()

    # ---------------------------------------------------------------- open / recover

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int,
               lock: threading.RLock | None = None) -> LogSegment:
        """A new empty segment (any stale files with this name are emptied)."""
        seg = cls(directory, base_offset, index_interval_bytes, lock)
        os.close(os.open(seg.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        seg._offset_index.reset()
        seg._time_index.reset()
        seg.txn_index.reset()
        return seg

    @classmethod
    def open(cls, directory: Path, base_offset: int, index_interval_bytes: int, lazy: bool = False,
             lock: threading.RLock | None = None) -> LogSegment:
        """Open an existing segment; recover its tail and rebuild its indexes only if they are unusable.

        The tail is checked from the last offset-index entry: every batch after it must be complete and pass its
        CRC; the log is truncated at the first that does not (a torn write from a kill -9). With `lazy` (a sealed
        segment, fsynced when it was rolled) that check waits for the segment's first use; without, it runs now
        and the file is closed again afterwards.
        """
        seg = cls(directory, base_offset, index_interval_bytes, lock)
        seg.size = os.stat(seg.log_path).st_size
        if lazy:
            seg._loaded = False
        else:
            seg._load()
            seg.release_file()
        return seg

    def _load(self) -> None:
        self._recover()
        if self.size:
            self._rolling_base_ms = self.header_at(0).max_timestamp

    def _recover(self) -> None:
        start = self._usable_index_start()
        if start is None:
            log.info("rebuilding indexes of %s", self.log_path)
            self._rebuild()
        elif not self._scan(start, from_entry=len(self._offset_index) > 0):
            log.info("corrupt batch at the indexed tail of %s; rebuilding its indexes", self.log_path)
            self._rebuild()

    def truncate_to(self, offset: int) -> None:
        """Drop every batch from the one containing `offset` on (a follower diverged from its leader)."""
        found = self.find(offset)
        if found is None:
            return
        pos = found[0]
        self._truncate_log(pos)
        self._offset_index.truncate_to_position(pos)
        self._time_index.truncate_to_offset(found[1].base_offset)
        self.txn_index.truncate_to(found[1].base_offset)
        self._max_timestamp = self._offset_of_max_timestamp = -1
        self._recover()

    def _usable_index_start(self) -> int | None:
        """Position of the last indexed batch if both indexes load and agree with the log, else None."""
        if not (self._offset_index.load(self.size) and self._time_index.load()):
            return None
        te = self._time_index.last_entry()
        if te is not None:
            self._max_timestamp, self._offset_of_max_timestamp = te
        last = self._offset_index.last_entry()
        if last is None:
            return 0
        offset, pos = last
        if pos + HEADER_SIZE > self.size:
            return None
        h = self.header_at(pos)
        if not header_is_sane(h) or h.last_offset != offset:
            return None
        return pos

    def _rebuild(self) -> None:
        self._offset_index.reset()
        self._time_index.reset()
        self._max_timestamp = self._offset_of_max_timestamp = -1
        self._scan(0, from_entry=False)

    def _scan(self, start: int, from_entry: bool) -> bool:
        """Walk batches from `start`, re-creating index entries, and truncate at the first bad one.

        Returns False, changing nothing, when the batch at an indexed `start` is itself bad or a time-index
        entry refers to a bad batch (possible only for a damaged complete batch, not a torn write); the caller
        then rebuilds from 0.
        """
        self._bytes_since_index = 0
        self._next_offset = self.base_offset
        pos = start
        if self.size > start:
            with mmap.mmap(self._file(), self.size, access=mmap.ACCESS_READ) as mm:
                while self.size - pos >= HEADER_SIZE:
                    h = read_header(mm, pos)
                    if not header_is_sane(h) or pos + h.size > self.size or not crc_ok(mm[pos: pos + h.size], 0, h):
                        break
                    self._track(pos, h)
                    pos += h.size
        if pos < self.size and from_entry:
            te = self._time_index.last_entry()
            if pos == start or (te is not None and te[1] >= self._next_offset):
                return False
        if pos < self.size:
            log.warning("truncating %s from %d to %d bytes (incomplete or corrupt tail)", self.log_path,
                        self.size, pos)
            self._truncate_log(pos)
            self._offset_index.truncate_to_position(pos)
            self._time_index.truncate_to_offset(self._next_offset)
        return True

    def _truncate_log(self, size: int) -> None:
        os.ftruncate(self._file(), size)
        self.size = size

    # ---------------------------------------------------------------- append

    def _track(self, pos: int, h: BatchHeader) -> None:
        """Account for a batch written at `pos`: offsets, timestamps, and an index entry every interval."""
        self._next_offset = h.last_offset + 1
        if h.max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if self._bytes_since_index > self.index_interval_bytes:
            try:
                self._offset_index.append(h.last_offset, pos)
                self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            except OSError as e:   # the batch is in the log; an entry missing on disk leaves a sparser index
                if not self._index_write_failed:
                    log.warning("%s: index entry not written (%s); the in-memory index is whole", self.log_path, e)
                self._index_write_failed = True
            self._bytes_since_index = 0
        self._bytes_since_index += h.size

    def append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]],
               now_ms: int) -> None:
        """Write complete batches (positions in `batches` are relative to `data`). One OS write, no fsync.
        Raises OSError with nothing appended (a short write is cut back off the file)."""
        if self._torn:
            raise OSError(errno.EIO, f"an earlier write to {self.log_path} failed and could not be undone; a "
                                     "restart recovers the log")
        base = self.size
        view = memoryview(data)
        fd = self._file()
        written = 0
        try:
            while written < len(view):
                written += os.write(fd, view[written:])
        except OSError:
            self._undo_write(fd, base, written)
            raise
        self.size += len(view)
        if self._rolling_base_ms is None:
            self._rolling_base_ms = now_ms
        for rel, h in batches:
            self._track(base + rel, h)

    def _undo_write(self, fd: int, base: int, written: int) -> None:
        """A write failed part way (ENOSPC, EIO): cut the file back to `base`, so that the next append does not
        land behind a torn batch that recovery would truncate, taking acknowledged records after it along.
        If even that fails, refuse further appends until a restart's recovery. (Kafka takes the log directory
        offline instead.)"""
        if not written:
            return
        try:
            os.ftruncate(fd, base)
        except OSError:
            self._torn = True
            log.error("%s: a failed write left %d bytes that could not be cut back; appends refused until a "
                      "restart", self.log_path, written)

    def seal(self) -> None:
        """Called when the segment stops being active: record the final largest timestamp, fsync."""
        if self.max_timestamp >= 0:
            self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        self.flush()

    # ---------------------------------------------------------------- read

    def header_at(self, pos: int) -> BatchHeader:
        return read_header(os.pread(self._file(), HEADER_SIZE, pos))

    def batches(self, pos: int = 0, chunk: int = 16 * 1024) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `pos` to the end, reading `chunk` bytes at a time."""
        self._ensure_loaded()
        while self.size - pos >= HEADER_SIZE:
            data = os.pread(self._file(), min(max(chunk, HEADER_SIZE), self.size - pos), pos)
            off = 0
            while len(data) - off >= HEADER_SIZE:
                h = read_header(data, off)
                yield pos + off, h
                off += h.size
            pos += off

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset >= `offset`, or None if the segment has none."""
        for pos, h in self.batches(self.offset_index.lookup(offset)):
            if h.last_offset >= offset:
                return pos, h
        return None

    def read_region(self, pos: int, first_size: int, max_bytes: int, max_offset: int | None) -> FileRegion:
        """Whole batches from `pos`: at least the first one, then more while within `max_bytes`.

        Batches reaching `max_offset` (e.g. the high watermark) are left out. Only batch headers are read;
        the bytes themselves stay in the page cache until sent.
        """
        limit = min(max(max_bytes, first_size), self.size - pos)
        end, bounded = first_size, False
        while limit - end >= HEADER_SIZE:
            h = self.header_at(pos + end)
            if max_offset is not None and h.last_offset >= max_offset:
                bounded = True
                break
            if end + h.size > limit:
                break
            end += h.size
        # Kafka's slice ends at the byte limit; a read bounded by `max_offset` (the high watermark, a batch boundary)
        # ends where this one does, at the first batch left out.
        return FileRegion(self._file(), pos, end, end if bounded else limit)

    def read(self, pos: int, first_size: int, max_bytes: int, max_offset: int | None) -> bytes:
        """`read_region` read into memory."""
        return self.read_region(pos, first_size, max_bytes, max_offset).read_bytes()

    def read_batch(self, pos: int, h: BatchHeader) -> bytes:
        return os.pread(self._file(), h.size, pos)

    def find_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `start_offset` with timestamp >= `timestamp`."""
        if self.max_timestamp < timestamp:
            return None
        below = self._time_index.lookup_below(timestamp)
        start = max(start_offset, below + 1 if below is not None else self.base_offset)
        found = self.find(start)
        if found is None:
            return None
        for pos, h in self.batches(found[0]):
            if h.max_timestamp < timestamp or h.is_control:
                continue
            for r in decode_records(self.read_batch(pos, h)):
                if r.offset >= start and r.timestamp >= timestamp:
                    return r.offset, r.timestamp
        return None

    # ---------------------------------------------------------------- lifecycle

    def flush(self) -> None:
        """fsync what was written: a `.log` never opened since the last release has nothing of ours to sync."""
        if self._fd >= 0:
            os.fsync(self._fd)
        self._offset_index.fsync()
        self._time_index.fsync()
        self.txn_index.fsync()

    def close(self) -> None:
        with _open_lock:
            self._closed = True
            open_log_files.forget(self)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        self._release_indexes()

    def delete_files(self) -> None:
        """Close and remove the segment's files."""
        self.close()
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            self.log_path.with_suffix(suffix).unlink(missing_ok=True)
