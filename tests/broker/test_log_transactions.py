"""Transactions in the log: markers, the Last Stable Offset, the .txnindex and recovery (KIP-98)."""

import os

import pytest

from broker.errors import ErrorCode, KafkaError
from broker.log.records import decode_records, iter_batches, read_header
from broker.log.txn_index import (
    ABORT,
    COMMIT,
    AbortedTxn,
    TransactionIndex,
    control_type,
    marker_batch,
    marker_fields,
)
from common.clock import ManualClock
from tests.broker.test_log_support import batch, make_log


@pytest.fixture
def clock():
    return ManualClock()


def txn_batch(clock, pid, seq, n=1, epoch=0):
    return batch(n, ts=clock.now_ms(), producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                 is_transactional=True)


def test_marker_batch_is_kafkas_control_record():
    data = marker_batch(7, 3, 11, commit=True, timestamp_ms=1000)
    h = read_header(data)
    assert h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.record_count) == (7, 3, -1, 1)
    # attributes: bit 5 control, bit 4 transactional, no compression
    assert data[21:23] == (0x30).to_bytes(2, "big")
    rec = decode_records(data)[0]
    assert rec.key == b"\x00\x00\x00\x01"  # ControlRecordType key v0, COMMIT
    assert marker_fields(rec.value) == (0, 11)  # EndTransactionMarker v0, coordinatorEpoch
    assert control_type(data) == (COMMIT, 11)
    assert control_type(marker_batch(7, 3, 12, commit=False, timestamp_ms=1000)) == (ABORT, 12)


def test_txn_index_file_format_collect_and_truncate(tmp_path):
    idx = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert idx.append(AbortedTxn(5, 0, 4, 10))
    assert idx.append(AbortedTxn(6, 2, 9, 12))
    assert not idx.append(AbortedTxn(5, 0, 4, 10))  # replayed on recovery: already there
    raw = (tmp_path / "00000000000000000000.txnindex").read_bytes()
    assert len(raw) == 68  # 34 bytes an entry
    assert raw[:34] == (0).to_bytes(2, "big") + (5).to_bytes(8, "big") + (0).to_bytes(8, "big") + \
        (4).to_bytes(8, "big") + (10).to_bytes(8, "big")
    again = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert again.entries == [AbortedTxn(5, 0, 4, 10), AbortedTxn(6, 2, 9, 12)]
    out: list[AbortedTxn] = []
    assert again.collect(5, 11, out)  # the second entry's LSO (12) reaches the bound: stop here
    assert out == [AbortedTxn(6, 2, 9, 12)]
    out = []
    assert again.collect(0, 1, out)
    assert out == [AbortedTxn(5, 0, 4, 10)]
    out = []
    assert not again.collect(0, 20, out)  # a later segment may hold more
    assert out == [AbortedTxn(5, 0, 4, 10), AbortedTxn(6, 2, 9, 12)]
    again.truncate_to(9)
    assert again.entries == [AbortedTxn(5, 0, 4, 10)]
    assert len((tmp_path / "00000000000000000000.txnindex").read_bytes()) == 34


