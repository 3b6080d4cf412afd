"""The leader epoch cache: which leader epoch started at which offset (`leader-epoch-checkpoint`).

Followers use it to truncate to the point where their log diverged from the new leader's (KIP-101):
the leader answers OffsetForLeaderEpoch from it.

A new epoch may be written later, off the caller's thread (`on_dirty`, broker/log/checkpoint_writer.py): a
failover re-assigns thousands of partitions, and one file write each held the event loop (docs/broker-internals.md,
"The leader-epoch checkpoint"). Truncations are written at once.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

UNDEFINED = (-1, -1)


class LeaderEpochCache:
    """Entries (epoch, start offset), both strictly increasing, persisted in Kafka's checkpoint format."""

    FILE = "leader-epoch-checkpoint"

    def __init__(self, directory: Path, on_dirty: Callable[[LeaderEpochCache], None] | None = None) -> None:
        """`on_dirty(cache)` is called when an assignment is not yet on disk (`flush` writes it); without it
        every change is written at once."""
        self._path = directory / self.FILE
        self.entries: list[tuple[int, int]] = self._load()
        self._on_dirty = on_dirty
        # Held from reading `entries` to the rename, so a late writer cannot put back an older list.
        self._lock = threading.RLock()
        self._dirty = False
        self._discarded = False

    def _load(self) -> list[tuple[int, int]]:
        try:
            lines = self._path.read_text().split("\n")
            count = int(lines[1])
            entries = [tuple(map(int, line.split())) for line in lines[2:2 + count]]
            return [(e, o) for e, o in entries]
        except (OSError, ValueError, IndexError):
            return []

    def _save(self) -> None:
        with self._lock:
            if self._discarded:
                return
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text("0\n" + f"{len(self.entries)}\n" + "".join(f"{e} {o}\n" for e, o in self.entries))
            os.replace(tmp, self._path)
            self._dirty = False

    def flush(self) -> None:
        """Write the checkpoint if an assignment is not on disk yet."""
        with self._lock:
            if self._dirty:
                self._save()

    @property
    def dirty(self) -> bool:
        return self._dirty

    def discard(self) -> None:
        """The partition directory is going away: write nothing more."""
        with self._lock:
            self._discarded = True

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start_offset: int) -> None:
        """Epoch `epoch` starts at `start_offset` (a leader's first append in it, or a follower's copy)."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return
        with self._lock:
            # A new epoch cannot start before one already recorded; drop entries it supersedes.
            while self.entries and self.entries[-1][1] >= start_offset:
                self.entries.pop()
            self.entries.append((epoch, start_offset))
            if self._on_dirty is None:
                self._save()
                return
            was_dirty, self._dirty = self._dirty, True
        if not was_dirty:
            self._on_dirty(self)

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= `epoch`, the offset where it ended): Kafka's endOffsetFor."""
        if not self.entries or epoch < self.entries[0][0]:
            return UNDEFINED
        if epoch >= self.entries[-1][0]:
            return self.entries[-1][0], log_end_offset
        i = bisect_right([e for e, _ in self.entries], epoch)
        return self.entries[i - 1][0], self.entries[i][1]

    def truncate_from_end(self, offset: int) -> None:
        """The log was truncated to `offset`: forget epochs that start at or after it."""
        with self._lock:
            before = len(self.entries)
            self.entries = [(e, o) for e, o in self.entries if o < offset]
            if len(self.entries) != before:
                self._save()

    def truncate_from_start(self, offset: int) -> None:
        """The log start moved to `offset`: the epoch covering it now starts there."""
        with self._lock:
            keep = [(e, o) for e, o in self.entries if o >= offset]
            covering = [(e, o) for e, o in self.entries if o < offset]
            if covering and (not keep or keep[0][1] > offset):
                keep.insert(0, (covering[-1][0], offset))
            if keep != self.entries:
                self.entries = keep
                self._save()
