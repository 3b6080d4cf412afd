
import pytest

from broker.log.cleaner import LogCleaner
from broker.log.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, crc_ok, iter_batches
from broker.log.segment import LogSegment
from common.clock import ManualClock
from common.polling import wait_until
from tests.broker.test_log_support import keyed, make_log, read_all

COMPACT = {"cleanup_policy": "compact", "segment_bytes": 400, "delete_retention_ms": 60_000}


@pytest.fixture
def clock():
    return ManualClock()


def fill(plog, clock, rounds: int, keys=(b"a", b"b", b"c"), codec=NONE):
    """`rounds` batches, each writing every key once; returns {key: last value}."""
    latest = {}
    for i in range(rounds):
        pairs = [(k, b"%s-%d" % (k, i)) for k in keys]
        plog.append_as_leader(keyed(pairs, ts=clock.now_ms(), compression=codec), 0)
        latest.update(pairs)
    return latest


def snapshot(plog):
    return [(r.offset, r.key, r.value) for r in read_all(plog)]


def test_keeps_latest_per_key_with_offsets_and_order(tmp_path, clock):
    plog = make_log(tmp_path, clock, **COMPACT)
    fill(plog, clock, 20)
    before = snapshot(plog)
    active_base = plog.active_segment.base_offset
    stats = LogCleaner(clock).clean(plog)
    assert stats.records_removed > 0
    after = snapshot(plog)
    # Records at or after the active segment are untouched; below it only the latest per key survives.
    assert [x for x in after if x[0] >= active_base] == [x for x in before if x[0] >= active_base]
    cleaned = [x for x in after if x[0] < active_base]
    assert len({k for _, k, _ in cleaned}) == len(cleaned)
    latest_below = {}
    for off, k, v in before:
        if off < active_base:
            latest_below[k] = (off, k, v)
    assert cleaned == sorted(latest_below.values())
    assert [o for o, _, _ in after] == sorted(o for o, _, _ in after)
    assert set(after) <= set(before)
    assert plog.log_end_offset == 60 and plog.cleaner_checkpoint == active_base
    assert plog.segment_count < 20
    # Nothing dirty: a second pass does nothing.
    assert LogCleaner(clock).clean(plog) is None


def test_tombstones_expire_after_delete_retention(tmp_path, clock):
    plog = make_log(tmp_path, clock, **COMPACT)
    fill(plog, clock, 5)
    plog.append_as_leader(keyed([(b"a", None)], ts=clock.now_ms()), 0)
    fill(plog, clock, 5, keys=(b"b", b"c"))
    plog.roll()
    cleaner = LogCleaner(clock)
    cleaner.clean(plog, force=True)
    state = {k: v for _, k, v in snapshot(plog)}
    assert b"a" in state and state[b"a"] is None  # the tombstone is kept for now, the older a values are gone
    assert sum(1 for _, k, _ in snapshot(plog) if k == b"a") == 1
    clock.advance(60_001)
    plog.append_as_leader(keyed([(b"b", b"new")], ts=clock.now_ms()), 0)
    plog.roll()
    stats = cleaner.clean(plog, force=True)
    assert stats.tombstones_removed == 1
    assert b"a" not in {k for _, k, _ in snapshot(plog)}


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batches_are_compacted_and_stay_compressed(tmp_path, clock, codec):
    plog = make_log(tmp_path, clock, **COMPACT)
    fill(plog, clock, 12, keys=(b"a", b"b", b"c", b"d"), codec=codec)
    plog.append_as_leader(keyed([(b"a", b"final")], ts=clock.now_ms(), compression=codec), 0)
    plog.roll()
    before = snapshot(plog)
    LogCleaner(clock).clean(plog, force=True)
    after = snapshot(plog)
    assert {k: v for _, k, v in after} == {k: v for _, k, v in before}
    assert len(after) == 4
    data = plog.read(plog.log_start_offset, 1 << 20)
    heads = list(iter_batches(data))
    assert heads and all(h.compression == codec and crc_ok(data, p, h) for p, h in heads)


