"""The controller's event queue (Kafka's ControllerEventManager queue).

ZooKeeper watches, session changes and requests (ElectLeaders) only put events here, so neither the broker's
event loop nor kazoo's callback thread ever waits on the controller; the controller thread alone takes them.
An event is a tuple (kind, *args); "call" events carry a function and the future for its result.
"""

from __future__ import annotations

import concurrent.futures
import queue
from collections.abc import Callable


class ControllerEventQueue:
    def __init__(self) -> None:
        self._q: queue.Queue[tuple] = queue.Queue()

    def put(self, kind: str, *args: object) -> None:
        self._q.put((kind, *args))

    def submit(self, fn: Callable[[], object]) -> concurrent.futures.Future:
        """Run `fn` on the controller thread; the future carries its result."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._q.put(("call", fn, fut))
        return fut

    def take(self, timeout_s: float) -> list[tuple]:
        """The next event and every one queued behind it (a burst of watch events is handled in one pass);
        [] when none came within `timeout_s`."""
        try:
            events = [self._q.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while True:
            try:
                events.append(self._q.get_nowait())
            except queue.Empty:
                return events

    def size(self) -> int:
        return self._q.qsize()
