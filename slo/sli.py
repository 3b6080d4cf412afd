"""SLO maths as pure functions on counts and per-step series (plain Python, no Spark): error budgets, burn rates and exhaustion as in the Google SRE workbook.

Notation: T = target, B = 1 - T (the error budget as a ratio), P = the SLO window.
  error budget (events)   allowed = B * total; consumed = bad; remaining = allowed - bad (negative when blown)
  error budget (minutes)  allowed = B * P; consumed = (bad / allowed) * allowed minutes
  burn rate over W        (bad/total over W) / B; budget remaining = 1 - period burn
  projected exhaustion    remaining * P / burn_24h (0 when already exhausted, None when burn_24h = 0 or, for a
                          calendar period, when it falls after the period's end: the budget resets there)
Alerts: multi-window multi-burn-rate, option 1 of §A3 (the Workbook/Sloth windows and burns kept for 14 days):
an alert is firing at a step when the burn over both its long and its short window exceeds its factor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True)
class AlertRule:
    name: str
    severity: str
    long_s: int
    short_s: int
    burn: float

    def budget_consumed_at_fire(self, window_s: int) -> float:
        return self.burn * self.long_s / window_s


ALERT_RULES = (
    AlertRule("page-fast", "page", 3600, 300, 14.4),
    AlertRule("page-slow", "page", 6 * 3600, 1800, 6.0),
    AlertRule("ticket-fast", "ticket", 86400, 2 * 3600, 3.0),
    AlertRule("ticket-slow", "ticket", 3 * 86400, 6 * 3600, 1.0),
)
BURN_WINDOWS = {"5m": 300, "30m": 1800, "1h": 3600, "2h": 7200, "6h": 21600, "1d": 86400, "3d": 259200}


def sli(good: float, total: float) -> float | None:
    return None if total <= 0 else good / total


def burn_rate(bad: float, total: float, target: float) -> float | None:
    """error ratio / (1 - T); None without events."""
    return None if total <= 0 else (bad / total) / (1.0 - target)


def error_budget(total: float, bad: float, target: float, window_s: float, elapsed_s: float | None = None) -> dict:
    """Occurrences budget over a window, in events and minutes; remaining can go negative. A calendar window seen
    `elapsed_s` into its period: the events budget is the events' so far, and the minutes consumed are those of
    the elapsed part (bad share x elapsed time) out of the whole period's allowed minutes."""
    b = 1.0 - target
    allowed = b * total
    allowed_min = b * window_s / 60.0
    elapsed_min = b * (window_s if elapsed_s is None else elapsed_s) / 60.0
    consumed_ratio = (bad / allowed) if allowed > 0 else (0.0 if bad == 0 else float("inf"))
    return {
        "allowed_events": allowed, "consumed_events": bad, "remaining_events": allowed - bad,
        "allowed_minutes": allowed_min, "consumed_minutes": consumed_ratio * elapsed_min,
        "remaining_minutes": allowed_min - consumed_ratio * elapsed_min,
        "consumed_ratio": consumed_ratio, "remaining_ratio": 1.0 - consumed_ratio,
    }


def exhaustion_hours(remaining_ratio: float, burn_24h: float | None, window_s: float,
                     hours_left: float | None = None) -> float | None:
    """Hours until the budget is gone at the trailing-24h burn: 0 if already gone, None if it never will.
    `hours_left`: a calendar period's remaining hours; a budget that lasts past them is never exhausted in it."""
    if remaining_ratio <= 0:
        return 0.0
    if not burn_24h:
        return None
    hours = remaining_ratio * (window_s / 3600.0) / burn_24h
    return None if hours_left is not None and hours > hours_left else hours


def _prefix(xs: Sequence[float]) -> list[float]:
    out, acc = [0.0], 0.0
    for x in xs:
        acc += x
        out.append(acc)
    return out


