import os

import pytest
from crc32c import crc32c

from broker.config import LogConfig
from broker.errors import ErrorCode, KafkaError
from broker.log.records import GZIP, LZ4, Record, build_batch, iter_batches, read_header
from common.clock import ManualClock
from tests.broker.test_log_support import batch, keyed, make_log, read_all, records_of


@pytest.fixture
def clock():
    return ManualClock()


def dir_listing(plog):
    return sorted(os.listdir(plog.directory))


def test_append_assigns_offsets_and_read_round_trips(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    r1 = plog.append_as_leader(batch(3, ts=clock.now_ms()), leader_epoch=4)
    r2 = plog.append_as_leader(batch(2, ts=clock.now_ms(), value=b"x"), leader_epoch=4)
    assert (r1.base_offset, r1.last_offset, r1.record_count, r1.log_append_time_ms) == (0, 2, 3, -1)
    assert (r2.base_offset, r2.last_offset, r2.log_start_offset, r2.duplicate) == (3, 4, 0, False)
    assert plog.log_end_offset == plog.high_watermark == 5
    data = plog.read(0, 1 << 20)
    heads = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in heads] == [(0, 4), (3, 4)]
    assert [r.offset for r in records_of(data)] == [0, 1, 2, 3, 4]
    # An offset inside a batch returns that whole batch.
    assert [h.base_offset for _, h in iter_batches(plog.read(4, 1 << 20))] == [3]
    assert plog.read(5, 1 << 20) == b""
    assert [h.base_offset for _, h in iter_batches(plog.read(0, 1 << 20, max_offset=3))] == [0]


