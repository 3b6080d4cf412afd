"""When the produce service sends to each partition: one send per `interval` on a fixed grid, offset by the
partition's phase. Pure logic: times are the caller's monotonic seconds.

Spread phases: a broker answers one request per connection at a time and librdkafka sends one ProduceRequest per
partition, so records for partitions of the same leader sent together would queue behind each other and the probe
would measure its own burst. They are offset evenly over the interval instead; partitions of different leaders
(different connections) share a slot, which keeps the wake-ups per interval to the largest leader's share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


def send_phases(leaders: Mapping[int, int], interval: float, spread: bool) -> dict[int, float]:
    """Each partition's offset within the interval, from partition → leader broker id (-1: none known).
    Not spread: every partition on the same tick (Xinfra's schedule)."""
    if not spread:
        return dict.fromkeys(leaders, 0.0)
    by_leader: dict[int, list[int]] = {}
    for p in sorted(leaders):
        by_leader.setdefault(leaders[p], []).append(p)
    return {p: interval * rank / len(ps) for ps in by_leader.values() for rank, p in enumerate(ps)}


class SendSchedule:
    def __init__(self, interval: float, origin: float) -> None:
        self.interval = interval
        self.origin = origin
        self.phases: Mapping[int, float] = {}
        self.next_due: dict[int, float] = {}

    def rephase(self, phases: Mapping[int, float], now: float) -> None:
        """Adopt new phases (kept by reference: callers replace their mapping, never mutate it): a partition that
        is new or whose phase moved sends next at its first grid point from `now`; the others keep their times."""
        for p, phase in phases.items():
            if p not in self.next_due or self.phases.get(p) != phase:
                k = max(math.ceil((now - self.origin - phase) / self.interval), 0)
                self.next_due[p] = self.origin + phase + k * self.interval
        self.phases = phases

    def take_due(self, now: float) -> Iterable[int]:
        """The partitions due at `now`, each moved to its next grid point after `now` (a late loop skips the
        sends it missed rather than bunching them)."""
        due = [p for p, t in self.next_due.items() if t <= now]
        for p in due:
            t = self.next_due[p]
            self.next_due[p] = t + (math.floor((now - t) / self.interval) + 1) * self.interval
        return due

    def wake_at(self, default: float) -> float:
        return min(self.next_due.values(), default=default)
