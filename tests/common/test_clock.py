import time

from common.clock import SYSTEM, ManualClock


def test_manual_clock_moves_wall_and_monotonic_together():
    c = ManualClock(now_ms=1_000, monotonic=5.0)
    c.advance(1500)
    assert (c.now_ms(), c.monotonic(), c.wall(), c.wall_us()) == (2_500, 6.5, 2.5, 2_500_000)


def test_system_clock_units_agree():
    ms, s, us = SYSTEM.now_ms(), SYSTEM.wall(), SYSTEM.wall_us()
    assert abs(ms / 1000 - s) < 1 and abs(us / 1e6 - s) < 1
    t0 = SYSTEM.monotonic()
    assert SYSTEM.monotonic() >= t0 and abs(s - time.time()) < 1
