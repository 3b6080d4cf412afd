"""Each event SLO's tables and report section from its per-minute series and per-scope sums (no Spark here):
occurrences, timeslices, alerts, bad periods, daily, burn-down, scopes, brokers, partitions."""

from __future__ import annotations

from slo import sli
from slo.report.series import Minutes, Series
from slo.report.window import STEP_S, Steps, iso
from slo.specs import SLOSpec

TABLES = ("slo_summary", "daily", "scopes", "brokers", "partitions", "bad_periods", "alerts", "burn_down",
          "latency", "lag_groups")


def occurrences(spec: SLOSpec, good: float, total: float, window_s: int, elapsed_s: int) -> dict:
    """Event counts, SLI, burn and error budget (slo.sli.error_budget) of good/total events."""
    bad = total - good
    out = {"total": total, "good": good, "bad": bad, "sli": sli.sli(good, total),
           "burn_rate": sli.burn_rate(bad, total, spec.objective.target)}
    out.update(sli.error_budget(total, bad, spec.objective.target, window_s, elapsed_s))
    out["met"] = None if total == 0 else out["sli"] >= spec.objective.target
    return out


def scope_rows(spec: SLOSpec, i: int, rows, keys: tuple[str, ...], window_s: int, elapsed_s: int,
               allowed: float) -> list[dict]:
    """One row per group (cluster, topic, ...) of SLO i, with its share of the window's error budget."""
    out = []
    for r in rows:
        good, total = r[f"g{i}"] or 0, r[f"t{i}"] or 0
        occ = occurrences(spec, good, total, window_s, elapsed_s)
        out.append({"slo": spec.name, **{k: r[k] for k in keys}, "total": total, "bad": total - good,
                    "sli": occ["sli"], "burn_rate": occ["burn_rate"], "remaining_ratio": occ["remaining_ratio"],
                    "share_of_window_budget": (total - good) / allowed if allowed > 0 else None})
    return out


def scope_tables(spec: SLOSpec, i: int, groups: dict[str, list], span: tuple[int, int, float],
                 top: int) -> tuple[list[dict], list[dict], list[dict]]:
    """(cluster and topic scopes, leaders with bad events worst first, the `top` worst partitions)."""
    scopes = (scope_rows(spec, i, groups["cluster"], ("cluster",), *span)
              + scope_rows(spec, i, groups["topic"], ("cluster", "topic"), *span))
    brokers = sorted((r for r in scope_rows(spec, i, groups["leader"], ("cluster", "leader"), *span)
                      if r["bad"] > 0), key=lambda r: -r["bad"])
    parts = sorted((r for r in scope_rows(spec, i, groups["partition"], ("cluster", "topic", "partition", "leader"),
                                          *span) if r["bad"] > 0), key=lambda r: -r["bad"])[:top]
    return scopes, brokers, parts


def alert_rows(spec: SLOSpec, m: Minutes, steps: Steps) -> list[dict]:
    """Alert periods, judged with the history too; one firing at the start is cut to it and says so."""
    alerts = []
    for a in sli.alert_periods(m.bad_all, m.total_all, STEP_S, spec.objective.target):
        if a["end_step"] > m.n_pre:
            a.update(since_before_start=a["start_step"] < m.n_pre, start_step=max(a["start_step"] - m.n_pre, 0),
                     end_step=a["end_step"] - m.n_pre)
            alerts.append(a)
    for a in alerts:
        a.update(slo=spec.name, start=iso(steps.at(a["start_step"])), end=iso(steps.at(a["end_step"])))
    return alerts


def bad_period_rows(spec: SLOSpec, m: Minutes, allowed: float, steps: Steps, top: int) -> list[dict]:
    periods = sli.bad_periods(m.bad, allowed, top)
    for p in periods:
        p.update(slo=spec.name, start=iso(steps.at(p["start_step"])), end=iso(steps.at(p["end_step"])),
                 minutes=(p["end_step"] - p["start_step"]))
    return periods


def daily_rows(spec: SLOSpec, m: Minutes, present: list[bool], allowed: float, steps: Steps) -> list[dict]:
    target, step_day, daily = spec.objective.target, steps.step_days, []
    for d in steps.days:
        idx = [k for k in range(steps.n_steps) if step_day[k] == d]
        dg, dt_ = sum(m.good[k] for k in idx), sum(m.total[k] for k in idx)
        daily.append({"slo": spec.name, "date": d, "events": dt_, "bad_events": dt_ - dg, "sli": sli.sli(dg, dt_),
                      "burn_rate": sli.burn_rate(dt_ - dg, dt_, target),
                      "budget_consumed": (dt_ - dg) / allowed if allowed > 0 else None,
                      "steps_missing": sum(1 for k in idx if not present[k])})
    return daily


def burn_down_rows(spec: SLOSpec, m: Minutes, allowed: float, seen_cum: list[int], steps: Steps) -> list[dict]:
    """Hourly: budget left fixed (from the start), to date, rolling (the trailing window of the report's length
    ending there, with the share of its minutes that had data), and the trailing burns."""
    target, n_pre, n_steps = spec.objective.target, steps.n_pre, steps.n_steps
    hourly = 3600 // STEP_S
    rows, cb, ct = [], 0.0, 0.0
    r1h, r6h, r1d, r3d = (m.trailing_burn(target, hours * 3600) for hours in (1, 6, 24, 72))
    r_win = m.trailing_burn(target, n_pre * STEP_S)
    for k in range(n_steps):
        cb += m.bad[k]
        ct += m.total[k]
        if (k + 1) % hourly == 0 or k == n_steps - 1:
            rows.append({"slo": spec.name, "time": iso(steps.at(k + 1)),
                         "remaining_fixed": 1 - cb / allowed if allowed > 0 else 1.0,
                         "remaining_to_date": 1 - cb / ((1 - target) * ct) if ct > 0 else 1.0,
                         "remaining_rolling": 1 - r_win[k],
                         "rolling_coverage": (seen_cum[n_pre + k + 1] - seen_cum[k + 1]) / n_pre,
                         "burn_1h": r1h[k], "burn_6h": r6h[k], "burn_1d": r1d[k], "burn_3d": r3d[k]})
    return rows


