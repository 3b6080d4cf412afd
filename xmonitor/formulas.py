"""Xinfra's availability formulas (docs/xmonitor.md §3.1-3.3), pure: they take already-windowed rates."""

from __future__ import annotations

import math
from collections.abc import Iterable


def _finite(x: float) -> float:
    return x if x is not None and math.isfinite(x) else 0.0


def partition_produce_availability(success_rate: float, error_rate: float, last_send_failed: bool,
                                   treat_zero_throughput_as_unavailable: bool = True) -> float:
    s, e = success_rate, _finite(error_rate)
    if s + e > 0:
        return s / (s + e)
    if treat_zero_throughput_as_unavailable:
        return 0.0
    return 0.0 if last_send_failed else 1.0


def produce_availability(per_partition: Iterable[tuple[float, float, bool]],
                         treat_zero_throughput_as_unavailable: bool = True) -> float:
    """produce-availability-avg: the mean over partitions of s/(s+e) (equal weight per partition); a partition with
    no completed send in the window counts 0 (or 1 unless its last send failed, when zero throughput is not
    treated as unavailable). NaN with no partitions."""
    values = [partition_produce_availability(s, e, f, treat_zero_throughput_as_unavailable)
              for s, e, f in per_partition]
    return sum(values) / len(values) if values else math.nan


def consume_availability(consumed_rate: float, delayed_rate: float, lost_rate: float) -> float:
    """consume-availability-avg: (consumed − delayed) / (consumed + lost), 0 when nothing was consumed or lost."""
    c, d, lost = _finite(consumed_rate), _finite(delayed_rate), _finite(lost_rate)
    return (c - d) / (c + lost) if c + lost > 0 else 0.0


def ratio_availability(successes: float, failures: float) -> float:
    """offset-commit-availability-avg / offsets-committed-avg: succ/(succ+fail), 0 when both are 0."""
    return successes / (successes + failures) if successes + failures > 0 else 0.0
