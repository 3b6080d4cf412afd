"""common.log_budget: lines a peer causes at will, at most `burst` per period, and the count left out."""

from common.clock import ManualClock
from common.log_budget import LogBudget


def test_a_flood_is_cut_to_the_burst_and_the_next_line_says_how_many_were_left_out():
    clock = ManualClock()
    budget = LogBudget(clock, burst=3, period_s=60)
    assert [budget.take() for _ in range(5)] == [0, 0, 0, None, None]
    clock.advance(59_999)
    assert budget.take() is None
    clock.advance(1)                       # a new period: the first line reports the three left out
    assert [budget.take() for _ in range(4)] == [3, 0, 0, None]
