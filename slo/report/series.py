"""What the Spark passes hand the driver, the per-minute series built from it, and data completeness."""

from __future__ import annotations

import dataclasses
import itertools

from slo import sli
from slo.report.hist import HISTS
from slo.report.window import STEP_S, Steps, iso


def _groups() -> dict[str, list]:
    return {"cluster": [], "topic": [], "leader": [], "partition": []}


@dataclasses.dataclass
class Counts:
    """The passes' output (all of it zero/empty when there is no input). Rows are mappings with g{i}/t{i} per
    event SLO i: step_rows per window step (and rows), pre_rows per history step (and rows, covered_ms), groups
    per scope (cluster, topic, leader, partition) with their key columns."""

    step_rows: list = dataclasses.field(default_factory=list)
    pre_rows: list = dataclasses.field(default_factory=list)
    groups: dict[str, list] = dataclasses.field(default_factory=_groups)
    merged: dict[str, dict] = dataclasses.field(default_factory=lambda: {h: {} for h in HISTS})
    input_rows: int = 0     # window rows
    covered_ms: int = 0     # and the time they cover
    series: int = 0         # distinct (cluster, topic, partition) in the window


class Minutes:
    """One SLO's per-minute counts over [pre, end); the first n_pre steps are the rolling view's history."""

    def __init__(self, good_all: list[float], total_all: list[float], n_pre: int) -> None:
        self.total_all, self.n_pre = total_all, n_pre
        self.bad_all = [tt - gg for gg, tt in zip(good_all, total_all, strict=True)]
        self.good, self.total, self.bad = good_all[n_pre:], total_all[n_pre:], self.bad_all[n_pre:]

    def trailing_burn(self, target: float, seconds: int) -> list[float]:
        """Burn over the trailing `seconds` at each step of the window (the history counts: a window's first
        hours are not judged on a few minutes of data)."""
        return sli.rolling_burn(self.bad_all, self.total_all, max(1, seconds // STEP_S), target)[self.n_pre:]


@dataclasses.dataclass
class Series:
    """Every event SLO's good/total per minute over [pre, end), and which minutes had any row."""

    good: list[list[float]]
    total: list[list[float]]
    seen: list[bool]
    n_pre: int

    @property
    def present(self) -> list[bool]:
        return self.seen[self.n_pre:]

    @property
    def seen_cum(self) -> list[int]:
        """Minutes with data before each step of [pre, end] (the rolling window's coverage)."""
        return list(itertools.accumulate(self.seen, initial=0))

    def minutes(self, i: int) -> Minutes:
        return Minutes(self.good[i], self.total[i], self.n_pre)


def minute_series(rows, n_specs: int, steps: Steps) -> Series:
    """Place step rows (window and history: step < 0) on the minutes of [pre, end)."""
    n = steps.n_pre + steps.n_steps
    good = [[0.0] * n for _ in range(n_specs)]
    total = [[0.0] * n for _ in range(n_specs)]
    seen = [False] * n
    for r in rows:
        k = int(r["step"]) + steps.n_pre
        if 0 <= k < n:
            seen[k] = r["rows"] > 0
            for i in range(n_specs):
                good[i][k] = float(r[f"g{i}"] or 0)
                total[i][k] = float(r[f"t{i}"] or 0)
    return Series(good, total, seen, steps.n_pre)


def completeness(counts: Counts, series: Series, steps: Steps) -> dict:
    """Rows expected (series x window / mean interval) against rows read, for the window and its history."""
    n_pre, n_steps, present = steps.n_pre, steps.n_steps, series.present
    input_rows = counts.input_rows
    pre_count = sum(int(r["rows"] or 0) for r in counts.pre_rows)
    pre_covered = sum(int(r["covered_ms"] or 0) for r in counts.pre_rows)
    interval_ms = counts.covered_ms / input_rows if input_rows else None
    expected_rows = counts.series * steps.elapsed_s * 1000 / interval_ms if interval_ms else 0
    pre_interval = interval_ms or (pre_covered / pre_count if pre_count else None)
    pre_expected = counts.series * n_pre * STEP_S * 1000 / pre_interval if pre_interval else 0
    return {
        "series": counts.series, "rows": input_rows,
        "interval_seconds": interval_ms / 1000 if interval_ms else None,
        "expected_rows": expected_rows, "missing_rows": max(0.0, expected_rows - input_rows),
        "coverage": input_rows / expected_rows if expected_rows else 0.0,
        "steps": n_steps, "steps_missing": n_steps - sum(present),
        "hours_with_data": sum(present) * STEP_S / 3600, "window_hours": steps.elapsed_s / 3600,
        "rule": "expected rows = series seen in the window x window / mean interval length; missing intervals carry "
                "no events (Occurrences) and are excluded from Timeslices (sli_missing_as_bad counts them as bad)",
        "rolling_history": {
            "start": iso(steps.pre_ms), "end": iso(steps.start_ms), "rows": pre_count, "expected_rows": pre_expected,
            "coverage": min(1.0, pre_count / pre_expected) if pre_expected else 0.0,
            "steps": n_pre, "steps_missing": n_pre - sum(series.seen[:n_pre]),
            "rule": "the rolling burn-down reads one window before the start; a trailing window reaching into "
                    "minutes without data counts only the data present (burn_down.rolling_coverage = its share of "
                    "minutes with data)"},
    }
