"""Writes leader-epoch checkpoints on a thread of their own, so role changes do not wait for the file system.

A failover re-assigns the epoch of every partition a survivor leads, and each ISR change bumps it again; one
write and rename each took 0.3-0.8 ms of the event loop (issue 20). Here a partition changed several times
before the thread reaches it is written once. What a crash can lose is re-derived on load (docs/broker-internals.md,
"The leader-epoch checkpoint").
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

log = logging.getLogger(__name__)


class Flushable(Protocol):
    def flush(self) -> None: ...


class CheckpointWriter:
    """A queue of caches to flush, drained by one daemon thread started on first use."""

    def __init__(self, name: str = "epoch-checkpoint") -> None:
        self._name = name
        self._pending: dict[int, Flushable] = {}  # by id: a cache queued twice is written once
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def submit(self, cache: Flushable) -> None:
        """Write `cache` soon (after `close`, at once)."""
        with self._cond:
            if not self._stopping:
                self._pending[id(cache)] = cache
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._cond.notify()
                return
        _flush(cache)

    def close(self) -> None:
        """Stop the thread once the queue is written (it exits only with the queue empty); later submissions are
        written by the caller."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._stopping)
                if not self._pending:
                    return
                batch, self._pending = list(self._pending.values()), {}
            for cache in batch:
                _flush(cache)


def _flush(cache: Flushable) -> None:
    try:
        cache.flush()
    except OSError:
        # The next producer-state snapshot tries again; what a crash loses meanwhile is re-derived on load.
        log.exception("writing a leader-epoch checkpoint failed")
