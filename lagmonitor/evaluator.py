"""Group evaluation on top of storage (Burrow's caching evaluator), plus our lag-in-seconds estimate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lagmonitor.rules import (
    ConsumerOffset,
    GroupStatus,
    PartitionStatus,
    evaluate_partition,
    group_status,
    not_found,
    problems_only,
)
from lagmonitor.storage import LagStorage, PartitionView


@dataclass(frozen=True)
class EvaluatorConfig:
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    expire_cache_s: int = 10
    # Which end the status measures lag to (docs/lag-monitor.md §6): "lso", the Last Stable Offset a
    # read_committed consumer can reach (KIP-98; the log end on a topic without transactions), or
    # "high-watermark", Burrow's log end, which counts commit markers no consumer receives.
    status_lag: str = "lso"

    def __post_init__(self) -> None:
        if self.status_lag not in STATUS_LAGS:
            raise ValueError(f"status-lag: expected one of {', '.join(STATUS_LAGS)}, got {self.status_lag!r}")


STATUS_LAGS = ("lso", "high-watermark")


def lag_seconds(history: Sequence[tuple[int, int]], committed: int, now_ms: int) -> float | None:
    """Seconds since the broker's log end passed `committed`, from the (offset, timestamp_ms) poll history.

    Interpolated between the two polls around it; extrapolated at the history's average rate when the committed
    offset is older than the whole history (or the oldest poll time, if the log did not move). None without polls.
    """
    if not history:
        return None
    if committed >= history[-1][0]:
        return 0.0
    i = next(i for i, (offset, _) in enumerate(history) if offset > committed)
    if i > 0:
        (o0, t0), (offset, ts) = history[i - 1], history[i]
        at = t0 + (committed - o0) * (ts - t0) / (offset - o0)
    else:
        (o_first, t_first), (o_last, t_last) = history[0], history[-1]
        rate = (o_last - o_first) / (t_last - t_first) if t_last > t_first else 0.0
        at = t_first - (o_first - committed) / rate if rate > 0 else t_first
    return max(0.0, (now_ms - at) / 1000)


def status_inputs(v: PartitionView, status_lag: str
                  ) -> tuple[list[ConsumerOffset | None], list[tuple[int, int]], int]:
    """The window, end history and current lag Burrow's rules see: the log end's (Burrow's), or with "lso" the
    Last Stable Offset's where the collector has one, each commit's lag then being its lag to the LSO."""
    if status_lag != "lso" or not v.stable_history or v.lso_lag is None:
        return v.offsets, v.broker_history, v.current_lag
    window = [None if e is None else replace(e, lag=e.lag if e.lso_lag is None else e.lso_lag) for e in v.offsets]
    return window, v.stable_history, v.lso_lag


def evaluate_views(cluster: str, group: str, views: list[PartitionView] | None, now_ms: int,
                   config: EvaluatorConfig) -> GroupStatus:
    """Evaluate every partition of a fetched group and fold them into the group status."""
    if views is None:
        return not_found(cluster, group)
    now_s = now_ms // 1000
    parts = []
    for v in views:
        window, history, lag = status_inputs(v, config.status_lag)
        status, complete, _, _ = evaluate_partition(window, [o for o, _ in history], lag, now_s,
                                                    config.allowed_lag, config.minimum_complete)
        start, end = _ends(v.offsets)   # the stored entries, with Burrow's lag, for the JSON
        secs = None if end is None else 0.0 if lag == 0 else lag_seconds(history, end.offset, now_ms)
        parts.append(PartitionStatus(v.topic, v.partition, status, complete, v.current_lag, start, end, v.owner,
                                     v.client_id, secs, v.lso_lag))
    return group_status(cluster, group, parts)


def _ends(offsets: Sequence[ConsumerOffset | None]) -> tuple[ConsumerOffset | None, ConsumerOffset | None]:
    """First and last entry of the window evaluate_partition keeps (leading nulls dropped)."""
    kept = [e for e in offsets if e is not None]
    return (kept[0], kept[-1]) if kept else (None, None)


class Evaluator:
    """Caches each group's full evaluation for expire-cache seconds, like Burrow's caching evaluator."""

    def __init__(self, cluster: str, storage: LagStorage, config: EvaluatorConfig | None = None) -> None:
        self.cluster = cluster
        self.storage = storage
        self.config = config or EvaluatorConfig()
        self._cache: dict[str, tuple[int, GroupStatus]] = {}

    def group(self, group: str, now_ms: int, show_all: bool = True) -> GroupStatus:
        hit = self._cache.get(group)
        if hit is None or now_ms >= hit[0]:
            full = evaluate_views(self.cluster, group, self.storage.fetch_group(group, now_ms), now_ms,
                                  self.config)
            hit = self._cache[group] = (now_ms + self.config.expire_cache_s * 1000, full)
        return hit[1] if show_all else problems_only(hit[1])

    def invalidate(self, group: str | None = None) -> None:
        """Forget cached results (all, or one group's), e.g. after a DELETE."""
        if group is None:
            self._cache.clear()
        else:
            self._cache.pop(group, None)
