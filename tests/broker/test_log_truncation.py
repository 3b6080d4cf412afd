"""Follower-side truncation and the leader epoch cache kept by the log."""

from broker.config import LogConfig
from broker.log.log import PartitionLog
from broker.log.records import Record, build_batch, iter_batches
from common.clock import ManualClock


def _log(tmp_path, **cfg):
    return PartitionLog("t", 0, tmp_path / "t-0", LogConfig(**cfg), ManualClock())


def _batch(n: int, value: bytes = b"v", pid: int = -1, seq: int = -1) -> bytes:
    return build_batch([Record(timestamp=1, key=b"k", value=value)] * n, producer_id=pid,
                       producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)


def test_truncate_across_segments_and_reopen(tmp_path):
    plog = _log(tmp_path, segment_bytes=400)
    for epoch in (0, 0, 1, 1, 2, 2):
        plog.append_as_leader(_batch(2, b"x" * 100), epoch)
    assert plog.log_end_offset == 12 and plog.segment_count > 2
    assert plog.leader_epochs.entries == [(0, 0), (1, 4), (2, 8)]
    plog.truncate_to(5)  # inside the batch [4, 5]: the whole batch goes
    assert plog.log_end_offset == 4 and plog.high_watermark == 4
    assert plog.leader_epochs.entries == [(0, 0)]
    last_offsets, offset = [], 0
    while offset < plog.log_end_offset:  # a read stops at a segment's end
        for _, h in iter_batches(plog.read(offset, 1 << 20)):
            last_offsets.append(h.last_offset)
            offset = h.next_offset
    assert last_offsets == [1, 3]
    plog.append_as_leader(_batch(1), 3)
    plog.close()
    again = _log(tmp_path, segment_bytes=400)
    assert again.log_end_offset == 5
    assert again.leader_epochs.entries == [(0, 0), (3, 4)]
    assert again.end_offset_for_epoch(0) == (0, 4)
    assert again.end_offset_for_epoch(3) == (3, 5)


def test_truncation_forgets_truncated_producer_batches(tmp_path):
    plog = _log(tmp_path)
    plog.append_as_leader(_batch(1, pid=7, seq=0), 0)
    plog.append_as_leader(_batch(1, pid=7, seq=1), 0)
    plog.truncate_to(1)
    # seq 1 is gone from the log, so the same batch is new again, not a duplicate
    result = plog.append_as_leader(_batch(1, pid=7, seq=1), 1)
    assert not result.duplicate and result.base_offset == 1


def test_follower_append_records_epochs(tmp_path):
    leader = _log(tmp_path / "a")
    leader.append_as_leader(_batch(2), 4)
    leader.append_as_leader(_batch(1), 6)
    follower = _log(tmp_path / "b")
    follower.append_as_follower(leader.read(0, 1 << 20))
    assert follower.log_end_offset == 3
    assert follower.leader_epochs.entries == [(4, 0), (6, 2)]


def test_truncate_fully_and_start_at(tmp_path):
    plog = _log(tmp_path)
    plog.append_as_leader(_batch(3), 0)
    plog.truncate_fully_and_start_at(100)
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (100, 100, 100)
    assert plog.leader_epochs.entries == []
    plog.append_as_follower(build_batch([Record(timestamp=1, key=b"k", value=b"v")], base_offset=100,
                                        partition_leader_epoch=2))
    plog.close()
    again = _log(tmp_path)
    assert (again.log_start_offset, again.log_end_offset) == (100, 101)


def _crash_safe_log(tmp_path, queued, **cfg):
    """A log whose leader-epoch checkpoints wait in `queued`, as if the writer thread never ran before a kill -9."""
    return PartitionLog("t", 0, tmp_path / "t-0", LogConfig(**cfg), ManualClock(), queued.append)


def test_epochs_not_yet_checkpointed_are_rederived_from_the_batches(tmp_path):
    queued: list = []
    plog = _crash_safe_log(tmp_path, queued, segment_bytes=400)
    plog.append_as_leader(_batch(2, b"x" * 100), 1)
    plog.append_as_leader(_batch(2, b"x" * 100), 1)
    plog.append_as_leader(_batch(2, b"x" * 100), 3)  # rolls first: the snapshot writes epoch 1's entry
    assert plog.segment_count > 1
    plog.append_as_leader(_batch(1), 4)
    plog.leader_epochs.assign(5, plog.log_end_offset)  # became leader again, nothing appended in epoch 5
    assert plog.leader_epochs.dirty
    # kill -9: no close, the queued checkpoint never written
    again = _crash_safe_log(tmp_path, [], segment_bytes=400)
    assert again.log_end_offset == 7
    # Epochs 3 and 4 come back from their batches; epoch 5 has none and is lost, as Kafka's LogLoader drops an
    # entry at the log end offset on every load.
    assert again.leader_epochs.entries == [(1, 0), (3, 4), (4, 6)]
    assert again.end_offset_for_epoch(3) == (3, 6)


def test_epoch_rederivation_needs_no_snapshot(tmp_path):
    queued: list = []
    plog = _crash_safe_log(tmp_path, queued)
    plog.append_as_leader(_batch(1), 0)
    plog.append_as_leader(_batch(1), 2)
    assert not (tmp_path / "t-0" / "leader-epoch-checkpoint").exists()
    again = _crash_safe_log(tmp_path, [])
    assert again.leader_epochs.entries == [(0, 0), (2, 1)]
