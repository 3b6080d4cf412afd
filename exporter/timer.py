"""HdrHistogram-backed Timer/Histogram: cumulative count and sum, quantiles over a sliding window of intervals.

Values are milliseconds recorded with microsecond resolution into an HdrHistogram of 1 µs .. 1 h at 3 significant
digits (quantization error ≤ 0.1%). The window (default 60 s) is `intervals` (default 6) interval histograms of
equal length: the last `intervals` completed intervals plus the one in progress (so a read at an interval boundary
covers exactly the last 60 s, and a read between boundaries up to 70 s). Quantiles are exact to the HDR precision
over the window, and read 0 with a window count of 0 when nothing was recorded in it (never a stale value, unlike
Kafka's exponentially decaying reservoir).

Cost model (Python): ``update`` is a dict increment plus two adds, no clock read, no HDR call. Values are moved into
the HDR window histogram in bulk by :meth:`drain` (once per distinct microsecond value), which the registry calls on
every tick and before any read. Each interval is also kept as a sparse ``{µs: count}`` map so that the oldest interval
can be subtracted from the window histogram when it expires, and so it can be written to an HDR interval log.
Memory: one HDR counts array per timer that saw traffic in the window (23,552 × 4 bytes ≈ 92 KiB), released when the
window empties.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from itertools import accumulate
from typing import TYPE_CHECKING

from hdrh.histogram import HdrHistogram

from common.hdr import LATENCY_US, record_counts

if TYPE_CHECKING:
    from exporter.registry import Meter

HIGHEST_US = LATENCY_US.highest  # a module global: to_us clamps with it per recorded value
QUANTILES = (0.50, 0.75, 0.95, 0.98, 0.99, 0.999)
# Prometheus classic-histogram bounds in seconds, dense around plausible latency SLO thresholds.
DEFAULT_BUCKETS_S = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
                     0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def new_hdr(word_size: int = 8) -> HdrHistogram:
    return LATENCY_US.new(word_size)


def to_us(ms: float) -> int:
    v = int(ms * 1000.0 + 0.5)
    return 0 if v < 0 else (HIGHEST_US if v > HIGHEST_US else v)


class Timer:
    kind = "timer"

    def __init__(self, intervals: int = 6, buckets_s: tuple[float, ...] = DEFAULT_BUCKETS_S) -> None:
        self.count = 0          # cumulative, since creation
        self.sum_ms = 0.0       # cumulative
        # Cumulative Min/Max/StdDev (Yammer's Histogram attributes), from the µs values as they are drained.
        self._min_us: int | None = None
        self._max_us = 0
        self._drained = 0
        self._sum_us = 0
        self._sumsq_us = 0
        self.meter: Meter | None = None  # a Yammer Timer's rates (Registry.timer sets it); None for a Histogram
        self._pending: dict[int, int] = {}
        self._current: dict[int, int] = {}
        self.interval_index = 0   # which of its registry's intervals the current one is (rotate_to)
        self._intervals = intervals
        self._ring: deque[dict[int, int]] = deque(maxlen=intervals)  # completed intervals, newest last
        self._window: HdrHistogram | None = None
        self._window_count = 0
        self._cache: tuple[float, ...] | None = None
        self.last_completed: dict[int, int] = {}
        self.buckets_s = buckets_s
        self._bounds_us = [int(round(b * 1e6)) for b in buckets_s]
        self._bucket_counts = [0] * (len(buckets_s) + 1)  # last one is +Inf

    # ------------------------------------------------------------ recording (hot path)

    def update(self, ms: float) -> None:
        v = int(ms * 1000.0 + 0.5)
        p = self._pending
        p[v] = p.get(v, 0) + 1
        self.count += 1
        self.sum_ms += ms

    # ------------------------------------------------------------ window maintenance

    def drain(self) -> bool:
        """Move the values recorded since the last drain into the window; False if there were none."""
        if not self._pending:
            return False
        pending, self._pending = self._pending, {}
        lo, hi = min(pending), max(pending)
        if lo < 0 or hi > HIGHEST_US:   # clamped into the histogram's range (a clock step, an hour-long wait)
            clamped: dict[int, int] = {}
            for v, c in pending.items():
                v = 0 if v < 0 else (HIGHEST_US if v > HIGHEST_US else v)
                clamped[v] = clamped.get(v, 0) + c
            pending, lo, hi = clamped, min(clamped), max(clamped)
        w = self._window
        if w is None:
            w = self._window = new_hdr(word_size=4)
        record_counts(w, pending.items())
        cur = self._current
        if cur:
            for v, c in pending.items():
                cur[v] = cur.get(v, 0) + c
        else:
            cur.update(pending)
        bounds, buckets = self._bounds_us, self._bucket_counts
        s = sq = 0
        for v, c in pending.items():
            buckets[bisect_left(bounds, v)] += c
            vc = v * c
            s += vc
            sq += v * vc
        n = sum(pending.values())
        self._min_us = lo if self._min_us is None else min(self._min_us, lo)
        self._max_us = max(self._max_us, hi)
        self._drained += n
        self._sum_us += s
        self._sumsq_us += sq
        self._window_count += n
        self._cache = None
        return True

    def rotate_to(self, index: int) -> bool:
        """End intervals until the current one is the registry's `index`-th; False if it already is. Idempotent, so
        a read's tick and the tick loop's steps (Registry.tick_steps) may interleave."""
        n = index - self.interval_index
        if n <= 0:
            return False
        self.interval_index = index
        self.rotate(n)
        return True

    def rotate(self, n: int = 1) -> None:
        """End the current interval (and `n - 1` empty ones after it)."""
        self.drain()
        self.last_completed = self._current
        for i in range(n):
            if len(self._ring) == self._ring.maxlen:
                self._expire(self._ring[0])
            self._ring.append(self._current if i == 0 else {})
            self._current = {}
            if i >= self._intervals and not self._window_count:
                break

    def _expire(self, interval: dict[int, int]) -> None:
        if not interval:
            return
        w = self._window
        assert w is not None  # a non-empty interval was drained into the window
        record_counts(w, [(v, -c) for v, c in interval.items()])
        self._window_count -= sum(interval.values())
        self._cache = None
        if self._window_count == 0:
            self._window = None  # release ~92 KiB; the next drain allocates afresh

    # ------------------------------------------------------------ reading

    @property
    def window_count(self) -> int:
        return self._window_count

    def quantiles(self, qs: tuple[float, ...] = QUANTILES) -> tuple[float, ...]:
        """Quantiles (ms) over the window, HDR semantics (highest equivalent value); zeros when empty."""
        if qs is QUANTILES and self._cache is not None:
            return self._cache
        if not self._window_count:
            out = tuple(0.0 for _ in qs)
        else:
            out = tuple(v / 1000.0 for v in hdr_quantiles(self._window, self._window_count, qs))
        if qs is QUANTILES:
            self._cache = out
        return out

    def moments(self) -> tuple[float, float, float, float]:
        """Yammer's cumulative ``Min``, ``Max``, ``Mean``, ``StdDev`` (ms; sample deviation; zeros when empty)."""
        self.drain()
        n = self._drained
        if not n:
            return 0.0, 0.0, 0.0, 0.0
        var = (self._sumsq_us - self._sum_us * self._sum_us / n) / (n - 1) if n > 1 else 0.0
        mean = self.sum_ms / self.count if self.count else 0.0
        return max(self._min_us or 0, 0) / 1000.0, self._max_us / 1000.0, mean, max(var, 0.0) ** 0.5 / 1000.0

    def snapshot(self) -> HdrHistogram:
        """A fresh HDR (µs) holding the window's values."""
        h = new_hdr()
        for interval in (*self._ring, self._current):
            record_counts(h, interval.items())
        return h

    def buckets(self) -> list[tuple[float, int]]:
        """Cumulative (le seconds, count) pairs including +Inf, since creation (monotonic)."""
        out = []
        for le, c in zip((*self.buckets_s, float("inf")), accumulate(self._bucket_counts), strict=True):
            out.append((le, c))
        return out


def hdr_quantiles(h: HdrHistogram, total: int, qs: tuple[float, ...]) -> list[int]:
    """Values at quantiles `qs` as ``HdrHistogram.get_value_at_percentile`` would, in one C-speed pass.

    The window histogram's own ``total_count``/``max_value`` are not maintained under subtraction, so the caller
    passes the live total.
    """
    counts = h.counts
    cum = list(accumulate(counts[: h.counts_len]))
    out = []
    for q in qs:
        target = max(int(q * 100.0 * total / 100 + 0.5), 1)
        idx = bisect_left(cum, target)
        if idx >= h.counts_len:
            idx = h.counts_len - 1
        out.append(h.get_highest_equivalent_value(h.get_value_from_index(idx)))
    return out