def test_torn_txn_index_entry_is_dropped(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    TransactionIndex(path).append(AbortedTxn(1, 0, 3, 4))
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    assert TransactionIndex(path).entries == [AbortedTxn(1, 0, 3, 4)]
    assert path.stat().st_size == 34


def test_lso_stops_at_the_earliest_open_transaction(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(batch(2, ts=clock.now_ms()), 0)                     # 0-1 plain
    plog.append_as_leader(txn_batch(clock, 100, 0, 2), 0)                    # 2-3 pid 100
    plog.append_as_leader(txn_batch(clock, 200, 0), 0)                       # 4 pid 200
    plog.append_as_leader(txn_batch(clock, 100, 2), 0)                       # 5 pid 100
    assert plog.high_watermark == 6
    assert plog.last_stable_offset == 2
    assert plog.producer_state.ongoing() == {100: 2, 200: 4}
    assert plog.append_marker(100, 0, 0, commit=True, leader_epoch=0) == 6
    assert plog.last_stable_offset == 4
    assert plog.append_marker(200, 0, 0, commit=False, leader_epoch=0) == 7
    assert plog.last_stable_offset == plog.high_watermark == 8
    # The abort is indexed in the active segment with the LSO once it completed.
    assert plog.aborted_transactions(0, 8) == [AbortedTxn(200, 4, 7, 8)]
    assert plog.aborted_transactions(5, 8) == [AbortedTxn(200, 4, 7, 8)]
    assert plog.aborted_transactions(0, 4) == []
    heads = [h for _, h in iter_batches(plog.read(6, 1 << 20))]
    assert [(h.base_offset, h.is_control) for h in heads] == [(6, True), (7, True)]


def test_abort_index_lso_points_at_another_open_transaction(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)  # 0
    plog.append_as_leader(txn_batch(clock, 2, 0), 0)  # 1
    plog.append_marker(1, 0, 0, commit=False, leader_epoch=0)  # 2
    assert plog.aborted_transactions(0, 3) == [AbortedTxn(1, 0, 2, 1)]
    assert plog.last_stable_offset == 1


def test_lso_waits_for_the_marker_to_be_replicated(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.auto_high_watermark = False
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)
    plog.high_watermark = 1
    assert plog.last_stable_offset == 0
    plog.append_marker(1, 0, 0, commit=True, leader_epoch=0)
    # The marker is at 1, not below the high watermark: it could still be lost to a leader change.
    assert plog.last_stable_offset == 0
    plog.high_watermark = 2
    assert plog.last_stable_offset == 2


def test_marker_with_an_older_epoch_is_refused(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0, epoch=3), 0)
    with pytest.raises(KafkaError) as e:
        plog.append_marker(1, 2, 0, commit=True, leader_epoch=0)
    assert e.value.code == ErrorCode.invalid_producer_epoch
    assert plog.log_end_offset == 1
    # The coordinator's abort after an epoch bump (InitProducerId fencing) carries the newer epoch.
    plog.append_marker(1, 4, 0, commit=False, leader_epoch=0)
    assert plog.last_stable_offset == 2
    assert plog.aborted_transactions(0, 2) == [AbortedTxn(1, 0, 1, 2)]


def test_marker_from_an_older_coordinator_is_fenced_also_after_restart(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)
    plog.append_marker(1, 0, 5, commit=True, leader_epoch=0)
    plog.append_as_leader(txn_batch(clock, 1, 1), 0)
    plog.close()
    again = make_log(tmp_path, clock)
    with pytest.raises(KafkaError) as e:
        again.append_marker(1, 0, 4, commit=False, leader_epoch=0)  # a coordinator that lost its partition
    assert e.value.code == ErrorCode.transaction_coordinator_fenced
    assert again.producer_state.ongoing() == {1: 2}
    again.append_marker(1, 0, 5, commit=True, leader_epoch=0)
    assert again.last_stable_offset == 4


def test_plain_batch_while_the_producers_transaction_is_open_is_invalid(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)
    with pytest.raises(KafkaError) as e:
        plog.append_as_leader(batch(1, ts=clock.now_ms(), producer_id=1, producer_epoch=0, base_sequence=1), 0)
    assert e.value.code == ErrorCode.invalid_txn_state


def test_open_transaction_survives_restart_through_the_snapshot(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(batch(1, ts=clock.now_ms()), 0)
    plog.append_as_leader(txn_batch(clock, 9, 0), 0)  # 1
    plog.close()  # snapshot at 2 holds currentTxnFirstOffset 1, with nothing left to replay
    assert any(n.endswith(".snapshot") for n in os.listdir(plog.directory))
    again = make_log(tmp_path, clock)
    assert again.producer_state.ongoing() == {9: 1}
    assert again.last_stable_offset == 1
    again.append_marker(9, 0, 0, commit=False, leader_epoch=0)
    assert again.last_stable_offset == 3
    again.close()


def test_kill_mid_transaction_rebuilds_state_and_index_from_the_log(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)  # 0
    plog.append_marker(1, 0, 0, commit=False, leader_epoch=0)  # 1
    plog.append_as_leader(txn_batch(clock, 2, 0), 0)  # 2, open at the "crash"
    # kill -9: no close, no snapshot; the index file is lost too.
    (plog.directory / "00000000000000000000.txnindex").unlink()
    again = make_log(tmp_path, clock)
    assert again.producer_state.ongoing() == {2: 2}
    assert again.last_stable_offset == 2
    assert again.aborted_transactions(0, 3) == [AbortedTxn(1, 0, 1, 2)]
    again.close()


def test_truncation_drops_index_entries_and_reopens_the_transaction(tmp_path, clock):
    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0), 0)  # 0
    plog.append_marker(1, 0, 0, commit=False, leader_epoch=0)  # 1
    plog.truncate_to(1)
    assert plog.aborted_transactions(0, 2) == []
    assert plog.producer_state.ongoing() == {1: 0}
    assert plog.last_stable_offset == 0


def test_follower_append_tracks_markers(tmp_path, clock):
    leader = make_log(tmp_path / "l", clock)
    leader.append_as_leader(txn_batch(clock, 1, 0), 0)
    leader.append_marker(1, 0, 0, commit=False, leader_epoch=0)
    follower = make_log(tmp_path / "f", clock)
    follower.append_as_follower(leader.read(0, 1 << 20))
    assert follower.aborted_transactions(0, 2) == [AbortedTxn(1, 0, 1, 2)]
    assert follower.producer_state.ongoing() == {}


