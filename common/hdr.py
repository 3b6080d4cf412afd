"""HDR histogram parameter sets, named once so that histograms which are merged or read elsewhere agree.

A histogram can only be added to, or decoded into, one with the same range and precision, so every latency
histogram that leaves its process (the exporter's timers and .hlog files, xmonitor's SLI files read by slo/ and
benchmarks/_common, the CLI perf tools' reports) uses `LATENCY_US`. The benchmarks' in-process histograms keep
their own, narrower range (`BENCHMARK_US`): they are never merged with the others.
"""

from __future__ import annotations

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
