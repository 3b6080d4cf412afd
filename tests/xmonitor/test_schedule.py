"""The produce service's send schedule (pure: no clients, times are plain numbers)."""

import pytest

from xmonitor.schedule import SendSchedule, send_phases


def test_spread_phases_space_each_leaders_partitions_over_the_interval():
    leaders = {0: 1, 1: 2, 2: 1, 3: 2, 4: 1, 5: 3}
    phases = send_phases(leaders, 0.1, spread=True)
    assert phases == pytest.approx({0: 0.0, 2: 0.1 / 3, 4: 0.2 / 3, 1: 0.0, 3: 0.05, 5: 0.0})
    for leader in (1, 2, 3):   # one connection never carries two of the probe's records at once
        mine = sorted(phases[p] for p, b in leaders.items() if b == leader)
        assert len(set(mine)) == len(mine)


def test_unspread_phases_put_every_partition_on_one_tick():
    assert send_phases({0: 1, 1: 1, 2: 2}, 0.1, spread=False) == {0: 0.0, 1: 0.0, 2: 0.0}


def test_each_partition_is_due_once_per_interval_at_its_phase():
    s = SendSchedule(1.0, origin=100.0)
    s.rephase({0: 0.0, 1: 0.5}, now=100.0)
    assert list(s.take_due(100.0)) == [0]
    assert s.wake_at(default=0) == 100.5
    assert list(s.take_due(100.5)) == [1]
    assert list(s.take_due(100.9)) == []
    assert list(s.take_due(101.0)) == [0]


def test_a_late_loop_skips_missed_sends_and_stays_on_the_grid():
    s = SendSchedule(1.0, origin=0.0)
    s.rephase({0: 0.25}, now=0.0)
    assert list(s.take_due(3.6)) == [0]            # 0.25, 1.25, 2.25, 3.25 missed: one send, not four
    assert s.next_due[0] == 4.25                   # the phase is kept
    assert list(s.take_due(4.0)) == []


def test_rephase_moves_only_new_or_changed_partitions_to_their_next_grid_point():
    s = SendSchedule(1.0, origin=0.0)
    s.rephase({0: 0.0, 1: 0.0}, now=0.0)
    s.take_due(0.0)
    s.rephase({0: 0.0, 1: 0.5, 2: 0.25}, now=0.3)  # partition 1 moved, 2 is new
    assert s.next_due == {0: 1.0, 1: 0.5, 2: 1.25}
