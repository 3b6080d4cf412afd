import pytest

from broker.errors import ErrorCode, KafkaError
from broker.log.records import build_batch, read_header
from common.clock import ManualClock
from tests.broker.test_log_support import batch, make_log, read_all

PID = 4242


@pytest.fixture
def clock():
    return ManualClock()


def idem(n: int, seq: int, epoch: int = 0, pid: int = PID) -> bytes:
    return batch(n, ts=1, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def expect(plog, data, code):
    leo, size = plog.log_end_offset, plog.size_bytes
    with pytest.raises(KafkaError) as e:
        plog.append_as_leader(data, 0)
    assert e.value.code == code
    assert (plog.log_end_offset, plog.size_bytes) == (leo, size)


def test_in_sequence_batches_append(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    assert plog.append_as_leader(idem(3, 0), 0).base_offset == 0
    assert plog.append_as_leader(idem(2, 3), 0).base_offset == 3
    assert plog.log_end_offset == 5


def test_duplicate_returns_original_offsets_without_appending(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(3, 0), 0)
    plog.append_as_leader(batch(1, ts=1), 0)  # another producer in between
    plog.append_as_leader(idem(2, 3), 0)
    size = plog.size_bytes
    dup = plog.append_as_leader(idem(3, 0), 0)
    assert (dup.base_offset, dup.last_offset, dup.duplicate) == (0, 2, True)
    dup2 = plog.append_as_leader(idem(2, 3), 0)
    assert (dup2.base_offset, dup2.duplicate) == (4, True)
    assert plog.size_bytes == size and plog.log_end_offset == 6


def test_only_last_five_batches_are_cached(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    for seq in range(6):
        plog.append_as_leader(idem(1, seq), 0)
    assert plog.append_as_leader(idem(1, 1), 0).duplicate
    # Batch 0 fell out of the cache: it is now out of order rather than a duplicate.
    expect(plog, idem(1, 0), ErrorCode.out_of_order_sequence_number)


def test_sequence_gap_is_out_of_order(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(2, 0), 0)
    expect(plog, idem(1, 3), ErrorCode.out_of_order_sequence_number)
    expect(plog, idem(1, 1), ErrorCode.out_of_order_sequence_number)  # overlaps, not an exact duplicate


def test_stale_epoch_is_rejected(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(1, 0, epoch=3), 0)
    expect(plog, idem(1, 1, epoch=2), ErrorCode.invalid_producer_epoch)


def test_new_epoch_must_start_at_zero(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(2, 0, epoch=0), 0)
    expect(plog, idem(1, 5, epoch=1), ErrorCode.out_of_order_sequence_number)
    assert not plog.append_as_leader(idem(1, 0, epoch=1), 0).duplicate
    expect(plog, idem(1, 2, epoch=0), ErrorCode.invalid_producer_epoch)


def test_unknown_producer_accepts_any_sequence(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    assert plog.append_as_leader(idem(1, 77), 0).base_offset == 0
    assert plog.append_as_leader(idem(1, 78), 0).base_offset == 1


def test_sequence_wraps_at_int32_max(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(2, 0x7FFFFFFE), 0)
    h = read_header(idem(2, 0x7FFFFFFE))
    assert h.last_sequence == 0x7FFFFFFF
    assert plog.append_as_leader(idem(1, 0), 0).base_offset == 2


def test_state_survives_close_and_reopen(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(3, 0), 0)
    plog.append_as_leader(idem(1, 3, pid=7), 0)
    plog.close()
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot")) == ["00000000000000000004.snapshot"]
    again = make_log(tmp_path, clock)
    assert again.append_as_leader(idem(3, 0), 0).duplicate
    expect(again, idem(1, 9), ErrorCode.out_of_order_sequence_number)
    assert again.append_as_leader(idem(1, 4, pid=7), 0).base_offset == 4


def test_state_rebuilt_from_batches_after_crash(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300)
    for seq in range(0, 12, 2):
        plog.append_as_leader(idem(2, seq), 0)  # rolls several times; each roll snapshots
    # kill -9: no close, so the batches after the last snapshot are replayed from their headers.
    for p in (tmp_path / "t-0").glob("*.snapshot"):
        p.unlink()
    again = make_log(tmp_path, clock, segment_bytes=300)
    assert again.append_as_leader(idem(2, 10), 0).duplicate
    assert again.append_as_leader(idem(2, 12), 0).base_offset == 12


def test_snapshot_beyond_log_end_is_ignored(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(2, 0), 0)
    plog.close()
    (tmp_path / "t-0" / "00000000000000000099.snapshot").write_text("{not json")
    again = make_log(tmp_path, clock)
    assert again.append_as_leader(idem(2, 0), 0).duplicate
    assert not (tmp_path / "t-0" / "00000000000000000099.snapshot").exists()


def test_retention_forgets_producers_whose_batches_are_gone(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=200)
    plog.append_as_leader(idem(1, 0), 0)
    for _ in range(3):
        plog.append_as_leader(batch(1, ts=1, value=b"x" * 100), 0)
    plog.delete_records_before(2)
    # The producer's last batch (offset 0) is below the log start: it may restart anywhere.
    assert plog.append_as_leader(idem(1, 40), 0).base_offset == 4
    assert [r.offset for r in read_all(plog)] == [2, 3, 4]


def test_transaction_marker_bumps_epoch_only(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(idem(1, 0, epoch=0), 0)
    marker = build_batch([], 1, producer_id=PID, producer_epoch=1, is_control=True, last_offset_delta=0)
    plog.producer_state.update(read_header(marker))
    expect(plog, idem(1, 1, epoch=0), ErrorCode.invalid_producer_epoch)


def test_state_from_snapshot_plus_replay_after_crash(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300)
    for seq in range(0, 12, 2):
        plog.append_as_leader(idem(2, seq), 0)
    snapshots = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert snapshots and snapshots[-1] < f"{plog.log_end_offset:020d}"
    again = make_log(tmp_path, clock, segment_bytes=300)  # kill -9: the last batches are after the snapshot
    assert again.append_as_leader(idem(2, 10), 0).duplicate
    expect(again, idem(2, 14), ErrorCode.out_of_order_sequence_number)


def test_idle_producers_expire_but_not_inside_a_transaction(tmp_path, clock):
    """producer.id.expiration.ms: a producer whose last batch is that old is forgotten (its next batch may start
    at any sequence), unless its transaction is open (Kafka's removeExpiredProducers)."""
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(batch(2, ts=1_000, producer_id=1, producer_epoch=0, base_sequence=0), 0)
    plog.append_as_leader(batch(1, ts=1_000, producer_id=2, producer_epoch=0, base_sequence=0,
                                is_transactional=True), 0)
    plog.append_as_leader(batch(1, ts=50_000, producer_id=3, producer_epoch=0, base_sequence=0), 0)
    state = plog.producer_state
    assert state.remove_expired(now_ms=60_000, expiration_ms=59_000) == 1      # only producer 1 is that old
    assert set(state.producers) == {2, 3}
    assert plog.append_as_leader(batch(1, ts=61_000, producer_id=1, producer_epoch=0, base_sequence=7), 0)
    expect(plog, batch(1, ts=61_000, producer_id=3, producer_epoch=0, base_sequence=7),
           ErrorCode.out_of_order_sequence_number)                              # a known one still checks