def test_rebuilt_batch_keeps_base_and_last_offset(tmp_path, clock):
    plog = make_log(tmp_path, clock, **COMPACT)
    plog.append_as_leader(keyed([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], ts=clock.now_ms()), 0)
    plog.append_as_leader(keyed([(b"b", b"2")], ts=clock.now_ms()), 0)
    plog.roll()
    LogCleaner(clock).clean(plog, force=True)
    heads = [h for _, h in iter_batches(plog.read(0, 1 << 20))]
    assert [(h.base_offset, h.last_offset, h.record_count) for h in heads] == [(0, 2, 2), (3, 3, 1)]
    assert [(o, k) for o, k, _ in snapshot(plog)] == [(0, b"a"), (2, b"c"), (3, b"b")]


def test_min_compaction_lag_and_dirty_ratio(tmp_path, clock):
    plog = make_log(tmp_path, clock, **COMPACT, min_compaction_lag_ms=10_000)
    fill(plog, clock, 10)
    cleaner = LogCleaner(clock)
    assert cleaner.clean(plog) is None  # every segment is younger than the lag
    clock.advance(10_001)
    assert cleaner.clean(plog) is not None
    plog.update_config(plog.config.__class__(**{**COMPACT, "min_cleanable_dirty_ratio": 0.99}))
    fill(plog, clock, 2)
    plog.roll()
    assert cleaner.clean(plog) is None  # a little dirt on a bigger clean log stays below the ratio
    assert cleaner.clean(plog, force=True) is not None


def test_not_compacted_when_policy_is_delete(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=400)
    fill(plog, clock, 10)
    assert LogCleaner(clock).clean(plog, force=True) is None


def test_interrupted_swap_is_completed_on_reopen(tmp_path, clock, monkeypatch):
    plog = make_log(tmp_path, clock, **COMPACT)
    fill(plog, clock, 20)
    expected = {k: v for o, k, v in snapshot(plog)}

    def crash(self):
        raise OSError("simulated crash after the swap files were moved in")

    monkeypatch.setattr(LogSegment, "delete_files", crash)
    with pytest.raises(OSError):
        LogCleaner(clock).clean(plog)
    assert list((tmp_path / "t-0").glob("*.swap"))
    monkeypatch.undo()
    again = make_log(tmp_path, clock, **COMPACT)
    assert not list((tmp_path / "t-0").glob("*.swap"))
    after = snapshot(again)
    assert {k: v for _, k, v in after} == expected
    assert [o for o, _, _ in after] == sorted({o for o, _, _ in after})
    assert again.log_end_offset == 60


def test_segment_removed_meanwhile_abandons_the_pass(tmp_path, clock, monkeypatch):
    plog = make_log(tmp_path, clock, **COMPACT, retention_ms=1)
    fill(plog, clock, 20)
    original = LogCleaner._build_key_map

    def racing_key_map(self, *args):
        result = original(self, *args)
        plog.delete_records_before(plog.segments[2].base_offset)
        return result

    monkeypatch.setattr(LogCleaner, "_build_key_map", racing_key_map)
    LogCleaner(clock).clean(plog)
    assert plog.cleaner_checkpoint == 0
    assert read_all(plog)[-1].offset == 59
    assert not (plog.directory / "cleaner-tmp").exists()


def test_background_thread_cleans(tmp_path, clock):
    plog = make_log(tmp_path, clock, **COMPACT)
    fill(plog, clock, 20)
    cleaner = LogCleaner(clock, backoff_ms=5)
    cleaner.start(lambda: [plog])
    try:
        wait_until(lambda: plog.cleaner_checkpoint, 5, 0.005, "a cleaner checkpoint")
        # Produce and fetch keep working while the cleaner runs.
        plog.append_as_leader(keyed([(b"z", b"1")], ts=clock.now_ms()), 0)
    finally:
        cleaner.stop()
    assert plog.cleaner_checkpoint > 0
    assert snapshot(plog)[-1][1] == b"z"
