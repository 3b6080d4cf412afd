import pytest

from broker.log.index import OffsetIndex, TimeIndex
from broker.log.records import iter_batches, read_header
from broker.log.segment import LogSegment
from tests.broker.test_log_support import batch


def fill(seg: LogSegment, n: int, start_offset: int = 0, ts0: int = 1_000) -> list[int]:
    """Append n two-record batches; returns their positions."""
    positions = []
    offset = start_offset
    for i in range(n):
        data = bytearray(batch(2, ts=ts0 + i * 10, value=b"v" * 30))
        h = read_header(data)
        h.base_offset = offset
        data[0:8] = offset.to_bytes(8, "big")
        positions.append(seg.size)
        seg.append(data, [(0, h)], now_ms=0)
        offset += 2
    return positions


def test_offset_index_lookup_and_truncate(tmp_path):
    idx = OffsetIndex(tmp_path / "x.index", 100)
    for off, pos in [(101, 0), (105, 300), (109, 700)]:
        idx.append(off, pos)
    assert (tmp_path / "x.index").stat().st_size == 24
    assert [idx.lookup(o) for o in (100, 101, 104, 105, 108, 109, 500)] == [0, 0, 0, 300, 300, 700, 700]
    idx.truncate_to_position(300)
    assert len(idx) == 1 and (tmp_path / "x.index").stat().st_size == 8
    again = OffsetIndex(tmp_path / "x.index", 100)
    assert again.load(log_size=1000) and again.last_entry() == (101, 0)


def test_time_index_lookup(tmp_path):
    idx = TimeIndex(tmp_path / "x.timeindex", 0)
    idx.maybe_append(10, 3)
    idx.maybe_append(10, 5)  # not larger: ignored
    idx.maybe_append(20, 7)
    assert len(idx) == 2 and (tmp_path / "x.timeindex").stat().st_size == 24
    assert [idx.lookup_below(t) for t in (5, 10, 11, 20, 21)] == [None, None, 3, 3, 7]
    idx.truncate_to_offset(7)
    assert idx.last_entry() == (10, 3)
    again = TimeIndex(tmp_path / "x.timeindex", 0)
    assert again.load() and len(again) == 1


@pytest.mark.parametrize("raw", [b"\x00" * 7, bytes.fromhex("0000000500000010" "0000000300000020")])
def test_corrupt_offset_index_is_detected(tmp_path, raw):
    (tmp_path / "x.index").write_bytes(raw)
    assert not OffsetIndex(tmp_path / "x.index", 0).load(log_size=1000)


def test_segment_indexes_every_interval_and_finds_offsets(tmp_path):
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=200)
    positions = fill(seg, 20)
    assert 3 <= len(seg.offset_index) < 20
    assert seg.next_offset == 40 and seg.max_timestamp == 1_190 and seg.offset_of_max_timestamp == 39
    for off in range(40):
        pos, h = seg.find(off)
        assert pos == positions[off // 2] and h.base_offset == off - off % 2
    assert seg.find(40) is None
    assert seg.find_by_timestamp(1_055, 0) == (12, 1_060)
    assert seg.find_by_timestamp(1_055, 20) == (20, 1_100)


def test_segment_reopen_uses_indexes_and_rebuilds_missing_ones(tmp_path):
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=200)
    fill(seg, 20)
    entries = len(seg.offset_index)
    seg.seal()
    seg.close()
    again = LogSegment.open(tmp_path, 0, 200)
    assert (again.next_offset, again.max_timestamp, len(again.offset_index)) == (40, 1_190, entries)
    again.close()
    (tmp_path / "00000000000000000000.index").unlink()
    (tmp_path / "00000000000000000000.timeindex").write_bytes(b"\x01\x02")
    rebuilt = LogSegment.open(tmp_path, 0, 200)
    assert (rebuilt.next_offset, rebuilt.max_timestamp, len(rebuilt.offset_index)) == (40, 1_190, entries)
    assert rebuilt.find_by_timestamp(1_100, 0) == (20, 1_100)


def test_segment_read_returns_whole_batches(tmp_path):
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=4096)
    positions = fill(seg, 5)
    pos, h = seg.find(4)
    data = seg.read(pos, h.size, max_bytes=h.size * 2 + 10, max_offset=None)
    assert [hh.base_offset for _, hh in iter_batches(data)] == [4, 6] and len(data) == positions[4] - positions[2]
    assert [hh.base_offset for _, hh in iter_batches(seg.read(pos, h.size, 1 << 20, max_offset=8))] == [4, 6]
