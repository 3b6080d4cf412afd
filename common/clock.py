"""Injected time, so that anything with timeouts, windows or retention is testable without sleeping.

Every service (broker, exporter, xmonitor) takes a `Clock`; tests pass a `ManualClock` and move it by hand.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (record timestamps, retention, windows)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (timeouts, latencies)."""

    def wall(self) -> float:
        """Wall-clock seconds since the epoch (what probe records and gauges carry)."""

    def wall_us(self) -> int:
        """Wall-clock microseconds since the epoch (probe payload timestamps)."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def wall_us(self) -> int:
        return time.time_ns() // 1000


SYSTEM = SystemClock()


class ManualClock:
    """A clock tests move by hand; wall and monotonic time advance together."""

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic: float = 0.0) -> None:
        self._now_ms: float = now_ms  # advance() takes fractions of a millisecond
        self._mono = monotonic

    def now_ms(self) -> int:
        return int(self._now_ms)

    def monotonic(self) -> float:
        return self._mono

    def wall(self) -> float:
        return self._now_ms / 1000.0

    def wall_us(self) -> int:
        return int(self._now_ms * 1000)

    def advance(self, ms: float) -> None:
        self._now_ms += ms
        self._mono += ms / 1000.0
