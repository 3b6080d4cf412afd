"""Index files are written through a bounded set of kept descriptors (index.py's `write_descriptors`): an entry
per append no longer costs an open and a close (issue 20), and a broker writing to many partitions still holds at
most `limit` of them (issue 14)."""

import errno
import os

import pytest

from broker.log import index as index_module
from broker.log import open_files
from broker.log.index import OffsetIndex
from common.clock import ManualClock
from tests.broker.test_log_lazy_open import descriptors_under
from tests.broker.test_log_support import batch, make_log, read_all

INDEX_FILES = (".index", ".timeindex")


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def few_descriptors(monkeypatch):
    """At most 4 index files keep a write descriptor in this test."""
    monkeypatch.setattr(index_module.write_descriptors, "limit", 4)
    monkeypatch.setattr(index_module.write_descriptors, "_fds", type(index_module.write_descriptors._fds)())


@pytest.fixture
def opens(monkeypatch):
    """Index files passed to os.open."""
    seen: list[str] = []
    real = os.open

    def counting(path, *args, **kwargs):
        seen.append(os.fspath(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(index_module.os, "open", counting)
    return seen


def open_index_files(path) -> list[str]:
    return sorted(f for f in descriptors_under(path).values() if f.endswith(INDEX_FILES))


def test_an_index_written_on_every_append_is_opened_once(tmp_path, clock, opens):
    plog = make_log(tmp_path, clock, index_interval_bytes=0)   # an entry per batch after the first
    opens.clear()
    for i in range(51):
        plog.append_as_leader(batch(ts=clock.now_ms() + i), 0)
    seg = plog.active_segment
    assert len(seg.offset_index) == 50 and len(seg.time_index) == 50
    assert sorted(f for f in opens if f.endswith(INDEX_FILES)) == sorted(str(seg.log_path.with_suffix(s)) for s in INDEX_FILES)
    # Written as they are made: the files hold every entry without a close (what a kill -9 leaves).
    assert seg.log_path.with_suffix(".index").stat().st_size == 50 * OffsetIndex.ENTRY_SIZE
    assert seg.log_path.with_suffix(".timeindex").stat().st_size == 50 * 12
    plog.close()
    assert open_index_files(tmp_path) == []


def test_at_most_limit_index_files_stay_open(tmp_path, clock, few_descriptors):
    logs = [make_log(tmp_path, clock, partition=p, index_interval_bytes=0) for p in range(6)]
    for round_ in range(3):
        for p, plog in enumerate(logs):
            plog.append_as_leader(batch(ts=clock.now_ms() + round_, value=b"%d" % p), 0)
            assert len(open_index_files(tmp_path)) <= 4
    for p, plog in enumerate(logs):
        assert [r.value for r in read_all(plog)] == [b"%d" % p] * 3
        seg = plog.active_segment
        assert seg.log_path.with_suffix(".index").stat().st_size == 2 * OffsetIndex.ENTRY_SIZE  # not the first
    # Reopened from disk, every entry is there (none lost with an evicted descriptor).
    for p, plog in enumerate(logs):
        plog.close()
        again = make_log(tmp_path, clock, partition=p, index_interval_bytes=0)
        assert len(again.active_segment.offset_index) == 2
        again.close()
    assert open_index_files(tmp_path) == []


def test_rolled_and_deleted_segments_let_their_index_files_go(tmp_path, clock):
    plog = make_log(tmp_path, clock, index_interval_bytes=0, segment_bytes=300)
    for i in range(12):
        plog.append_as_leader(batch(ts=clock.now_ms() + i), 0)
    assert len(plog.segments) > 2
    # Only the active segment's indexes are open for writing: a rolled one was released.
    active = plog.active_segment.log_path
    assert open_index_files(tmp_path) == sorted(str(active.with_suffix(s)) for s in INDEX_FILES)
    plog.delete_records_before(plog.log_end_offset)   # every sealed segment goes
    plog.roll()
    plog.apply_retention()
    assert all(str(active.with_suffix(s)) not in open_index_files(tmp_path) for s in INDEX_FILES)
    plog.delete()
    assert descriptors_under(tmp_path) == {}   # nothing open, not even a removed file's "(deleted)" inode


def test_flush_syncs_through_a_kept_descriptor_without_holding_it(tmp_path, clock, monkeypatch):
    plog = make_log(tmp_path, clock, index_interval_bytes=0)
    for i in range(3):
        plog.append_as_leader(batch(ts=clock.now_ms() + i), 0)
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        # Another thread may write index entries meanwhile: the table's lock is free during the fsync.
        assert index_module.write_descriptors._lock.acquire(blocking=False)
        index_module.write_descriptors._lock.release()
        real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    before = descriptors_under(tmp_path)
    plog.flush()
    assert {str(plog.active_segment.log_path.with_suffix(s)) for s in INDEX_FILES} <= set(synced)
    assert descriptors_under(tmp_path) == before   # the copies used for the fsync are closed again
    plog.close()


def test_out_of_descriptors_gives_back_the_kept_ones_and_writes(tmp_path, clock, monkeypatch):
    logs = [make_log(tmp_path, clock, partition=p, index_interval_bytes=0) for p in range(3)]
    for plog in logs[:2]:
        for i in range(2):
            plog.append_as_leader(batch(ts=clock.now_ms() + i), 0)
    assert len(open_index_files(tmp_path)) == 4
    real = os.open
    refused: list[str] = []

    def emfile_once(path, *args, **kwargs):
        if os.fspath(path).endswith(".index") and not refused:
            refused.append(os.fspath(path))
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", emfile_once)
    third = logs[2]
    third.append_as_leader(batch(ts=clock.now_ms()), 0)
    third.append_as_leader(batch(ts=clock.now_ms() + 1), 0)   # its first index entry: refused once, then written
    assert refused and third.active_segment.log_path.with_suffix(".index").stat().st_size == OffsetIndex.ENTRY_SIZE
    # the others' descriptors were given back; their next entries reopen
    assert open_index_files(tmp_path) == sorted(str(third.active_segment.log_path.with_suffix(s)) for s in INDEX_FILES)
    monkeypatch.setattr(os, "open", real)
    logs[0].append_as_leader(batch(ts=clock.now_ms() + 5), 0)
    assert len(logs[0].active_segment.offset_index) == 2
    for plog in logs:
        plog.close()


@pytest.mark.parametrize("soft, divisor, minimum, maximum, want", [
    (1024, 8, 4, 1024, 128),       # index files: an eighth of the limit
    (1024, 2, 16, 1 << 20, 512),   # .log files: half
    (16, 8, 4, 1024, 4),           # never below the floor
    (1 << 22, 8, 4, 1024, 1024),   # nor above the cap
])
def test_share_of_open_files(monkeypatch, soft, divisor, minimum, maximum, want):
    monkeypatch.setattr(open_files.resource, "getrlimit", lambda which: (soft, soft))
    assert open_files.share_of_open_files(divisor, minimum, maximum) == want


def test_share_of_unlimited_open_files_is_the_cap(monkeypatch):
    inf = open_files.resource.RLIM_INFINITY
    monkeypatch.setattr(open_files.resource, "getrlimit", lambda which: (inf, inf))
    assert open_files.share_of_open_files(8, 4, 1024) == 1024