def test_read_bounds_and_min_one_batch(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    big = batch(1, ts=clock.now_ms(), value=b"z" * 5000)
    plog.append_as_leader(big, 0)
    plog.append_as_leader(batch(1, ts=clock.now_ms()), 0)
    # KIP-74: the first batch comes back even though it is larger than max_bytes.
    assert [h.base_offset for _, h in iter_batches(plog.read(0, 10))] == [0]
    assert [h.base_offset for _, h in iter_batches(plog.read(0, 1 << 20))] == [0, 1]
    # max_offset (the high watermark) excludes batches reaching it.
    assert [h.base_offset for _, h in iter_batches(plog.read(0, 1 << 20, max_offset=1))] == [0]
    assert plog.read(1, 1 << 20, max_offset=1) == b""
    with pytest.raises(KafkaError) as e:
        plog.read(3, 100)
    assert e.value.code == ErrorCode.offset_out_of_range
    with pytest.raises(KafkaError):
        plog.read(-1, 100)


def test_rolls_on_segment_bytes_and_reads_across_segments(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=500)
    for i in range(20):
        plog.append_as_leader(batch(2, ts=clock.now_ms(), value=b"%03d" % i * 20), 0)
    assert plog.segment_count > 3
    assert all(s.size <= 500 for s in plog.segments)
    assert [r.offset for r in read_all(plog)] == list(range(40))
    names = dir_listing(plog)
    assert "00000000000000000000.log" in names and f"{plog.segments[1].base_offset:020d}.index" in names
    assert all(f"{s.base_offset:020d}.timeindex" in names for s in plog.segments)


def test_rolls_on_segment_ms(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_ms=60_000)
    plog.append_as_leader(batch(ts=clock.now_ms()), 0)
    clock.advance(30_000)
    plog.append_as_leader(batch(ts=clock.now_ms()), 0)
    assert plog.segment_count == 1
    clock.advance(30_001)
    plog.append_as_leader(batch(ts=clock.now_ms()), 0)
    assert plog.segment_count == 2 and plog.active_segment.base_offset == 2


def test_offset_for_timestamp_and_max_timestamp(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=400, index_interval_bytes=50)
    t0 = clock.now_ms()
    for i in range(30):
        recs = [Record(timestamp=t0 + i * 10 + j, key=b"k", value=b"v" * 10) for j in range(3)]
        plog.append_as_leader(build_batch(recs), 0)
    assert plog.segment_count > 2
    assert plog.offset_for_timestamp(t0) == (0, t0)
    assert plog.offset_for_timestamp(t0 + 101) == (31, t0 + 101)
    assert plog.offset_for_timestamp(t0 + 103) == (33, t0 + 110)   # first record with ts >= target
    assert plog.offset_for_timestamp(t0 + 292) == (89, t0 + 292)
    assert plog.offset_for_timestamp(t0 + 293) is None
    assert plog.max_timestamp_offset() == (89, t0 + 292)
    # Out-of-order timestamps: the max may sit in the middle.
    plog.append_as_leader(build_batch([Record(timestamp=t0 + 1_000, key=b"k", value=b"m"),
                                       Record(timestamp=t0, key=b"k", value=b"n")]), 0)
    assert plog.max_timestamp_offset() == (90, t0 + 1_000)


def test_log_append_time(tmp_path, clock):
    plog = make_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    res = plog.append_as_leader(batch(3, ts=1), 0)
    assert res.log_append_time_ms == clock.now_ms()
    data = bytes(plog.read(0, 1 << 20))
    h = read_header(data)
    assert h.timestamp_type == 1 and h.max_timestamp == clock.now_ms()
    assert crc32c(data[21:h.size]) == h.crc
    assert {r.timestamp for r in records_of(data)} == {clock.now_ms()}


def assert_unchanged(plog, before):
    assert (plog.log_end_offset, plog.size_bytes, dir_listing(plog)) == before


@pytest.mark.parametrize("case", [
    "crc", "too_large", "magic", "count_mismatch", "zero_count", "control", "pid_without_seq", "two_batches",
    "log_append_time_from_client", "truncated", "nonzero_base_offset",
])
def test_validation_errors_leave_the_log_unchanged(tmp_path, clock, case):
    plog = make_log(tmp_path, clock, max_message_bytes=2000)
    plog.append_as_leader(batch(ts=clock.now_ms()), 0)
    before = (plog.log_end_offset, plog.size_bytes, dir_listing(plog))
    good = bytearray(batch(2, ts=clock.now_ms()))
    expected = ErrorCode.invalid_record
    if case == "crc":
        good[-1] ^= 0xFF
        expected = ErrorCode.corrupt_message
    elif case == "too_large":
        good = bytearray(batch(ts=clock.now_ms(), value=b"x" * 3000))
        expected = ErrorCode.message_too_large
    elif case == "magic":
        good[16] = 1
        expected = ErrorCode.unsupported_for_message_format
    elif case == "count_mismatch":
        good = bytearray(build_batch([Record(timestamp=1, key=b"k", value=b"v")] * 2, last_offset_delta=5))
    elif case == "zero_count":
        good = bytearray(build_batch([]))
    elif case == "control":
        good = bytearray(build_batch([Record(timestamp=1, key=b"\0\0\0\1", value=b"\0\0\0\0\0\0")], is_control=True))
    elif case == "pid_without_seq":
        good = bytearray(batch(ts=1, producer_id=5, producer_epoch=0, base_sequence=-1))
    elif case == "two_batches":
        good += batch(ts=1)
    elif case == "log_append_time_from_client":
        good = bytearray(batch(ts=1, timestamp_type=1))
        expected = ErrorCode.invalid_timestamp
    elif case == "nonzero_base_offset":
        good = bytearray(batch(ts=1, base_offset=7))
    elif case == "truncated":
        good = good[:40]
        expected = ErrorCode.corrupt_message
    with pytest.raises(KafkaError) as e:
        plog.append_as_leader(bytes(good), 0)
    assert e.value.code == expected
    assert_unchanged(plog, before)


@pytest.mark.parametrize("codec", [0, GZIP, LZ4])
def test_compacted_topic_requires_keys(tmp_path, clock, codec):
    plog = make_log(tmp_path, clock, cleanup_policy="compact")
    plog.append_as_leader(keyed([(b"a", b"1")], ts=1, compression=codec), 0)
    before = (plog.log_end_offset, plog.size_bytes, dir_listing(plog))
    with pytest.raises(KafkaError) as e:
        plog.append_as_leader(keyed([(b"a", b"1"), (None, b"2")], ts=1, compression=codec), 0)
    assert e.value.code == ErrorCode.invalid_record
    assert_unchanged(plog, before)


def test_trailing_partial_batch_is_ignored(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    data = batch(2, ts=1)
    res = plog.append_as_leader(memoryview(data + data[:30]), 0)
    assert (res.base_offset, res.last_offset, plog.log_end_offset) == (0, 1, 2)
    assert len(bytes(plog.read(0, 1 << 20))) == len(data)


def test_compressed_batches_stored_verbatim(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    data = batch(10, ts=5, compression=GZIP)
    plog.append_as_leader(data, 0)
    plog.append_as_leader(data, 0)
    out = bytes(plog.read(10, 1 << 20))
    assert out[61:] == data[61:] and read_header(out).base_offset == 10
    assert [r.offset for r in records_of(out)] == list(range(10, 20))


@pytest.mark.parametrize("topic_codec, sent, stored", [
    ("gzip", 0, GZIP), ("uncompressed", LZ4, 0), ("lz4", LZ4, LZ4), ("producer", GZIP, GZIP)])
def test_topic_compression_type(tmp_path, clock, topic_codec, sent, stored):
    plog = make_log(tmp_path, clock, compression_type=topic_codec)
    sent_batch = build_batch([Record(timestamp=5 + i, key=b"k%d" % i, value=b"v" * 50) for i in range(4)],
                             compression=sent, producer_id=3, producer_epoch=1, base_sequence=0)
    plog.append_as_leader(sent_batch, 0)
    data = bytes(plog.read(0, 1 << 20))
    h = read_header(data)
    assert h.compression == stored and crc32c(data[21:h.size]) == h.crc
    assert (h.producer_id, h.base_sequence, h.max_timestamp, h.record_count) == (3, 0, 8, 4)
    assert [(r.offset, r.key, r.timestamp) for r in records_of(data)] == [
        (i, b"k%d" % i, 5 + i) for i in range(4)]


def test_retention_by_time_and_size(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300, retention_ms=20_000)
    t0 = clock.now_ms()
    for _ in range(12):
        plog.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 100), 0)
        clock.advance(1_000)
    assert plog.segment_count == 12  # one 171-byte batch per 300-byte segment
    assert plog.apply_retention() == 0
    clock.advance(10_000)
    assert clock.now_ms() - t0 == 22_000
    # Largest timestamps t0 and t0+1s are more than 20 s old; t0+2s is exactly 20 s old and stays.
    assert plog.apply_retention() == 2
    assert plog.log_start_offset == plog.segments[0].base_offset == 2
    assert not (plog.directory / "00000000000000000000.log").exists()
    with pytest.raises(KafkaError):
        plog.read(0, 100)
    clock.advance(1_000_000)
    plog.apply_retention()
    assert plog.segment_count == 1  # never the active segment

    sized = make_log(tmp_path, clock, topic="s", segment_bytes=300, retention_bytes=600)
    for _ in range(12):
        sized.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 100), 0)
    sized.apply_retention()
    assert sized.size_bytes <= 600 + 300 and sized.size_bytes > 300
    assert [r.offset for r in read_all(sized)][-1] == 11


