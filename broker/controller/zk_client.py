"""The broker's ZooKeeper client: kazoo's, plus a public hook that reports each request's latency (Kafka's
ZooKeeperClientMetrics ZooKeeperRequestLatencyMs)."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

from kazoo.client import KazooClient


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