def test_segments_roll_and_collect_across_them(tmp_path, clock):
    plog = make_log(tmp_path, clock, segment_bytes=300)
    for pid in range(1, 6):
        plog.append_as_leader(txn_batch(clock, pid, 0), 0)
        plog.append_marker(pid, 0, 0, commit=pid % 2 == 0, leader_epoch=0)
    assert plog.segment_count > 1
    assert [a.producer_id for a in plog.aborted_transactions(0, plog.log_end_offset)] == [1, 3, 5]
    assert [a.producer_id for a in plog.aborted_transactions(3, plog.log_end_offset)] == [3, 5]
    txnindexes = [n for n in os.listdir(plog.directory) if n.endswith(".txnindex")]
    assert len(txnindexes) == plog.segment_count
    plog.delete_records_before(plog.log_end_offset)
    assert len([n for n in os.listdir(plog.directory) if n.endswith(".txnindex")]) == plog.segment_count


def test_compaction_drops_aborted_writes_keeps_markers_and_stops_at_the_lso(tmp_path, clock):
    from broker.log.cleaner import LogCleaner
    from tests.broker.test_log_support import keyed, read_all

    plog = make_log(tmp_path, clock, cleanup_policy="compact", segment_bytes=300, delete_retention_ms=60_000)

    def txn(pid, value, commit):
        plog.append_as_leader(keyed([(b"k", value)], ts=clock.now_ms(), producer_id=pid, producer_epoch=0,
                                    base_sequence=0, is_transactional=True), 0)
        plog.append_marker(pid, 0, 0, commit=commit, leader_epoch=0)

    txn(1, b"committed", True)       # 0, marker 1
    txn(2, b"aborted", False)        # 2, marker 3: must not supersede offset 0
    for i in range(6):               # later segments
        plog.append_as_leader(keyed([(b"other", b"%d" % i)], ts=clock.now_ms()), 0)
    plog.append_as_leader(keyed([(b"k", b"open")], ts=clock.now_ms(), producer_id=3, producer_epoch=0,
                                base_sequence=0, is_transactional=True), 0)  # open: LSO here
    for i in range(6):
        plog.append_as_leader(keyed([(b"other", b"x%d" % i)], ts=clock.now_ms()), 0)
    lso = plog.last_stable_offset
    assert lso == 10 and plog.segment_count > 3
    stats = LogCleaner(clock).clean(plog, force=True)
    assert stats is not None and stats.records_removed >= 1
    after = {r.offset: r.value for r in read_all(plog)}
    assert after[0] == b"committed" and 2 not in after    # the aborted write is gone, the committed one stays
    assert after[10] == b"open"                           # at the LSO: untouched
    assert 1 in after and 3 in after                      # markers kept
    assert plog.aborted_transactions(0, lso) == [AbortedTxn(2, 2, 3, 4)]  # the index moved with the segment


def test_an_abort_the_full_disk_keeps_out_of_the_index_file_stays_indexed(tmp_path, clock, monkeypatch):
    """The abort marker is in the log but its `.txnindex` entry cannot be written (a full disk): the entry waits
    in memory (read_committed still drops the aborted records), no producer-state snapshot is taken past it, so a
    restart's replay indexes it again; once there is room the file gets it. Before, the OSError escaped the
    marker's append and ended the transaction coordinator's completion: the transaction stayed in PREPARE_ABORT
    and its id was stuck until a restart (a full-disk drill)."""
    from broker.log import index

    plog = make_log(tmp_path, clock)
    plog.append_as_leader(txn_batch(clock, 1, 0, n=3), 0)   # 0-2
    full = {"on": True}
    write = index.write_descriptors.write

    def disk(index_file, data):
        if full["on"] and index_file.path.suffix == ".txnindex":
            raise OSError(28, "No space left on device")
        write(index_file, data)

    monkeypatch.setattr(index.write_descriptors, "write", disk)
    plog.append_marker(1, 0, 0, commit=False, leader_epoch=0)   # 3
    assert plog.aborted_transactions(0, 4) == [AbortedTxn(1, 0, 3, 4)]
    with pytest.raises(OSError):
        plog.snapshot_producer_state()
    assert not any(n.endswith(".snapshot") for n in os.listdir(plog.directory))
    again = make_log(tmp_path, clock)   # kill -9: the file lacks the entry, the replay puts it back
    assert again.aborted_transactions(0, 4) == [AbortedTxn(1, 0, 3, 4)]
    full["on"] = False
    plog.snapshot_producer_state()   # room again: the entry reaches the file, then the snapshot
    assert TransactionIndex(plog.directory / "00000000000000000000.txnindex").entries == [AbortedTxn(1, 0, 3, 4)]
