import time

import pytest

from broker.config import LogConfig
from broker.log.manager import LogManager, parse_partition_dir
from broker.log.records import Record, build_batch
from common.clock import ManualClock
from common.polling import wait_until
from tests.broker.test_log_support import batch, keyed, read_all


@pytest.fixture
def clock():
    return ManualClock()


def manager(dirs, clock, configs=None, **kw):
    configs = configs or {}
    return LogManager(dirs, clock, lambda topic: configs.get(topic, LogConfig()), **kw)


@pytest.mark.parametrize("name, expected", [
    ("orders-0", ("orders", 0)),
    ("my-topic-12", ("my-topic", 12)),
    ("a.b_c-d-3", ("a.b_c-d", 3)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("orders-0.8f3a-delete", None),
    ("orders", None),
    ("-1", None),
])
def test_parse_partition_dir(name, expected):
    assert parse_partition_dir(name) == expected


def test_create_load_and_spread_over_log_dirs(tmp_path, clock):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs, clock)
    m.load_all()
    for topic in ("my-topic", "a.b_c"):
        for p in range(3):
            m.get_or_create(topic, p).append_as_leader(batch(p + 1, ts=1), 0)
    assert {len(list(d.iterdir())) for d in dirs} == {3}
    assert m.get_or_create("my-topic", 1) is m.get("my-topic", 1)
    m.close()
    again = manager(dirs, clock)
    again.load_all()
    assert again.partitions() == [("a.b_c", 0), ("a.b_c", 1), ("a.b_c", 2),
                                  ("my-topic", 0), ("my-topic", 1), ("my-topic", 2)]
    assert again.get("my-topic", 2).log_end_offset == 3
    assert again.get("nope", 0) is None
    again.close()


def test_delete_topic(tmp_path, clock):
    m = manager([tmp_path], clock)
    m.load_all()
    for p in range(2):
        m.get_or_create("gone", p).append_as_leader(batch(ts=1), 0)
    m.get_or_create("kept", 0)
    (tmp_path / "old-0.0123abcd-delete").mkdir()  # leftover of a deletion cut short
    m.delete_topic("gone")
    assert m.partitions() == [("kept", 0)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept-0", "old-0.0123abcd-delete"]
    m.close()
    again = manager([tmp_path], clock)
    again.load_all()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept-0"]
    assert again.partitions() == [("kept", 0)]


def test_run_retention_and_live_config_change(tmp_path, clock):
    configs = {"t": LogConfig(segment_bytes=300)}
    m = manager([tmp_path], clock, configs)
    plog = m.get_or_create("t", 0)
    for _ in range(6):
        plog.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 100), 0)
    clock.advance(1_000)
    assert m.run_retention() == 0
    configs["t"] = LogConfig(segment_bytes=300, retention_ms=500)
    m.update_config("t")
    # Every segment, the active one too, is past retention: the log rolls and empties, as Kafka's does.
    assert m.run_retention() == 6
    assert plog.log_start_offset == plog.log_end_offset == 6
    m.close()


def test_a_log_that_cannot_be_written_does_not_stop_retention_of_the_others(tmp_path, clock, monkeypatch):
    """On a full disk the first log's producer-state snapshot fails (ENOSPC); the others' old segments must still
    go, since that is what frees the room. Before, the first failure ended the whole retention check."""
    m = manager([tmp_path], clock, {t: LogConfig(segment_bytes=300, retention_ms=500) for t in ("a", "b")})
    logs = [m.get_or_create(t, 0) for t in ("a", "b")]
    for plog in logs:
        for _ in range(6):
            plog.append_as_leader(batch(ts=clock.now_ms(), value=b"x" * 100), 0)
    clock.advance(1_000)
    first = m.logs()[0]

    def full_disk():
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(first, "snapshot_producer_state", full_disk)
    assert m.run_retention() == 12
    assert all(plog.log_start_offset == 6 for plog in logs)
    monkeypatch.undo()
    m.close()


def test_cleaner_thread_lifecycle(tmp_path, clock):
    configs = {"c": LogConfig(cleanup_policy="compact", segment_bytes=300)}
    m = manager([tmp_path], clock, configs, cleaner_backoff_ms=5)
    plog = m.get_or_create("c", 0)
    for i in range(12):
        plog.append_as_leader(keyed([(b"k", b"%d" % i)], ts=clock.now_ms()), 0)
    m.start()
    try:
        wait_until(lambda: plog.cleaner_checkpoint, 5, 0.005, "a cleaner checkpoint")
    finally:
        m.stop()
    assert plog.cleaner_checkpoint > 0
    assert [r.value for r in read_all(plog)][-1] == b"11"
    m.close()


def load_after_crash(tmp_path, clock, partitions: int) -> float:
    m = manager([tmp_path], clock)
    b = batch(ts=1)
    for p in range(partitions):
        m.get_or_create("many", p).append_as_leader(b, 0)
    # No close: startup after a kill -9, the harder case (no producer snapshots, tails checked).
    start = time.monotonic()
    again = manager([tmp_path], clock)
    again.load_all()
    elapsed = time.monotonic() - start
    assert len(again.partitions()) == partitions and again.get("many", partitions - 1).log_end_offset == 1
    again.close()
    return elapsed


def test_loads_many_partitions_quickly(tmp_path, clock):
    assert load_after_crash(tmp_path, clock, 100) < 3


@pytest.mark.slow
def test_loads_a_thousand_partitions_under_ten_seconds(tmp_path, clock):
    assert load_after_crash(tmp_path, clock, 1000) < 10


@pytest.mark.slow
def test_recovers_a_gigabyte_after_kill_under_ten_seconds(tmp_path, clock):
    m = manager([tmp_path], clock)
    plog = m.get_or_create("big", 0)
    recs = [Record(timestamp=1, key=b"k%d" % i, value=bytes(1600)) for i in range(10)]
    written = seq = 0
    while written < 1 << 30:
        data = build_batch(recs, producer_id=1, producer_epoch=0, base_sequence=seq)
        plog.append_as_leader(data, 0)
        written += len(data)
        seq += 10
    leo = plog.log_end_offset
    with open(plog.active_segment.log_path, "ab") as f:
        f.write(data[: len(data) // 2])
    start = time.monotonic()
    again = manager([tmp_path], clock)
    again.load_all()
    assert time.monotonic() - start < 10
    assert again.get("big", 0).log_end_offset == leo
    assert again.get("big", 0).append_as_leader(data, 0).duplicate
    again.close()



def test_epoch_checkpoints_go_through_the_writer_and_are_all_on_disk_after_close(tmp_path, clock):
    import threading

    from broker.log.leader_epoch import LeaderEpochCache

    m = manager([tmp_path], clock)
    logs = [m.get_or_create("t", p) for p in range(30)]
    gate, held = threading.Event(), threading.Event()

    class Blocker:
        def flush(self):
            held.set()
            gate.wait(10)

    m.epoch_writer.submit(Blocker())  # holds the writer thread, so nothing below can be written by it yet
    assert held.wait(10)
    for plog in logs:
        plog.leader_epochs.assign(3, 0)
    assert not any((tmp_path / f"t-{p}" / LeaderEpochCache.FILE).exists() for p in range(30))  # not by the caller
    gate.set()
    m.close()
    assert [LeaderEpochCache(tmp_path / f"t-{p}").entries for p in range(30)] == [[(3, 0)]] * 30
