"""Watches on every partition state znode (``/brokers/topics/<t>/partitions/<p>/state``), pipelined.

Kafka's brokers never watch these znodes: the controller tells them (LeaderAndIsr, UpdateMetadata). Here each
broker watches them itself (watches.py), and kazoo's ``DataWatch`` did that one znode at a time: a change is re-read
with a synchronous ``get`` on kazoo's one callback thread, so a failover that moves 3,333 leaders cost every broker
3,333 round trips in series (most of the 82 s a 10,000-partition failover took), and each ``DataWatch`` adds a
session listener that spawns a thread per znode on every reconnection (10,000 threads). Here a watch event sends an
asynchronous read that sets the next watch, and answers are handled as they arrive (kazoo's completion thread);
after a reconnection (kazoo does not re-send watches) every watched znode is read again, from one thread.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from broker.controller import zk_paths as zp

log = logging.getLogger(__name__)

# (topic, partition, topic id, data or None, stat or None) -> False to stop watching (the topic went)
OnState = Callable[[str, int, uuid.UUID, "bytes | None", "ZnodeStat | None"], "bool | None"]


class StateWatches:
    """Keeps one watch per known partition state znode and reports each version read to `on_state`."""

    def __init__(self, zk: KazooClient, on_state: OnState) -> None:
        self._zk = zk
        self._on_state = on_state
        self._lock = threading.Lock()
        self._watched: dict[str, tuple[str, int, uuid.UUID]] = {}
        zk.add_listener(self._on_connection)

    def watch(self, t: str, topic_id: uuid.UUID, partitions: list[int]) -> None:
        """Start watching these partitions' state znodes (a re-created topic's replace the old ones)."""
        paths = [zp.state_path(t, p) for p in partitions]
        with self._lock:
            for path, p in zip(paths, partitions, strict=True):
                self._watched[path] = (t, p, topic_id)
        for path in paths:
            self._read(path)

    def watched(self) -> int:
        with self._lock:
            return len(self._watched)

    def _read(self, path: str) -> None:
        try:
            self._zk.get_async(path, watch=self._on_event).rawlink(partial(self._on_data, path))
        except KazooException:  # not connected: the reconnection reads every znode again
            pass

    def _on_event(self, event: WatchedEvent) -> None:
        if event.path in self._watched:
            self._read(event.path)

    def _on_data(self, path: str, result: Any) -> None:
        with self._lock:
            entry = self._watched.get(path)
        if entry is None:
            return
        try:
            data, stat = result.get_nowait()
        except NoNodeError:
            data, stat = None, None
        except KazooException:  # connection or session lost: read again on reconnection
            return
        try:
            keep = self._on_state(*entry, data, stat)
        except Exception:
            log.exception("state watch %s failed", path)
            keep = None
        if keep is False:
            with self._lock:
                if self._watched.get(path) == entry:
                    del self._watched[path]
            return
        if data is None:  # not created yet (the controller writes it after the assignment): watch its creation
            try:
                self._zk.exists_async(path, watch=self._on_event).rawlink(partial(self._on_exists, path))
            except KazooException:
                pass

    def _on_exists(self, path: str, result: Any) -> None:
        try:
            stat = result.get_nowait()
        except KazooException:
            return
        if stat is not None:  # created between the read and the exists: its creation event will not come
            self._read(path)

    def _on_connection(self, state: str) -> None:
        # kazoo's connection thread: must not block. Watches do not survive a reconnection in kazoo.
        if state == KazooState.CONNECTED:
            threading.Thread(target=self._read_all, name="zk-state-rewatch", daemon=True).start()

    def _read_all(self) -> None:
        with self._lock:
            paths = list(self._watched)
        for path in paths:
            self._read(path)
