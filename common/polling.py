"""Bounded waiting, written once: poll a predicate until it holds, or a TCP port until something listens.

Every wait in the local machinery, the CLI, the benchmarks and the tests goes through here, so a wait that gives
up always says what it was waiting for, for how long, and the last value or error it saw.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError, AssertionError):
    """A wait that ran out of time. Both a TimeoutError (for the product) and an AssertionError (for pytest)."""


class _Poll:
    """One wait's bookkeeping: the deadline, the last value and the last exception tolerated."""

    def __init__(self, timeout_s: float, what: str | None, predicate: Callable[[], Any],
                 retry_on: tuple[type[BaseException], ...]) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.what = what or getattr(predicate, "__name__", "condition")
        self.predicate = predicate
        self.retry_on = retry_on
        self.last: Any = None
        self.last_exc: BaseException | None = None

    def step(self) -> Any:
        """The predicate's value when truthy; falsy to wait again; WaitTimeout once out of time."""
        try:
            self.last = self.predicate()
        except self.retry_on as e:   # "not yet": a service still starting refuses connections, say
            self.last, self.last_exc = None, e
        if not self.last and time.monotonic() >= self.deadline:
            raise self.error()
        return self.last

    def error(self) -> WaitTimeout:
        detail = f" (last value: {self.last!r}"
        detail += f", last error: {self.last_exc!r})" if self.last_exc else ")"
        return WaitTimeout(f"{self.what} not reached after {self.timeout_s}s{detail}")


def wait_until(predicate: Callable[[], T], timeout_s: float, interval_s: float = 0.05, what: str | None = None,
               *, retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Poll `predicate` until it returns something truthy and return that; WaitTimeout after `timeout_s`.

    Exceptions of the `retry_on` types count as "not yet" (the last one is reported); others propagate.
    """
    poll = _Poll(timeout_s, what, predicate, retry_on)
    while not (value := poll.step()):
        time.sleep(interval_s)
    return value


async def wait_until_async(predicate: Callable[[], T], timeout_s: float, interval_s: float = 0.02,
                           what: str | None = None, *, retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """`wait_until` for code on an event loop: sleeps with asyncio, so the loop keeps running between polls."""
    poll = _Poll(timeout_s, what, predicate, retry_on)
    while not (value := poll.step()):
        await asyncio.sleep(interval_s)
    return value


class ProcessExited(RuntimeError):
    """The process that was to listen exited first."""


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for_port(host: str, port: int, is_alive: Callable[[], bool] | None = None, timeout_s: float = 30.0,
                  interval_s: float = 0.05) -> None:
    """Wait until something accepts TCP connections on host:port; ProcessExited as soon as `is_alive()` is false."""
    def listening() -> bool:
        if is_alive is not None and not is_alive():
            raise ProcessExited(f"process exited before listening on {host}:{port}")
        return port_open(host, port)

    wait_until(listening, timeout_s, interval_s, what=f"something listening on {host}:{port}")
