"""The broker's ZooKeeper client: kazoo's, plus a public hook that reports each request's latency (Kafka's
ZooKeeperClientMetrics ZooKeeperRequestLatencyMs), on a handler whose select is a poll."""

from __future__ import annotations

import select
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler

_READ = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_WRITE = select.POLLOUT | select.POLLHUP | select.POLLERR


def _fd(obj: Any) -> int:
    fd = obj if isinstance(obj, int) else obj.fileno()
    if fd < 0:
        raise ValueError("Invalid event mask or fd")  # what kazoo's selector_select raises for it
    return fd


def poll_select(rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
                ) -> tuple[list, list, list]:
    """kazoo's `selector_select` (a `select` without its 1,024-descriptor limit) as one poll(2). kazoo builds and
    closes an epoll selector on every call, and its connection thread selects several times per request and per
    answer: ~19 µs a call against ~5 here, the largest share of the ZooKeeper client's Python per request, which
    every broker pays for each of the thousands of state znodes a failover or controlled shutdown rewrites
    (issue 20). An object asked for both ways and ready both ways is reported readable only."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    poller = select.poll()
    masks: dict[int, int] = {}
    for obj in rlist:
        fd = _fd(obj)
        masks[fd] = masks.get(fd, 0) | select.POLLIN | select.POLLPRI
    for obj in wlist:
        fd = _fd(obj)
        masks[fd] = masks.get(fd, 0) | select.POLLOUT
    for fd, mask in masks.items():
        poller.register(fd, mask)
    ready = dict(poller.poll(None if timeout is None else timeout * 1000))
    if any(ev & select.POLLNVAL for ev in ready.values()):
        raise ValueError("Invalid event mask or fd")  # a closed descriptor (epoll refuses to register it)
    readable = [obj for obj in rlist if ready.get(_fd(obj), 0) & _READ]
    taken = {_fd(obj) for obj in readable}
    writable = [obj for obj in wlist if ready.get(_fd(obj), 0) & _WRITE and _fd(obj) not in taken]
    return readable, writable, []


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler with `poll_select`."""

    def select(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        return poll_select(*args, **kwargs)


class TimedKazooClient(KazooClient):
    """A KazooClient whose request listeners get, on kazoo's thread, the seconds from queueing each request to
    its result. Listeners must not block."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_listeners: list[Callable[[float], None]] = []

    def add_request_listener(self, listener: Callable[[float], None]) -> None:
        self._request_listeners.append(listener)

    def _call(self, request: Any, async_object: Any) -> Any:
        # Every kazoo request goes through _call (KazooClient's one queueing point): the only place to time them.
        listeners = self._request_listeners
        if listeners:
            t0 = perf_counter()

            def done(_result: Any) -> None:
                elapsed = perf_counter() - t0
                for fn in listeners:
                    fn(elapsed)

            try:
                async_object.rawlink(done)
            except Exception:  # never break a ZooKeeper request for a metric
                pass
        return super()._call(request, async_object)
