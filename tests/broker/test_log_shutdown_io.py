"""What closing the logs costs at shutdown (issue 20, controlled shutdown at thousands of partitions): untouched
partitions are closed without an fsync or a file write, what was written is still made durable, and the logs are
closed in parallel so that their fsyncs overlap."""

from __future__ import annotations

import os
import threading
import time

import pytest

import broker.log.log as log_module
from broker.config import LogConfig
from broker.log.index import _IndexFile
from broker.log.manager import LogManager
from common.clock import ManualClock
from tests.broker.test_log_support import batch, read_all


def manager(root) -> LogManager:
    return LogManager([root], ManualClock(), lambda topic: LogConfig())


@pytest.fixture
def fsyncs(monkeypatch):
    """Every os.fsync, by file name."""
    seen: list[str] = []
    real = os.fsync

    def counting(fd: int) -> None:
        seen.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)
    monkeypatch.setattr(os, "fsync", counting)
    return seen


@pytest.fixture
def int_file_writes(monkeypatch):
    seen: list[str] = []
    real = log_module._write_int_file

    def counting(path, value: int) -> None:
        seen.append(path.name)
        real(path, value)
    monkeypatch.setattr(log_module, "_write_int_file", counting)
    return seen


def test_new_untouched_partitions_close_without_fsync_or_write(tmp_path, fsyncs, int_file_writes):
    m = manager(tmp_path)
    for p in range(20):
        m.get_or_create("t", p)
    m.close()
    # was 4 fsyncs per partition (three empty indexes and an empty producer snapshot) and a log-start file
    assert fsyncs == []
    assert int_file_writes == []
    again = manager(tmp_path)
    again.load_all()
    assert len(again.partitions()) == 20
    assert all(plog.log_start_offset == 0 and plog.log_end_offset == 0 for plog in again._logs.values())
    again.close()


def test_reopened_untouched_partitions_close_without_writes(tmp_path, fsyncs, int_file_writes):
    m = manager(tmp_path)
    plog = m.get_or_create("t", 0)
    plog.append_as_leader(batch(3, ts=1_000), 0)
    plog.high_watermark = plog.log_end_offset
    plog.delete_records_before(1)
    m.close()
    fsyncs.clear()
    int_file_writes.clear()
    again = manager(tmp_path)
    again.load_all()
    again.close()
    assert fsyncs == []
    assert int_file_writes == []


def test_written_partitions_are_still_made_durable(tmp_path, fsyncs, int_file_writes):
    m = manager(tmp_path)
    plog = m.get_or_create("t", 0)
    plog.append_as_leader(batch(3, ts=1_000), 0)
    plog.high_watermark = plog.log_end_offset
    plog.delete_records_before(2)
    m.close()
    assert any(name.endswith(".log") for name in fsyncs)  # the segment
    assert any(name.endswith(".snapshot.tmp") for name in fsyncs)  # the producer state at the log end
    assert "log-start-offset" in int_file_writes
    again = manager(tmp_path)
    again.load_all()
    plog = again.get_or_create("t", 0)
    assert (plog.log_start_offset, plog.log_end_offset) == (2, 3)
    assert len(read_all(plog)) == 1
    again.close()


def test_index_truncate_fsyncs_only_a_change(tmp_path, fsyncs):
    f = _IndexFile(tmp_path / "x.index")
    f.truncate(0)  # a new empty index: nothing to make durable
    f.fsync()
    assert fsyncs == []
    f.write(b"\0" * 8)
    f.fsync()
    f.truncate(0)  # stale entries removed: that must reach the disk
    f.fsync()
    assert fsyncs == ["x.index", "x.index"]


def test_logs_close_in_parallel(tmp_path, monkeypatch):
    m = manager(tmp_path)
    for p in range(16):
        m.get_or_create("t", p).append_as_leader(batch(1, ts=1_000), 0)
    lock = threading.Lock()
    running, most = 0, 0
    real = os.fsync

    def slow(fd: int) -> None:  # a disk that takes 20 ms per fsync
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        real(fd)
        with lock:
            running -= 1
    monkeypatch.setattr(os, "fsync", slow)
    m.close()
    assert most > 1
    again = manager(tmp_path)
    again.load_all()
    assert sorted(plog.log_end_offset for plog in again._logs.values()) == [1] * 16
    again.close()
