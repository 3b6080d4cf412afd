"""Group evaluation on top of storage (Burrow's caching evaluator), plus our lag-in-seconds estimate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lagmonitor.rules import (
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


def evaluate_views(cluster: str, group: str, views: list[PartitionView] | None, now_ms: int,
                   config: EvaluatorConfig) -> GroupStatus:
    """Evaluate every partition of a fetched group and fold them into the group status."""
    if views is None:
        return not_found(cluster, group)
    now_s = now_ms // 1000
    parts = []
    for v in views:
        status, complete, start, end = evaluate_partition(v.offsets, v.broker_offsets, v.current_lag, now_s,
                                                          config.allowed_lag, config.minimum_complete)
        secs = lag_seconds(v.broker_history, end.offset, now_ms) if end is not None else None
        parts.append(PartitionStatus(v.topic, v.partition, status, complete, v.current_lag, start, end, v.owner,
                                     v.client_id, secs))
    return group_status(cluster, group, parts)


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
