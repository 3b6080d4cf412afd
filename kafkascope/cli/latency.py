"""Latency recording in microseconds on an HDR histogram (3 significant digits), shared by the perf tools."""

from __future__ import annotations

from common.hdr import LATENCY_US

MAX_US = LATENCY_US.highest  # an hour: anything slower is clamped, not dropped


class Latencies:
    def __init__(self) -> None:
        self.histogram = LATENCY_US.new()
        self.count = 0
        self.total_us = 0  # exact, for the average; the histogram rounds

    def record(self, seconds: float) -> None:
        us = min(max(1, round(seconds * 1_000_000)), MAX_US)
        self.histogram.record_value(us)
        self.count += 1
        self.total_us += us

    def mean_ms(self) -> float:
        return self.total_us / self.count / 1000 if self.count else 0.0

    def max_ms(self) -> float:
        return self.histogram.get_max_value() / 1000 if self.count else 0.0

    def percentile_ms(self, p: float) -> float:
        return self.histogram.get_value_at_percentile(p) / 1000 if self.count else 0.0
