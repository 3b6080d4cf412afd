"""A budget for log lines a peer can cause at will (a bad frame closes its connection with a warning): a client
sending garbage in a loop must not fill the disk through the broker's log. Kafka logs every such close; we log
the first `burst` per period and then one line that says how many were left out."""

from __future__ import annotations

from common.clock import SYSTEM, Clock


class LogBudget:
    """At most `burst` lines per `period_s` of the clock passed in."""

    def __init__(self, clock: Clock = SYSTEM, burst: int = 20, period_s: float = 60.0) -> None:
        self._clock, self._burst, self._period_s = clock, burst, period_s
        self._start = clock.monotonic()
        self._used = 0
        self._suppressed = 0

    def take(self) -> int | None:
        """None: leave this line out (it is counted). Otherwise log it, noting the returned number of lines left
        out since the last one logged (0 while under the budget)."""
        now = self._clock.monotonic()
        if now - self._start >= self._period_s:
            self._start, self._used = now, 0
        if self._used >= self._burst:
            self._suppressed += 1
            return None
        self._used += 1
        suppressed, self._suppressed = self._suppressed, 0
        return suppressed
