"""slo.report.window: the reported period's steps and the rolling view's history before it."""

import datetime as dt

from slo.report.window import STEP_S, Steps, day, iso, report_window
from slo.specs import load_specs

END = int(dt.datetime(2026, 1, 3, 0, 30, tzinfo=dt.UTC).timestamp() * 1000)


def test_rolling_window_override_and_default():
    w = report_window(load_specs(), END, 3600)
    assert (w["kind"], w["start_ms"], w["end_ms"], w["seconds"], w["elapsed_seconds"]) == (
        "rolling", END - 3_600_000, END, 3600, 3600)
    assert report_window(load_specs(), END)["seconds"] == 14 * 86400
    assert report_window([], END)["seconds"] == 14 * 86400


def test_steps_of_a_window_and_its_history():
    s = Steps.of(report_window(load_specs(), END, 3600), END)
    assert (s.n_steps, s.n_pre) == (60, 60)
    assert s.pre_ms == END - 2 * 3_600_000
    assert s.at(0) == s.start_ms and s.at(s.n_steps) == END
    assert iso(s.at(1)) == "2026-01-02T23:31:00Z"
    # the window crosses midnight: 30 minutes on each day
    assert s.days == ["2026-01-02", "2026-01-03"]
    assert (s.step_days.count("2026-01-02"), s.step_days.count("2026-01-03")) == (30, 30)


def test_partial_steps_round_up():
    s = Steps(start_ms=0, end_ms=90_000, window_s=150, elapsed_s=90)
    assert (s.n_steps, s.n_pre) == (2, 3)
    assert s.pre_ms == -3 * STEP_S * 1000
    assert day(0) == "1970-01-01"
