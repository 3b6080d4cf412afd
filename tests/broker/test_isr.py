from broker.replication.isr import FollowerState, can_join_isr, high_watermark, out_of_sync_replicas


def test_caught_up_time_follows_kafka():
    f = FollowerState()
    f.on_fetch(10, leader_leo=10, now_ms=1000)        # at the log end: caught up now
    assert f.last_caught_up_ms == 1000
    f.on_fetch(10, leader_leo=15, now_ms=2000)        # had what the leader had at 1000
    assert f.last_caught_up_ms == 1000
    f.on_fetch(15, leader_leo=20, now_ms=3000)        # reached the leader's LEO of the previous fetch
    assert f.last_caught_up_ms == 2000
    f.on_fetch(16, leader_leo=30, now_ms=4000)        # behind both: no progress
    assert f.last_caught_up_ms == 2000 and f.log_end_offset == 16


def test_out_of_sync_after_lag_time():
    followers = {2: FollowerState(last_caught_up_ms=1000), 3: FollowerState(last_caught_up_ms=9000)}
    assert out_of_sync_replicas(1, (1, 2, 3), followers, now_ms=11_001, lag_time_max_ms=10_000) == {2}
    assert out_of_sync_replicas(1, (1, 2, 3), followers, now_ms=11_000, lag_time_max_ms=10_000) == set()
    assert out_of_sync_replicas(1, (1, 3), followers, now_ms=99_000, lag_time_max_ms=10_000) == {3}


def test_high_watermark_is_min_isr_leo_and_monotonic():
    followers = {2: FollowerState(log_end_offset=7), 3: FollowerState(log_end_offset=3)}
    assert high_watermark(1, 10, (1, 2, 3), followers, current=0) == 3
    assert high_watermark(1, 10, (1, 2), followers, current=0) == 7       # 3 left the ISR
    assert high_watermark(1, 10, (1,), followers, current=0) == 10
    assert high_watermark(1, 10, (1, 2, 3), followers, current=5) == 5    # never backwards


def test_rejoin_needs_hw_and_current_epoch():
    f = FollowerState(log_end_offset=8)
    assert can_join_isr(f, high_watermark=8, epoch_start_offset=5)
    assert not can_join_isr(f, high_watermark=9, epoch_start_offset=5)
    assert not can_join_isr(f, high_watermark=8, epoch_start_offset=9)
