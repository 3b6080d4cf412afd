"""Kafka client-metrics window maths (org.apache.kafka.common.metrics.stats), which every Xinfra gauge uses.

A stat keeps `samples` (60) samples of `window_ms` (1000): a record goes into the current sample, a new sample
starts when the current one is `window_ms` old, and samples older than samples × window_ms are reset on read.
Rate = sum of live samples / elapsed seconds, elapsed padded up to samples − 1 full windows. Percentiles use
CONSTANT buckets on [0, max]: max/granularity + 2 buckets of width max/count, reporting a bucket's lower edge.
Pure: the caller passes `now_ms`.
"""

from __future__ import annotations

import math
from typing import Any


class _Sampled:
    def __init__(self, samples: int = 60, window_ms: int = 1000) -> None:
        self.samples_n = samples
        self.window_ms = window_ms
        self._samples: list[list[Any]] = []        # [last_window_ms, state]
        self._current = 0

    def _new(self) -> Any:
        raise NotImplementedError

    def _current_sample(self, now_ms: int) -> list[Any]:
        if not self._samples:
            self._samples.append([now_ms, self._new()])
            self._current = 0
        s = self._samples[self._current]
        if now_ms - s[0] >= self.window_ms:
            self._current = (self._current + 1) % self.samples_n
            if self._current >= len(self._samples):
                self._samples.append([now_ms, self._new()])
            else:
                self._samples[self._current] = [now_ms, self._new()]
            s = self._samples[self._current]
        return s

    def _purge(self, now_ms: int) -> None:
        expire = self.samples_n * self.window_ms
        for s in self._samples:
            if now_ms - s[0] >= expire:
                s[0], s[1] = now_ms, self._new()

    def _live(self, now_ms: int) -> list[Any]:
        self._purge(now_ms)
        return [s[1] for s in self._samples]

    def _oldest_ms(self, now_ms: int) -> int:
        return min((s[0] for s in self._samples), default=now_ms)


class Rate(_Sampled):
    """Events (or a value sum) per second over the window; 0 when nothing happened."""

    def _new(self) -> float:
        return 0.0

    def record(self, now_ms: int, value: float = 1.0) -> None:
        self._current_sample(now_ms)[1] += value

    def total(self, now_ms: int) -> float:
        return sum(self._live(now_ms))

    def measure(self, now_ms: int) -> float:
        total = self.total(now_ms)
        elapsed = now_ms - self._oldest_ms(now_ms)
        full = elapsed // self.window_ms
        if full < self.samples_n - 1:
            elapsed += (self.samples_n - 1 - full) * self.window_ms
        return total / (elapsed / 1000.0) if elapsed > 0 else 0.0


class Percentiles(_Sampled):
    """Kafka `Percentiles` with BucketSizing.CONSTANT on [0, max_ms]; samples kept sparse (bucket -> count)."""

    def __init__(self, max_ms: float = 5000.0, granularity_ms: float = 1.0, samples: int = 60,
                 window_ms: int = 1000) -> None:
        super().__init__(samples, window_ms)
        self.buckets = int(max_ms / granularity_ms) + 2
        self.max_ms = max_ms
        self.width = max_ms / self.buckets

    def _new(self) -> dict[int, int]:
        return {}

    def bucket(self, value: float) -> int:
        if value <= 0:
            return 0
        if value >= self.max_ms:
            return self.buckets - 1
        return min(int(value / self.width), self.buckets - 1)

    def record(self, now_ms: int, value_ms: float) -> None:
        s = self._current_sample(now_ms)[1]
        b = self.bucket(value_ms)
        s[b] = s.get(b, 0) + 1

    def _buckets(self, sample: Any) -> dict[int, int]:
        return sample

    def measure(self, now_ms: int, percentile: float) -> float:
        merged: dict[int, int] = {}
        for s in self._live(now_ms):
            for b, c in self._buckets(s).items():
                merged[b] = merged.get(b, 0) + c
        total = sum(merged.values())
        if not total:
            return math.nan
        q = percentile / 100.0
        acc = 0
        for b in sorted(merged):
            acc += merged[b]
            if acc / total > q:
                return b * self.width
        return (self.buckets - 1) * self.width


class Latency(Percentiles):
    """Xinfra's Avg + Max + Percentiles of one latency in one stat: the three share their samples' boundaries (they
    are recorded together), so one sample rotation per record serves all three; each reads as its own stat."""

    def _new(self) -> list[Any]:
        return [0.0, 0, -math.inf, {}]          # sum, count, max, percentile buckets

    def _buckets(self, sample: Any) -> dict[int, int]:
        return sample[3]

    def record(self, now_ms: int, value_ms: float) -> None:
        s = self._current_sample(now_ms)[1]
        s[0] += value_ms
        s[1] += 1
        if value_ms > s[2]:
            s[2] = value_ms
        b = self.bucket(value_ms)
        h = s[3]
        h[b] = h.get(b, 0) + 1

    def avg(self, now_ms: int) -> float:
        live = self._live(now_ms)
        n = sum(s[1] for s in live)
        return sum(s[0] for s in live) / n if n else math.nan

    def max(self, now_ms: int) -> float:
        m = max((s[2] for s in self._live(now_ms)), default=-math.inf)
        return m if m != -math.inf else math.nan
