"""The reported period, its one-minute steps, and the report's time formats."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools

from slo.specs import SLOSpec

STEP_S = 60


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d")


def report_window(specs: list[SLOSpec], end_ms: int, window_s: int | None = None) -> dict:
    """The reported period: rolling [end - window, end), or, for a calendar-aligned spec (and no window_s
    override), the calendar period holding the last reported instant end_ms - 1, reported up to end_ms."""
    cal = specs[0].calendar if specs and window_s is None else None
    if cal is None:
        window_s = int(window_s or (specs[0].window_s if specs else 14 * 86400))
        return {"kind": "rolling", "start_ms": end_ms - window_s * 1000, "end_ms": end_ms, "as_of_ms": end_ms,
                "seconds": window_s, "elapsed_seconds": window_s}
    lo, hi = cal.period(end_ms - 1)
    return {"kind": "calendar", "start_ms": lo, "end_ms": hi, "as_of_ms": end_ms, "seconds": (hi - lo) // 1000,
            "elapsed_seconds": (end_ms - lo) // 1000,
            "calendar": {"startTime": cal.start.strftime("%Y-%m-%d %H:%M:%S"), "timeZone": cal.time_zone,
                         "duration": f"{cal.count}{cal.unit}"}}


@dataclasses.dataclass(frozen=True)
class Steps:
    """The window's elapsed minutes [start, end) and, before them, n_pre minutes of history (one window: the
    rolling burn-down's trailing window at the first step reaches that far back)."""

    start_ms: int
    end_ms: int       # the report's as-of instant (a calendar period's end may lie after it)
    window_s: int     # the whole period
    elapsed_s: int    # the part of it reported

    @classmethod
    def of(cls, period: dict, end_ms: int) -> Steps:
        return cls(period["start_ms"], end_ms, period["seconds"], period["elapsed_seconds"])

    @property
    def n_steps(self) -> int:
        return -(-self.elapsed_s // STEP_S)

    @property
    def n_pre(self) -> int:
        return -(-self.window_s // STEP_S)

    @property
    def pre_ms(self) -> int:
        return self.start_ms - self.n_pre * STEP_S * 1000

    def at(self, k: int) -> int:
        """The start of window step k (k = n_steps: the end of the last one)."""
        return self.start_ms + k * STEP_S * 1000

    @functools.cached_property
    def step_days(self) -> list[str]:
        return [day(self.at(k)) for k in range(self.n_steps)]

    @property
    def days(self) -> list[str]:
        return sorted(set(self.step_days))
