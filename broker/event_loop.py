"""The broker's event loop: asyncio's selector loop over a selector that times its own blocking waits.

The time the loop spends blocked in ``select()`` is the time it is idle (no ready callback, no ready socket);
the metrics turn it into NetworkProcessorAvgIdlePercent and RequestHandlerAvgIdlePercent. ``python -m broker``
runs on this loop; a broker started on any other loop has no idle timer, and those metrics read 0.
"""

from __future__ import annotations

import asyncio
import selectors
import weakref
from collections.abc import Callable
from time import perf_counter_ns

IdleListener = Callable[[int], None]


class IdleTimingSelector(selectors.DefaultSelector):
    """The platform's default selector; each select() reports the nanoseconds it blocked to every listener."""

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[IdleListener] = []

    def add_listener(self, fn: IdleListener) -> None:
        self._listeners.append(fn)

    def remove_listener(self, fn: IdleListener) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def select(self, timeout: float | None = None) -> list:
        if not self._listeners:
            return super().select(timeout)
        t = perf_counter_ns()
        try:
            return super().select(timeout)
        finally:
            waited = perf_counter_ns() - t
            for fn in self._listeners:
                fn(waited)


_IDLE_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, IdleTimingSelector] = weakref.WeakKeyDictionary()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A selector event loop whose idle time `idle_timer(loop)` reports (an ``asyncio.Runner`` loop_factory)."""
    selector = IdleTimingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    _IDLE_TIMERS[loop] = selector
    return loop


def idle_timer(loop: asyncio.AbstractEventLoop) -> IdleTimingSelector | None:
    """The idle timer of a loop made by `new_event_loop`, None for any other loop."""
    return _IDLE_TIMERS.get(loop)
