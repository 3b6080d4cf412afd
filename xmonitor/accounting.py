"""Sequence accounting on the consume side: pure, clock passed in (ms), no I/O.

Per (producer id, run id, partition) stream, Xinfra's rules with two fixes:
* the first record of a stream only sets the baseline, and a new run id is a new stream, so a restarted producer
  never looks like duplicates (Xinfra #129), and a consumer that starts mid-run never reports loss;
* reordering is its own count: an index below the expected one that was *missing* (a gap) is out of order, one
  that was already delivered is a duplicate. A gap is therefore not counted lost at once but after
  `grace_ms` (the records may still arrive out of order); only then does it add to `records_lost`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum

from xmonitor.payload import Probe


class Kind(Enum):
    BASELINE = "baseline"
    IN_ORDER = "in_order"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out_of_order"


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: Kind
    gap: int = 0        # indices newly missing (pending loss) because this record skipped them


# the outcomes without a gap, built once (one is returned per consumed record)
_BASELINE, _IN_ORDER = Outcome(Kind.BASELINE), Outcome(Kind.IN_ORDER)
_DUPLICATE, _OUT_OF_ORDER = Outcome(Kind.DUPLICATE), Outcome(Kind.OUT_OF_ORDER)


class SequenceTracker:
    """One stream. `record()` classifies an index; `expire()` turns gaps older than the grace into losses."""

    MAX_PENDING = 100_000       # bound on remembered missing indices (older ones are confirmed lost early)
    MAX_CONFIRMED = 10_000      # lost indices remembered, so a very late arrival counts as out of order

    def __init__(self, grace_ms: int) -> None:
        self.grace_ms = grace_ms
        self.next_index: int | None = None
        self.pending: OrderedDict[int, int] = OrderedDict()       # missing index -> ms when the gap was seen
        self.confirmed: OrderedDict[int, None] = OrderedDict()
        self.lost = 0          # confirmed lost so far (for tests and introspection)

    def record(self, index: int, now_ms: int) -> Outcome:
        if self.next_index is None:
            self.next_index = index + 1
            return _BASELINE
        if index == self.next_index:
            self.next_index += 1
            return _IN_ORDER
        if index > self.next_index:
            gap = index - self.next_index
            for i in range(max(self.next_index, index - self.MAX_PENDING), index):
                self.pending[i] = now_ms
            early = gap - min(gap, self.MAX_PENDING)
            self.lost += early
            self.next_index = index + 1
            self._trim()
            return Outcome(Kind.IN_ORDER, gap)
        if self.pending.pop(index, None) is not None:
            return _OUT_OF_ORDER
        if index in self.confirmed:
            del self.confirmed[index]
            return _OUT_OF_ORDER
        return _DUPLICATE

    def expire(self, now_ms: int) -> int:
        """Confirm as lost the gaps seen at least `grace_ms` ago; returns how many were confirmed now."""
        n = 0
        while self.pending:
            index, seen = next(iter(self.pending.items()))
            if now_ms - seen < self.grace_ms:
                break
            del self.pending[index]
            self.confirmed[index] = None
            n += 1
        self.lost += n
        while len(self.confirmed) > self.MAX_CONFIRMED:
            self.confirmed.popitem(last=False)
        return n

    def _trim(self) -> None:
        while len(self.pending) > self.MAX_PENDING:
            index, _ = self.pending.popitem(last=False)
            self.confirmed[index] = None
            self.lost += 1


class ConsumeAccounting:
    """All streams of the monitor topic. `observe()` classifies one probe; `expire()` returns newly confirmed
    losses per partition. At most `max_runs` streams per partition are kept (least recently seen dropped)."""

    def __init__(self, grace_ms: int, max_runs: int = 8) -> None:
        self.grace_ms = grace_ms
        self.max_runs = max_runs
        self._streams: dict[int, OrderedDict[tuple[str, str], SequenceTracker]] = {}

    def observe(self, probe: Probe, partition: int, now_ms: int) -> Outcome:
        streams = self._streams.setdefault(partition, OrderedDict())
        key = (probe.producer_id, probe.run_id)
        tracker = streams.get(key)
        if tracker is None:
            tracker = streams[key] = SequenceTracker(self.grace_ms)
            while len(streams) > self.max_runs:
                streams.popitem(last=False)
        else:
            streams.move_to_end(key)
        return tracker.record(probe.index, now_ms)

    def expire(self, now_ms: int) -> dict[int, int]:
        out: dict[int, int] = {}
        for partition, streams in self._streams.items():
            n = sum(t.expire(now_ms) for t in streams.values())
            if n:
                out[partition] = n
        return out

    def pending(self) -> int:
        return sum(len(t.pending) for s in self._streams.values() for t in s.values())
