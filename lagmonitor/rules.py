"""Burrow's evaluator rules as pure functions (docs/lag-monitor.md §4): partition status, group status, completeness.

Time is passed in: `now_s` is whole seconds, commit timestamps are ms, exactly as Burrow compares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum


class Status(IntEnum):
    """Burrow's status constants; the numeric values are its ordering and its Prometheus values."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(slots=True)
class ConsumerOffset:
    """One stored commit. `order` is the __consumer_offsets position (internal, never serialised)."""

    offset: int
    timestamp: int
    observed_at: int
    lag: int | None
    order: int = 0
    # Lag to the Last Stable Offset when the commit was stored (KIP-98; None when no LSO was known): what a
    # read_committed consumer could have read. Equal to `lag` on a topic without transactions.
    lso_lag: int | None = None


@dataclass(slots=True)
class PartitionStatus:
    topic: str
    partition: int
    status: Status
    complete: float
    current_lag: int
    start: ConsumerOffset | None = None
    end: ConsumerOffset | None = None
    owner: str = ""
    client_id: str = ""
    lag_seconds: float | None = None   # our extra field, not Burrow's
    lso_lag: int | None = None         # ours: LSO − committed offset (None without an LSO)


@dataclass(slots=True)
class GroupStatus:
    cluster: str
    group: str
    status: Status
    complete: float
    partitions: list[PartitionStatus] = field(default_factory=list)
    partition_count: int = 0
    maxlag: PartitionStatus | None = None
    totallag: int = 0
    lag_seconds: float | None = None   # our extra field: the worst partition estimate
    lso_totallag: int = 0              # ours: the partitions' lag to the LSO, summed


# ------------------------------------------------------------------ the rule functions (Burrow's numbering)

def lag_always_not_zero(window: Sequence[ConsumerOffset], allowed_lag: int) -> bool:
    """Rule 1: false if any non-null lag is ≤ allowed_lag (null lags are skipped)."""
    return all(e.lag is None or e.lag > allowed_lag for e in window)


def rewind_index(window: Sequence[ConsumerOffset]) -> int:
    """Rule 2: the first index i ≥ 1 whose offset is below its predecessor's, else -1."""
    for i in range(1, len(window)):
        if window[i].offset < window[i - 1].offset:
            return i
    return -1


def rewind_recovered(window: Sequence[ConsumerOffset], i: int) -> bool:
    """Some entry from i on is back at (or past) the offset before the drop."""
    before = window[i - 1].offset
    return any(e.offset >= before for e in window[i:])


def stopped(window: Sequence[ConsumerOffset], now_s: int) -> bool:
    """Rule 3: time since the last commit strictly exceeds the time the window spans."""
    last = window[-1].timestamp
    return now_s * 1000 - last > last - window[0].timestamp


def recent_lag_zero(window: Sequence[ConsumerOffset], broker_offsets: Iterable[int]) -> bool:
    """The #338 guard: some recent broker offset is ≤ the last committed offset."""
    last = window[-1].offset
    return any(b <= last for b in broker_offsets)


def stalled(window: Sequence[ConsumerOffset]) -> bool:
    """Rule 4: the offset never moves (a single entry is trivially stalled)."""
    first = window[0].offset
    return all(e.offset == first for e in window)


def lag_not_decreasing(window: Sequence[ConsumerOffset]) -> bool:
    """Rule 5: no non-null lag is strictly below the previous non-null lag."""
    prev = None
    for e in window:
        if e.lag is None:
            continue
        if prev is not None and e.lag < prev:
            return False
        prev = e.lag
    return True


def partition_status(window: Sequence[ConsumerOffset], broker_offsets: Iterable[int], current_lag: int,
                     now_s: int, allowed_lag: int = 0) -> Status:
    """calculatePartitionStatus in its real order: STOP → REWIND → STALL → WARN, all gated by current lag."""
    if current_lag > allowed_lag:
        if stopped(window, now_s) and not recent_lag_zero(window, broker_offsets):
            return Status.STOP
        i = rewind_index(window)
        if i > 0 and not rewind_recovered(window, i):
            return Status.REWIND
        if lag_always_not_zero(window, allowed_lag):
            if stalled(window):
                return Status.STALL
            if lag_not_decreasing(window):
                return Status.WARN
    return Status.OK


def evaluate_partition(offsets: Sequence[ConsumerOffset | None], broker_offsets: Iterable[int], current_lag: int,
                       now_s: int, allowed_lag: int = 0, minimum_complete: float = 0.0
                       ) -> tuple[Status, float, ConsumerOffset | None, ConsumerOffset | None]:
    """evaluatePartitionStatus: (status, complete, start, end) for a ring copy with leading nulls."""
    if not offsets:
        return Status.OK, 0.0, None, None
    first = next((i for i, e in enumerate(offsets) if e is not None), len(offsets) - 1)
    window = offsets[first:]
    complete = len(window) / len(offsets) if first else 1.0
    if window[0] is None:  # all-null ring: Burrow keeps the last (null) slot, so complete = 1/len
        return Status.OK, complete, None, None
    status = Status.OK
    if complete >= minimum_complete:
        status = partition_status(window, broker_offsets, current_lag, now_s, allowed_lag)
    return status, complete, window[0], window[-1]


def group_status(cluster: str, group: str, partitions: Sequence[PartitionStatus]) -> GroupStatus:
    """evaluateConsumerStatus over already evaluated partitions (in visiting order), listing all of them."""
    result = GroupStatus(cluster, group, Status.OK, 0.0, list(partitions), len(partitions))
    complete = 0
    for p in partitions:
        result.totallag += p.current_lag
        result.lso_totallag += p.current_lag if p.lso_lag is None else p.lso_lag
        if p.status > result.status:
            result.status = min(p.status, Status.ERR)
        if result.maxlag is None or p.current_lag > result.maxlag.current_lag:
            result.maxlag = p
        if p.complete == 1.0:
            complete += 1
        if p.lag_seconds is not None and (result.lag_seconds is None or p.lag_seconds > result.lag_seconds):
            result.lag_seconds = p.lag_seconds
    result.complete = complete / len(partitions) if partitions else 0.0
    return result


def problems_only(status: GroupStatus) -> GroupStatus:
    """ShowAll=false (`/status`): list only partitions worse than OK; every other field unchanged."""
    return replace(status, partitions=[p for p in status.partitions if p.status > Status.OK])


def not_found(cluster: str, group: str) -> GroupStatus:
    """The NOTFOUND reply for a group storage does not know."""
    return GroupStatus(cluster, group, Status.NOTFOUND, 1.0)
