"""`LogDirFailureChannel`: the log dirs a failed write took offline (Kafka's LogDirFailureChannel, KIP-112).

In a cluster a log dir whose write failed (ENOSPC, EIO) goes offline until the broker restarts, as in Kafka:
its partitions answer KAFKA_STORAGE_ERROR, and once every log dir is offline the broker halts so the controller
moves its leaderships to the other replicas (`Broker._log_dir_failed`). A standalone broker has no replica to fail
over to, so its channel is off: a failed write is refused and the next one may succeed once room is made
(docs/broker-internals.md, "A disk that fills up").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)


class LogDirFailureChannel:
    """The offline log dirs, and who to tell when one goes offline. Thread-safe: any thread's write may fail."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._offline: set[Path] = set()
        self._lock = threading.Lock()
        self.listeners: list[Callable[[Path], object]] = []

    def fail(self, log_dir: Path, error: BaseException) -> bool:
        """Take `log_dir` offline after `error` (True the first time; listeners hear of it once)."""
        if not self.enabled:
            return False
        with self._lock:
            if log_dir in self._offline:
                return False
            self._offline.add(log_dir)
        log.error("Error while writing to log dir %s; it is offline until the broker restarts: %s", log_dir, error)
        for listener in self.listeners:
            listener(log_dir)
        return True

    def is_offline(self, log_dir: Path) -> bool:
        return log_dir in self._offline

    @property
    def offline_dirs(self) -> frozenset[Path]:
        return frozenset(self._offline)

    def all_offline(self, log_dirs: Iterable[Path]) -> bool:
        """Every one of `log_dirs` offline: nothing is left for this broker to host (Kafka then halts)."""
        return all(d in self._offline for d in log_dirs)