def timeslice_stats(spec: SLOSpec, m: Minutes, present: list[bool], steps: Steps,
                    calendar: bool) -> tuple[dict, int]:
    """(slo.sli.timeslices over the SLO's slices, a slice's steps); a calendar period counts its slices not
    reported yet."""
    per_slice = max(1, spec.objective.time_slice_window_s // STEP_S)
    sg, st = sli.slice_sums(m.good, per_slice), sli.slice_sums(m.total, per_slice)
    sp = [any(present[j:j + per_slice]) for j in range(0, steps.n_steps, per_slice)]
    ts = sli.timeslices(sg, st, sp, spec.objective.time_slice_target, spec.objective.target, per_slice * STEP_S,
                        period_slices=steps.window_s // (per_slice * STEP_S) if calendar else None)
    return ts, per_slice


def _burns(m: Minutes, target: float, n_steps: int) -> tuple[float, dict[str, float]]:
    """(the trailing 24 h burn, the burn over each of slo.sli.BURN_WINDOWS) at the window's last step."""
    burn_24h = m.trailing_burn(target, 86400)[-1] if n_steps else 0.0
    return burn_24h, {name: (m.trailing_burn(target, w)[-1] if n_steps else 0.0)
                      for name, w in sli.BURN_WINDOWS.items()}


def slo_section(spec: SLOSpec, i: int, series: Series, groups: dict[str, list], steps: Steps, period: dict,
                top: int) -> tuple[dict[str, list[dict]], dict]:
    """Event SLO i's rows for each table and its section of report.json."""
    m, present, target = series.minutes(i), series.present, spec.objective.target
    occ = occurrences(spec, sum(m.good), sum(m.total), steps.window_s, steps.elapsed_s)
    allowed = occ["allowed_events"]
    burn_24h, burn_windows = _burns(m, target, steps.n_steps)
    hours_left = (period["end_ms"] - period["as_of_ms"]) / 3.6e6 if period["kind"] == "calendar" else None
    exhaustion = sli.exhaustion_hours(occ["remaining_ratio"], burn_24h, steps.window_s, hours_left)
    ts, per_slice = timeslice_stats(spec, m, present, steps, period["kind"] != "rolling")
    alerts = alert_rows(spec, m, steps)
    periods = bad_period_rows(spec, m, allowed, steps, top)
    daily = daily_rows(spec, m, present, allowed, steps)
    burn_down = burn_down_rows(spec, m, allowed, series.seen_cum, steps)
    scopes, brokers, parts = scope_tables(spec, i, groups, (steps.window_s, steps.elapsed_s, allowed), top)
    summary = {"slo": spec.name, "display_name": spec.display_name, "kind": spec.kind, "target": target,
               "budgeting_method": spec.budgeting_method, **{f"occ_{k}": v for k, v in occ.items()},
               "burn_24h": burn_24h, "exhaustion_hours": exhaustion,
               **{f"ts_{k}": v for k, v in ts.items()}}
    rows = {"slo_summary": [summary], "daily": daily,
            "scopes": [dict(r, scope="cluster" if "topic" not in r else "topic") for r in scopes],
            "brokers": brokers, "partitions": parts, "bad_periods": periods, "alerts": alerts, "burn_down": burn_down}
    primary = {"Occurrences": occ["sli"], "Timeslices": ts["sli"],
               "RatioTimeslices": ts["ratio_timeslices_sli"]}[spec.budgeting_method]
    section = {
        "name": spec.name, "display_name": spec.display_name, "kind": spec.kind, "target": target,
        "budgeting_method": spec.budgeting_method, "sli": primary,
        "met": None if primary is None else primary >= target,
        "threshold_us": spec.threshold_us, "occurrences": occ,
        "timeslices": dict(ts, slice_seconds=per_slice * STEP_S, slice_target=spec.objective.time_slice_target),
        "burn": {"period": occ["burn_rate"], "trailing_24h": burn_24h, "windows": burn_windows},
        "exhaustion_hours_at_24h_burn": exhaustion,
        "alert_rules": alert_rules(steps.window_s),
        "alerts": alerts, "daily": daily, "bad_periods": periods, "brokers": brokers[:top], "partitions": parts,
        "scopes": scopes,
    }
    return rows, section


def alert_rules(window_s: int) -> list[dict]:
    """The multi-window burn-rate rules the alerts are judged by, with the budget spent when each fires."""
    return [{"rule": r.name, "severity": r.severity, "long": r.long_s, "short": r.short_s,
             "burn": r.burn, "budget_consumed_at_fire": r.budget_consumed_at_fire(window_s)}
            for r in sli.ALERT_RULES]


def event_tables(specs: list[SLOSpec], series: Series, groups: dict[str, list], steps: Steps, period: dict,
                 top: int) -> tuple[dict[str, list[dict]], list[dict]]:
    """(every table's rows over all event SLOs, their report.json sections)."""
    tables: dict[str, list[dict]] = {k: [] for k in TABLES}
    sections = []
    for i, spec in enumerate(specs):
        rows, section = slo_section(spec, i, series, groups, steps, period, top)
        for name, part in rows.items():
            tables[name] += part
        sections.append(section)
    return tables, sections
