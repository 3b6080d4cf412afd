"""Work done in steps: a generator that yields between pieces, so that an event loop can serve between them (a
broker's /metrics page, its metrics tick, a per-partition snapshot at 10,000 partitions), and is run whole where
nothing waits for the loop."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")


def run_steps(steps: Generator[object, None, T]) -> T:
    """A stepped computation run whole; its return value."""
    return run_counting(steps)[1]


def run_counting(steps: Generator[object, None, T]) -> tuple[int, T]:
    """A stepped computation run whole: how many times it yielded, and its return value."""
    n = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return n, done.value
        n += 1
