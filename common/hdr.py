"""HDR histogram parameter sets, named once so that histograms which are merged or read elsewhere agree.

A histogram can only be added to, or decoded into, one with the same range and precision, so every latency
histogram that leaves its process (the exporter's timers and .hlog files, xmonitor's SLI files read by slo/ and
benchmarks/_common, the CLI perf tools' reports) uses `LATENCY_US`. The benchmarks' in-process histograms keep
their own, narrower range (`BENCHMARK_US`): they are never merged with the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram


@dataclass(frozen=True)
class HdrParams:
    """(lowest, highest) trackable value and significant digits of an HdrHistogram."""

    lowest: int
    highest: int
    digits: int

    def new(self, word_size: int = 8) -> HdrHistogram:
        return HdrHistogram(self.lowest, self.highest, self.digits, word_size=word_size)


# Microseconds, 1 µs to 1 h, 3 significant digits: every exported, stored or merged latency.
LATENCY_US = HdrParams(1, 3_600_000_000, 3)
# Microseconds, 1 µs to 60 s: the benchmarks' own in-process latency histograms.
BENCHMARK_US = HdrParams(1, 60_000_000, 3)


def record_counts(h: HdrHistogram, counts: Iterable[tuple[int, int]]) -> None:
    """``h.record_value(v, c)`` for each ``(v, c)``, at a third of its cost: the counts index is computed inline
    (HdrHistogram's ``countsArrayIndex``) and the totals are updated once. Every ``v`` must lie in
    ``0 .. h.highest_trackable_value`` (the callers clamp). A negative ``c`` takes counts out, as ``record_value``
    does (min and max are not narrowed back). The exporter's timers move every recorded latency through here once
    a second, and expire every value again when its interval leaves the window."""
    mask, unit, half_mag = h.sub_bucket_mask, h.unit_magnitude, h.sub_bucket_half_count_magnitude
    top, half, arr = unit + half_mag + 1, h.sub_bucket_half_count, h.counts
    total, lo, hi = 0, h.min_value, h.max_value
    for v, c in counts:
        bucket = (v | mask).bit_length() - top
        arr[((bucket + 1) << half_mag) + (v >> (bucket + unit)) - half] += c
        total += c
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    h.total_count += total
    h.min_value, h.max_value = lo, hi
