from broker.log.leader_epoch import UNDEFINED, LeaderEpochCache


def test_end_offset_for_follows_kafka(tmp_path):
    c = LeaderEpochCache(tmp_path)
    assert c.end_offset_for(0, 10) == UNDEFINED
    c.assign(0, 0)
    c.assign(2, 10)
    c.assign(5, 25)
    assert c.end_offset_for(0, 40) == (0, 10)
    assert c.end_offset_for(1, 40) == (0, 10)   # epoch 1 never wrote: answer with the one before it
    assert c.end_offset_for(2, 40) == (2, 25)
    assert c.end_offset_for(4, 40) == (2, 25)
    assert c.end_offset_for(5, 40) == (5, 40)   # the current epoch ends at the log end offset
    assert c.end_offset_for(9, 40) == (5, 40)


def test_assign_is_monotonic_and_persisted(tmp_path):
    c = LeaderEpochCache(tmp_path)
    c.assign(1, 0)
    c.assign(1, 5)  # same epoch again: ignored
    c.assign(0, 7)  # older epoch: ignored
    c.assign(3, 9)
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (3, 9)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n3 9\n"


def test_truncation_from_both_ends(tmp_path):
    c = LeaderEpochCache(tmp_path)
    for e, o in [(0, 0), (1, 10), (2, 20)]:
        c.assign(e, o)
    c.truncate_from_end(15)
    assert c.entries == [(0, 0), (1, 10)]
    c.truncate_from_start(12)
    assert c.entries == [(1, 12)]
    assert LeaderEpochCache(tmp_path).entries == [(1, 12)]


def test_deferred_assignment_is_written_by_flush_and_by_truncation(tmp_path):
    queued = []
    c = LeaderEpochCache(tmp_path, on_dirty=queued.append)
    c.assign(1, 0)
    c.assign(2, 5)  # still dirty: queued once
    assert queued == [c] and c.dirty
    assert not (tmp_path / LeaderEpochCache.FILE).exists()
    c.flush()
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (2, 5)] and not c.dirty
    c.flush()  # nothing new: nothing written
    c.assign(3, 9)
    c.assign(4, 12)
    assert queued == [c, c]
    c.truncate_from_end(10)  # written at once, with the assignment still queued before it
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (2, 5), (3, 9)] and not c.dirty


def test_discarded_cache_writes_nothing(tmp_path):
    c = LeaderEpochCache(tmp_path, on_dirty=lambda _: None)
    c.assign(1, 0)
    c.discard()
    c.flush()
    assert not (tmp_path / LeaderEpochCache.FILE).exists()