def rolling_burn(bad: Sequence[float], total: Sequence[float], steps: int, target: float) -> list[float]:
    """Burn over the trailing `steps` steps ending at each step (inclusive); 0 where there were no events."""
    pb, pt = _prefix(bad), _prefix(total)
    b = 1.0 - target
    out = []
    for i in range(len(bad)):
        lo = max(0, i + 1 - steps)
        t = pt[i + 1] - pt[lo]
        out.append(0.0 if t <= 0 else (pb[i + 1] - pb[lo]) / t / b)
    return out


def alert_firing(bad: Sequence[float], total: Sequence[float], step_s: int, target: float,
                 rule: AlertRule) -> list[bool]:
    long_b = rolling_burn(bad, total, max(1, rule.long_s // step_s), target)
    short_b = rolling_burn(bad, total, max(1, rule.short_s // step_s), target)
    return [lo > rule.burn and sh > rule.burn for lo, sh in zip(long_b, short_b, strict=True)]


def runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Maximal runs of True as [start, end) index pairs."""
    out, start = [], None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(flags)))
    return out


def alert_periods(bad, total, step_s: int, target: float, rules=ALERT_RULES) -> list[dict]:
    """When each rule would have fired: [{rule, severity, burn, start_step, end_step}] in time order."""
    out = []
    for rule in rules:
        for s, e in runs(alert_firing(bad, total, step_s, target, rule)):
            out.append({"rule": rule.name, "severity": rule.severity, "burn": rule.burn, "start_step": s,
                        "end_step": e})
    return sorted(out, key=lambda a: (a["start_step"], a["rule"]))


def bad_periods(bad: Sequence[float], allowed_events: float, top: int = 10) -> list[dict]:
    """Largest contiguous runs of steps with bad events, with their share of the window's budget."""
    out = []
    for s, e in runs([b > 0 for b in bad]):
        n = sum(bad[s:e])
        out.append({"start_step": s, "end_step": e, "bad_events": n,
                    "budget_share": n / allowed_events if allowed_events > 0 else None})
    out.sort(key=lambda r: (-r["bad_events"], r["start_step"]))
    return out[:top]


def timeslices(good: Sequence[float], total: Sequence[float], present: Sequence[bool], slice_target: float,
               target: float, slice_s: int, period_slices: int | None = None) -> dict:
    """Timeslices and RatioTimeslices over slices. A slice is good when its ratio >= slice_target or it had no
    events (traffic-free but observed). Slices without any data (`present` false) are left out of the SLI and
    reported as missing; `sli_missing_as_bad` counts them as bad instead. The budget is (1 - T) x the slices
    observed, or x `period_slices` for a calendar period still under way (its whole time budget)."""
    n_present = sum(1 for p in present if p)
    bad_slices = sum(1 for g, t, p in zip(good, total, present, strict=True) if p and t > 0 and g / t < slice_target)
    missing = len(present) - n_present
    ratios = [g / t for g, t, p in zip(good, total, present, strict=True) if p and t > 0]
    b = 1.0 - target
    allowed_slices = b * (n_present if period_slices is None else period_slices)
    return {
        "slices": len(present), "present": n_present, "missing": missing, "bad": bad_slices,
        "good": n_present - bad_slices,
        "sli": None if n_present == 0 else (n_present - bad_slices) / n_present,
        "sli_missing_as_bad": None if not present else (n_present - bad_slices) / len(present),
        "allowed_minutes": allowed_slices * slice_s / 60.0, "consumed_minutes": bad_slices * slice_s / 60.0,
        "remaining_minutes": (allowed_slices - bad_slices) * slice_s / 60.0,
        "remaining_ratio": None if allowed_slices == 0 else 1.0 - bad_slices / allowed_slices,
        "ratio_timeslices_sli": None if not ratios else sum(ratios) / len(ratios),
    }


def slice_sums(values: Sequence[float], per_slice: int) -> list[float]:
    return [sum(values[i:i + per_slice]) for i in range(0, len(values), per_slice)]