def test_retention_only_with_delete_policy(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300, retention_ms=1, cleanup_policy="compact")
    for _ in range(6):
        plog.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 100), 0)
    clock.advance(10_000)
    assert plog.apply_retention() == 0
    plog.update_config(LogConfig(segment_bytes=300, retention_ms=1, cleanup_policy="compact,delete"))
    assert plog.apply_retention() > 0


def test_delete_records(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300)
    for _ in range(10):
        plog.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 50), 0)
    assert [s.base_offset for s in plog.segments] == [0, 2, 4, 6, 8]
    with pytest.raises(KafkaError) as e:
        plog.delete_records_before(11)
    assert e.value.code == ErrorCode.offset_out_of_range
    second = plog.segments[1].base_offset
    assert plog.delete_records_before(second + 1) == second + 1
    assert plog.segments[0].base_offset == second
    assert read_all(plog)[0].offset == second + 1
    with pytest.raises(KafkaError):
        plog.read(second, 100)
    plog.close()
    reopened = make_log(tmp_path, clock, segment_bytes=300)
    assert reopened.log_start_offset == second + 1
    assert reopened.delete_records_before(10) == 10
    assert reopened.read(10, 100) == b"" and reopened.log_end_offset == 10
    assert reopened.append_as_leader(batch(ts=1), 0).base_offset == 10


