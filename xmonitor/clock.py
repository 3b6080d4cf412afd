"""The clock every service takes (tests inject a fake one)."""

from __future__ import annotations

import time


class Clock:
    def wall(self) -> float:
        """Seconds since the epoch (what probe records carry)."""
        return time.time()

    def mono(self) -> float:
        return time.monotonic()

    def wall_ms(self) -> int:
        return int(self.wall() * 1000)

    def wall_us(self) -> int:
        return time.time_ns() // 1000


SYSTEM = Clock()


class FakeClock(Clock):
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def wall(self) -> float:
        return self.t

    def mono(self) -> float:
        return self.t

    def wall_us(self) -> int:
        return int(self.t * 1_000_000)

    def advance(self, seconds: float) -> None:
        self.t += seconds
