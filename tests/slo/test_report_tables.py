"""slo.report.tables: each SLO's tables and report section from per-minute series (no Spark)."""

import dataclasses
import datetime as dt

import pytest

from slo.report.series import Series
from slo.report.tables import (
    TABLES,
    alert_rows,
    bad_period_rows,
    burn_down_rows,
    daily_rows,
    event_tables,
    occurrences,
    scope_tables,
)
from slo.report.window import Steps, iso, report_window
from slo.specs import load_specs

WRITE = next(s for s in load_specs() if s.name == "write-availability")   # Occurrences, target 0.99
START = int(dt.datetime(2026, 1, 1, 22, tzinfo=dt.UTC).timestamp() * 1000)
STEPS = Steps(start_ms=START, end_ms=START + 4 * 3_600_000, window_s=4 * 3600, elapsed_s=4 * 3600)
N = STEPS.n_pre + STEPS.n_steps   # 240 minutes of history, then 240 of window (22:00 to 02:00)


def _series(bad_at: dict[int, float], total: float = 100.0, missing=()) -> Series:
    """One SLO; `bad_at` maps a minute of [pre, end) to its bad events; `missing` minutes have no row."""
    good = [total - bad_at.get(k, 0.0) if k not in missing else 0.0 for k in range(N)]
    totals = [total if k not in missing else 0.0 for k in range(N)]
    return Series([good], [totals], [k not in missing for k in range(N)], STEPS.n_pre)


def test_occurrences_budget():
    occ = occurrences(WRITE, 990.0, 1000.0, 86400, 86400)
    assert (occ["bad"], occ["sli"], occ["met"]) == (10.0, 0.99, True)
    assert occ["burn_rate"] == pytest.approx(1.0) and occ["allowed_events"] == pytest.approx(10.0)
    assert occurrences(WRITE, 0.0, 0.0, 86400, 86400)["met"] is None


def test_scopes_brokers_worst_first_partitions_cut_to_top():
    row = lambda g, t, **k: {"g0": g, "t0": t, **k}  # noqa: E731
    groups = {"cluster": [row(95, 100, cluster="c0")],
              "topic": [row(95, 100, cluster="c0", topic="t")],
              "leader": [row(50, 50, cluster="c0", leader=1), row(47, 50, cluster="c0", leader=2),
                         row(None, None, cluster="c0", leader=3)],
              "partition": [row(20, 21, cluster="c0", topic="t", partition=p, leader=2) for p in range(3)]
              + [row(10, 14, cluster="c0", topic="t", partition=3, leader=2)]}
    scopes, brokers, parts = scope_tables(WRITE, 0, groups, (86400, 86400, 1.0), top=2)
    assert [(s.get("topic"), s["bad"]) for s in scopes] == [(None, 5), ("t", 5)]
    assert [(b["leader"], b["bad"]) for b in brokers] == [(2, 3)]
    assert brokers[0]["share_of_window_budget"] == 3.0
    assert [(p["partition"], p["bad"]) for p in parts] == [(3, 4), (0, 1)]


def test_an_alert_firing_before_the_start_is_cut_to_it():
    s = _series({k: 100.0 for k in range(200, 260)})   # all bad from 40 minutes before the start to 20 after
    alerts = alert_rows(WRITE, s.minutes(0), STEPS)
    first = alerts[0]
    assert first["since_before_start"] and first["start_step"] == 0 and first["start"] == iso(START)
    assert all(a["end_step"] > 0 and a["slo"] == WRITE.name for a in alerts)
    assert first["end"] == iso(STEPS.at(first["end_step"]))


def test_bad_periods_with_times_and_minutes():
    s = _series({STEPS.n_pre + 10: 5.0, STEPS.n_pre + 11: 5.0, STEPS.n_pre + 100: 1.0})
    periods = bad_period_rows(WRITE, s.minutes(0), 240.0, STEPS, top=10)
    assert [(p["start"], p["end"], p["minutes"], p["bad_events"]) for p in periods] == [
        (iso(START + 600_000), iso(START + 720_000), 2, 10.0), (iso(START + 6_000_000), iso(START + 6_060_000), 1, 1.0)]


def test_daily_rows_split_at_midnight_and_count_missing_minutes():
    s = _series({STEPS.n_pre + 130: 24.0}, missing={STEPS.n_pre + 5})
    daily = daily_rows(WRITE, s.minutes(0), s.present, 240.0, STEPS)
    assert [(d["date"], d["events"], d["bad_events"], d["steps_missing"]) for d in daily] == [
        ("2026-01-01", 119 * 100.0, 0.0, 1), ("2026-01-02", 120 * 100.0, 24.0, 0)]
    assert daily[1]["budget_consumed"] == pytest.approx(0.1)


def test_burn_down_hourly_fixed_to_date_and_rolling():
    s = _series({STEPS.n_pre - 30: 60.0, STEPS.n_pre + 30: 60.0})   # 60 bad 30 minutes before and after the start
    rows = burn_down_rows(WRITE, s.minutes(0), 240.0, s.seen_cum, STEPS)
    assert [r["time"] for r in rows] == [iso(START + h * 3_600_000) for h in range(1, 5)]
    assert [r["remaining_fixed"] for r in rows] == pytest.approx([0.75] * 4)
    assert rows[0]["remaining_to_date"] == pytest.approx(1 - 60 / (0.01 * 6000))
    # the rolling window (4 h) still holds the history's 60 until 3.5 h in
    assert [r["remaining_rolling"] for r in rows] == pytest.approx([0.5, 0.5, 0.5, 0.75])
    assert all(r["rolling_coverage"] == 1.0 for r in rows)


def test_event_tables_rows_and_sections():
    other = dataclasses.replace(WRITE, name="other")
    series = Series([_series({}).good[0], _series({STEPS.n_pre: 100.0}).good[0]],
                    [_series({}).total[0]] * 2, [True] * N, STEPS.n_pre)
    groups = {"cluster": [], "topic": [], "leader": [], "partition": []}
    period = report_window([WRITE], STEPS.end_ms, STEPS.window_s)
    tables, sections = event_tables([WRITE, other], series, groups, STEPS, period, top=10)
    assert list(tables) == list(TABLES) and tables["latency"] == [] and tables["lag_groups"] == []
    assert [r["slo"] for r in tables["slo_summary"]] == [WRITE.name, "other"]
    assert [(s["name"], s["met"]) for s in sections] == [(WRITE.name, True), ("other", True)]
    assert sections[1]["occurrences"]["bad"] == 100.0 and len(sections[1]["bad_periods"]) == 1
    assert sections[0]["timeslices"]["slice_seconds"] == 60 and len(sections[0]["alert_rules"]) == 4
    assert len(tables["burn_down"]) == 8 and len(tables["daily"]) == 4
