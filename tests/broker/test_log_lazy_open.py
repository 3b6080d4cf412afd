"""Segments hold no file until used (Kafka's LazyIndex, and the same for `.log` files): a broker with tens of
thousands of partitions must start within its open-file limit (issue 14)."""

import logging
import os
import sys
import threading

import pytest

from broker.config import LogConfig
from broker.log import segment
from broker.log.manager import LogManager
from common.clock import ManualClock
from tests.broker.test_log_support import batch, make_log, read_all


@pytest.fixture
def clock():
    return ManualClock()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def descriptors_under(path) -> dict[int, str]:
    """This process's open descriptors of files under `path`."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed meanwhile
            continue
        if target.startswith(f"{path}/"):
            out[int(fd)] = target
    return out


def open_files_under(path) -> list[str]:
    return sorted(descriptors_under(path).values())


def open_segment_files_under(path) -> list[str]:
    """Only segment files: the leader-epoch checkpoint thread briefly opens its `.tmp` while a test runs."""
    return [f for f in open_files_under(path) if f.endswith((".log", ".index", ".timeindex"))]


def test_loaded_and_created_partitions_hold_no_descriptor(tmp_path, clock):
    m = LogManager([tmp_path], clock, lambda topic: LogConfig())
    for p in range(200):
        m.get_or_create("many", p).append_as_leader(batch(ts=clock.now_ms()), 0)
    # As a kill -9: the descriptors go, nothing is sealed or snapshotted; every active segment's tail is checked.
    for fd in descriptors_under(tmp_path):
        os.close(fd)
    del m
    again = LogManager([tmp_path], clock, lambda topic: LogConfig())
    before = open_fds()
    again.load_all()
    again.get_or_create("new", 0)
    # no descriptor is held for the partitions; the process may close unrelated ones meanwhile (threads of
    # earlier tests), so the count must not grow rather than stay equal
    assert open_fds() <= before and open_segment_files_under(tmp_path) == []
    plog = again.get("many", 7)
    assert plog.log_end_offset == 1
    plog.append_as_leader(batch(ts=clock.now_ms()), 0)
    assert [r.offset for r in read_all(plog)] == [0, 1]
    assert open_segment_files_under(tmp_path) == [str(plog.active_segment.log_path)]
    again.close()
    assert not open_files_under(tmp_path)


def test_sealed_segments_are_read_on_first_use(tmp_path, clock, caplog):
    plog = make_log(tmp_path, clock, segment_bytes=400, index_interval_bytes=64)
    for i in range(30):
        plog.append_as_leader(batch(2, ts=clock.now_ms() + i), 0)
    want = [r.offset for r in read_all(plog)]
    assert len(plog.segments) > 3
    plog.close()
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"\x01\x02\x03")  # damaged
    with caplog.at_level(logging.INFO, logger="broker.log.segment"):
        again = make_log(tmp_path, clock, segment_bytes=400, index_interval_bytes=64)
        assert again.log_end_offset == 60 and "rebuilding" not in caplog.text
        assert open_files_under(tmp_path) == []
        # Retention looks at the oldest segment's max timestamp: its first use, which rebuilds the index.
        assert again.apply_retention() == 0
        assert "rebuilding indexes of" in caplog.text and "00000000000000000000.log" in caplog.text
    assert open_files_under(tmp_path) == [] and len(again.segments[0].offset_index) > 0
    assert [r.offset for r in read_all(again)] == want
    assert len(open_files_under(tmp_path)) == len(again.segments)  # every segment was read
    # A rolled segment lets its file go; only what is read or written stays open.
    sealed = again.active_segment.log_path
    again.roll()
    assert str(sealed) not in open_files_under(tmp_path)
    again.close()
    assert open_files_under(tmp_path) == []


@pytest.fixture
def few_open_files(monkeypatch):
    """At most 4 segments hold their .log open in this test."""
    monkeypatch.setattr(segment.open_log_files, "limit", 4)
    monkeypatch.setattr(segment.open_log_files, "_lru", type(segment.open_log_files._lru)())


def test_more_partitions_in_use_than_open_files_allowed(tmp_path, clock, few_open_files):
    m = LogManager([tmp_path], clock, lambda topic: LogConfig())
    for round_ in range(3):
        for p in range(30):
            assert m.get_or_create("t", p).append_as_leader(batch(ts=clock.now_ms(), value=b"%d" % p), 0
                                                            ).base_offset == round_
            assert len(open_segment_files_under(tmp_path)) <= 4
    for p in range(30):
        assert [r.value for r in read_all(m.get("t", p))] == [b"%d" % p] * 3
    assert len(open_segment_files_under(tmp_path)) <= 4
    m.close()
    assert open_files_under(tmp_path) == []


def test_evictions_never_close_a_file_in_use(tmp_path, clock, few_open_files):
    """Two threads write and read their own partitions while each opening evicts another's file."""
    m = LogManager([tmp_path], clock, lambda topic: LogConfig())
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for i in range(300):
                plog = m.get_or_create(name, i % 10)
                plog.append_as_leader(batch(ts=clock.now_ms(), value=b"%s-%d" % (name.encode(), i % 10)), 0)
                assert read_all(plog, plog.log_end_offset - 1)[0].value == b"%s-%d" % (name.encode(), i % 10)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to meet the races if there are any
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    for name in ("a", "b"):
        for p in range(10):
            assert [r.value for r in read_all(m.get(name, p))] == [b"%s-%d" % (name.encode(), p)] * 30
    m.close()
