"""Sparse segment indexes in Kafka's file format (big-endian, relative to the segment's base offset).

`.index`: 8-byte entries (relative offset int32, file position int32), mapping a batch's last offset to the
position where that batch starts. `.timeindex`: 12-byte entries (timestamp int64, relative offset int32), the
segment's largest timestamp so far and the last offset of the batch that carried it.

Entries live in memory (arrays), read from the file when their segment is first used (as Kafka's LazyIndex
defers opening it; see segment.py), and are appended to the file as they are made, so after a kill -9 the file
holds every entry made before the crash. Unlike Kafka the files are not preallocated, so their size is
always a whole number of entries.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from operator import le, lt
from pathlib import Path

from broker.log.open_files import share_of_open_files

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def _load_array(code: str, data: bytes) -> array:
    a = array(code)
    a.frombytes(data)
    if sys.byteorder == "little":
        a.byteswap()
    return a


def _increasing(a: array, strict: bool) -> bool:
    return all(map(lt if strict else le, a, a[1:]))


class _WriteDescriptors:
    """Descriptors of the index files written most recently, at most `limit` of them (an eighth of the soft
    open-file limit, at most 1,024, unless set); past it the least recently written is closed.

    An active segment's two indexes get an entry every `index.interval.bytes` (4 KiB), which for batches of that
    size is every append: an open and a close per entry were ~20 µs of every leader and follower append, on the
    acks=all path (issue 20). Bounded so that a broker writing to tens of thousands of partitions stays inside its
    open-file limit (issue 14): such a broker reopens, as every write did before. One lock guards the table and the
    write itself, so no thread writes through a descriptor another is closing.
    """

    def __init__(self) -> None:
        self.limit: int | None = None
        self._lock = threading.Lock()
        self._fds: OrderedDict[_IndexFile, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._fds)

    def _limit(self) -> int:
        if self.limit is None:
            self.limit = share_of_open_files(8, 4, 1024)
        return self.limit

    def write(self, index_file: _IndexFile, data: bytes) -> None:
        with self._lock:
            fd = self._fds.get(index_file)
            if fd is None:
                fd = self._open(index_file.path)
                self._fds[index_file] = fd
                while len(self._fds) > max(1, self._limit()):   # never the one just opened (the last)
                    os.close(self._fds.popitem(last=False)[1])
            else:
                self._fds.move_to_end(index_file)
            n = os.write(fd, data)
            if n != len(data):   # a short write (the disk filled up): no torn entry left behind
                os.ftruncate(fd, os.fstat(fd).st_size - n)
                raise OSError(errno.ENOSPC, f"short write to {index_file.path}")

    def _open(self, path: Path) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        try:
            return os.open(path, flags, 0o644)
        except OSError as e:
            # Out of descriptors (sockets and in-flight Fetch regions took the room): give back every kept one
            # and try once more, as a segment's `.log` open gives back half of its share.
            if e.errno != errno.EMFILE or not self._fds:
                raise
            while self._fds:
                os.close(self._fds.popitem()[1])
        return os.open(path, flags, 0o644)

    def fsync(self, index_file: _IndexFile) -> bool:
        """fsync through a copy of the file's descriptor if one is open (the lock is not held while the disk
        works, and an eviction meanwhile closes only the original); False if none is."""
        with self._lock:
            fd = self._fds.get(index_file)
            if fd is None:
                return False
            fd = os.dup(fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return True

    def release(self, index_file: _IndexFile) -> None:
        with self._lock:
            fd = self._fds.pop(index_file, None)
            if fd is not None:
                os.close(fd)


class _IndexFile:
    """The append-only file behind one index. It is read once, when its segment is first used; it is written
    through a descriptor of `write_descriptors`, kept only while the file is among the most recently written and
    its segment is in use, so a broker with tens of thousands of segments stays well inside its open-file limit. A
    missing file reads as empty (the segment rebuilds it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._unsynced = False

    def read_all(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

    def write(self, data: bytes) -> None:
        write_descriptors.write(self, data)
        self._unsynced = True

    def truncate(self, size: int) -> None:
        # Its own descriptor: a kept one appends (O_APPEND), so it writes at the new end after this.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size == size:
                # e.g. a new segment's empty index: nothing to make durable (a missing index is rebuilt), and
                # an fsync per index of every new partition tripled the time to close them (issue 20)
                return
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        self._unsynced = True

    def fsync(self) -> None:
        """fsync if written since the last fsync (a broker flushing thousands of idle segments opens nothing)."""
        if not self._unsynced:
            return
        if not write_descriptors.fsync(self):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unsynced = False

    def release(self) -> None:
        """Close the kept write descriptor, if any (the segment is closed, deleted or no longer written)."""
        write_descriptors.release(self)


write_descriptors = _WriteDescriptors()


class OffsetIndex:
    """Offset → file position, one entry every `index.interval.bytes` of log."""

    ENTRY_SIZE = 8

    def __init__(self, path: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self._file = _IndexFile(path)
        self._offsets = array("i")
        self._positions = array("i")

    def load(self, log_size: int) -> bool:
        """Read the file; False when it is corrupt (partial entry, not increasing, or past the log's end)."""
        data = self._file.read_all()
        if len(data) % self.ENTRY_SIZE:
            return False
        pairs = _load_array("i", data)
        offsets, positions = pairs[0::2], pairs[1::2]
        if not (_increasing(offsets, True) and _increasing(positions, True)):
            return False
        if offsets and (offsets[0] < 0 or positions[0] < 0 or positions[-1] >= log_size):
            return False
        self._offsets, self._positions = offsets, positions
        return True

    def __len__(self) -> int:
        return len(self._offsets)

    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry."""
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        self._offsets.append(rel)
        self._positions.append(position)
        self._file.write(_OFFSET_ENTRY.pack(rel, position))

    def lookup(self, offset: int) -> int:
        """Position to start scanning from for `offset` (the batch of the largest entry <= offset), else 0."""
        # An entry's offset is its batch's last offset, so the batch holding `offset` starts there or later.
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        return self._positions[i] if i >= 0 else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond `position` (the log was truncated there)."""
        keep = bisect_left(self._positions, position)
        if keep < len(self._positions):
            del self._offsets[keep:]
            del self._positions[keep:]
            self._file.truncate(keep * self.ENTRY_SIZE)

    def reset(self) -> None:
        self._offsets, self._positions = array("i"), array("i")
        self._file.truncate(0)

    def fsync(self) -> None:
        self._file.fsync()

    def release(self) -> None:
        self._file.release()


class TimeIndex:
    """Largest timestamp so far → offset, appended only when the largest timestamp grows."""

    ENTRY_SIZE = 12

    def __init__(self, path: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self._file = _IndexFile(path)
        self._timestamps = array("q")
        self._offsets = array("i")

    def load(self) -> bool:
        """Read the file; False when it is corrupt (partial entry or not increasing)."""
        data = self._file.read_all()
        if len(data) % self.ENTRY_SIZE:
            return False
        n = len(data) // self.ENTRY_SIZE
        timestamps, offsets = array("q"), array("i")
        for i in range(n):
            ts, off = _TIME_ENTRY.unpack_from(data, i * self.ENTRY_SIZE)
            timestamps.append(ts)
            offsets.append(off)
        if not (_increasing(timestamps, True) and _increasing(offsets, False)):
            return False
        if offsets and offsets[0] < 0:
            return False
        self._timestamps, self._offsets = timestamps, offsets
        return True

    def __len__(self) -> int:
        return len(self._timestamps)

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry."""
        if not self._timestamps:
            return None
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append when `timestamp` is larger than the last entry's."""
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        rel = offset - self.base_offset
        self._timestamps.append(timestamp)
        self._offsets.append(rel)
        self._file.write(_TIME_ENTRY.pack(timestamp, rel))

    def lookup_below(self, timestamp: int) -> int | None:
        """Offset of the entry with the largest timestamp < `timestamp`: every record up to it is older."""
        i = bisect_left(self._timestamps, timestamp) - 1
        return self.base_offset + self._offsets[i] if i >= 0 else None

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        keep = bisect_left(self._offsets, offset - self.base_offset)
        if keep < len(self._offsets):
            del self._timestamps[keep:]
            del self._offsets[keep:]
            self._file.truncate(keep * self.ENTRY_SIZE)

    def reset(self) -> None:
        self._timestamps, self._offsets = array("q"), array("i")
        self._file.truncate(0)

    def fsync(self) -> None:
        self._file.fsync()

    def release(self) -> None:
        self._file.release()