def test_close_reopen_preserves_everything(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=400, index_interval_bytes=64)
    for i in range(30):
        plog.append_as_leader(batch(2, ts=clock.now_ms() + i), 0)
    want = [(r.offset, r.timestamp) for r in read_all(plog)]
    maxts = plog.max_timestamp_offset()
    plog.close()
    again = make_log(tmp_path, clock, segment_bytes=400, index_interval_bytes=64)
    assert again.log_end_offset == 60 and again.high_watermark == 60
    assert [(r.offset, r.timestamp) for r in read_all(again)] == want
    assert again.max_timestamp_offset() == maxts
    assert again.offset_for_timestamp(clock.now_ms() + 20) == (40, clock.now_ms() + 20)


def corrupt_tail_setup(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=2000, index_interval_bytes=100)
    for i in range(40):
        plog.append_as_leader(batch(2, ts=clock.now_ms() + i, value=b"%02d" % i * 10), 0)
    plog.active_segment.offset_index.fsync()
    want = [(r.offset, r.value) for r in read_all(plog)]
    active = plog.active_segment.log_path
    # Simulate kill -9: no close(); the OS already holds every write.
    return want, active


@pytest.mark.parametrize("damage", ["garbage", "half_batch", "bad_crc_tail", "zeros"])
def test_crash_recovery_truncates_torn_tail(tmp_path, clock, damage):
    want, active = corrupt_tail_setup(tmp_path, clock)
    extra = batch(2, ts=1, value=b"tail")
    with open(active, "r+b") as f:
        f.seek(0, 2)
        if damage == "garbage":
            f.write(os.urandom(37))
        elif damage == "half_batch":
            f.write(extra[: len(extra) // 2])
        elif damage == "zeros":
            f.write(bytes(4096))
        else:
            # The last complete batch is damaged: it must go too.
            f.seek(-3, 2)
            f.write(b"\xff\xfe\xfd")
            want = want[:-2]
    again = make_log(tmp_path, clock, segment_bytes=2000, index_interval_bytes=100)
    assert again.log_end_offset == 80 - (2 if damage == "bad_crc_tail" else 0)
    assert [(r.offset, r.value) for r in read_all(again)] == want
    assert again.append_as_leader(batch(ts=1), 0).base_offset == again.log_end_offset - 1


def test_damaged_last_batch_after_clean_close(tmp_path, clock):
    plog = make_log(tmp_path, clock, index_interval_bytes=100)
    t0 = clock.now_ms()
    for i in range(10):
        plog.append_as_leader(batch(2, ts=t0 + i, value=b"x" * 40), 0)
    path = plog.active_segment.log_path
    plog.close()  # the time index now ends with the last batch's timestamp
    with open(path, "r+b") as f:
        f.seek(-3, 2)
        f.write(b"\xff\xfe\xfd")
    again = make_log(tmp_path, clock, index_interval_bytes=100)
    assert again.log_end_offset == 18
    assert again.max_timestamp_offset() == (16, t0 + 8)
    assert again.offset_for_timestamp(t0 + 9) is None


@pytest.mark.parametrize("damage", ["delete", "garbage", "non_monotonic", "truncate_partial"])
def test_crash_recovery_rebuilds_indexes(tmp_path, clock, damage):
    want, active = corrupt_tail_setup(tmp_path, clock)
    with open(active, "ab") as f:
        f.write(batch(3, ts=1)[:50])
    first_index = active.parent / "00000000000000000000.index"
    last_index = active.with_suffix(".index")
    for idx in {first_index, last_index}:
        if damage == "delete":
            idx.unlink()
            active.with_suffix(".timeindex").unlink(missing_ok=True)
        elif damage == "garbage":
            idx.write_bytes(os.urandom(13))
        elif damage == "non_monotonic":
            idx.write_bytes(bytes.fromhex("00000005000000640000000100000010"))
        else:
            idx.write_bytes(idx.read_bytes()[:-3])
    again = make_log(tmp_path, clock, segment_bytes=2000, index_interval_bytes=100)
    assert again.log_end_offset == 80
    assert [(r.offset, r.value) for r in read_all(again)] == want
    for off in range(0, 80, 7):
        assert [r.offset for r in records_of(again.read(off, 1))][-1] >= off
    assert all(len(s.offset_index) > 0 for s in again.segments[:-1])


def test_follower_append(tmp_path, clock):
    leader = make_log(tmp_path, clock, topic="l")
    for i in range(3):
        leader.append_as_leader(batch(2, ts=i), 1)
    follower = make_log(tmp_path, clock, topic="f")
    follower.append_as_follower(leader.read(0, 1 << 20))
    assert follower.log_end_offset == 6
    assert bytes(follower.read(0, 1 << 20)) == bytes(leader.read(0, 1 << 20))
    follower.append_as_follower(leader.read(2, 1 << 20))  # already present: skipped
    assert follower.log_end_offset == 6
    with pytest.raises(KafkaError):
        follower.append_as_follower(build_batch([Record(timestamp=1, key=b"k", value=b"v")], 9))


def test_delete_removes_directory(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(batch(ts=1), 0)
    plog.delete()
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_refuses_the_append_and_loses_no_acknowledged_record(tmp_path, clock, monkeypatch):
    """A write cut short by ENOSPC: the producer gets KAFKA_STORAGE_ERROR with nothing appended, the torn bytes
    are cut back off the segment, and once there is room again the log goes on. Before, the torn batch stayed, the
    next acknowledged batches landed behind it, and recovery truncated them away (a drill on a full tmpfs)."""
    from broker.log import segment

    plog = make_log(tmp_path, clock)
    plog.append_as_leader(batch(2, ts=clock.now_ms(), value=b"a"), 0)
    size = plog.active_segment.size
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])   # a short write, then no room at all
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(segment.os, "write", full_disk)
    with pytest.raises(KafkaError) as refused:
        plog.append_as_leader(batch(2, ts=clock.now_ms(), value=b"lost"), 0)
    monkeypatch.setattr(segment.os, "write", real_write)
    assert refused.value.code == ErrorCode.kafka_storage_error and len(calls) == 2
    assert plog.log_end_offset == 2 and os.path.getsize(plog.active_segment.log_path) == size
    plog.append_as_leader(batch(2, ts=clock.now_ms(), value=b"c"), 0)
    want = [(0, b"a"), (1, b"a"), (2, b"c"), (3, b"c")]
    assert [(r.offset, r.value) for r in read_all(plog)] == want
    plog.close()
    again = make_log(tmp_path, clock)   # recovery after a restart keeps all of them
    assert [(r.offset, r.value) for r in read_all(again)] == want


def test_an_index_entry_the_disk_cannot_take_leaves_the_append_and_a_whole_index(tmp_path, clock, monkeypatch):
    """The batch is in the log; a short index write is cut back (no torn entry for recovery to trip over) and
    the append succeeds with the in-memory index whole."""
    from broker.log import index

    plog = make_log(tmp_path, clock, index_interval_bytes=1)
    plog.append_as_leader(batch(1, ts=clock.now_ms(), value=b"a" * 100), 0)
    real_write = os.write
    monkeypatch.setattr(index.os, "write", lambda fd, data: real_write(fd, bytes(data)[:3]))
    plog.append_as_leader(batch(1, ts=clock.now_ms(), value=b"b" * 100), 0)
    monkeypatch.setattr(index.os, "write", real_write)
    plog.append_as_leader(batch(1, ts=clock.now_ms(), value=b"c" * 100), 0)
    stem = plog.active_segment.log_path.with_suffix("")
    for suffix, entry in ((".index", 8), (".timeindex", 12)):
        assert os.path.getsize(stem.with_suffix(suffix)) % entry == 0
    assert [r.value[:1] for r in read_all(plog)] == [b"a", b"b", b"c"]
    plog.close()
    assert [r.value[:1] for r in read_all(make_log(tmp_path, clock))] == [b"a", b"b", b"c"]
