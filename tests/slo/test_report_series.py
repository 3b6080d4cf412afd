"""slo.report.series: per-minute series from the passes' step rows, and data completeness."""

import pytest

from slo.report.series import Counts, Minutes, completeness, minute_series
from slo.report.window import Steps

STEPS = Steps(start_ms=600_000, end_ms=780_000, window_s=180, elapsed_s=180)  # 3 steps, 3 of history


def _row(step, rows=1, g=(0,), t=(0,), covered_ms=60_000):
    r = {"step": step, "rows": rows, "covered_ms": covered_ms}
    for i, (gi, ti) in enumerate(zip(g, t, strict=True)):
        r[f"g{i}"], r[f"t{i}"] = gi, ti
    return r


def test_rows_land_on_their_minutes_history_first():
    rows = [_row(0, g=(9, 1), t=(10, 1)), _row(2, rows=0, g=(None, 2), t=(None, 2)), _row(-3, g=(4, 4), t=(5, 4)),
            _row(3, g=(1, 1), t=(1, 1)), _row(-4, g=(1, 1), t=(1, 1))]   # the last two: outside [pre, end)
    s = minute_series(rows, 2, STEPS)
    assert s.good == [[4.0, 0, 0, 9.0, 0, 0.0], [4.0, 0, 0, 1.0, 0, 2.0]]
    assert s.total == [[5.0, 0, 0, 10.0, 0, 0.0], [4.0, 0, 0, 1.0, 0, 2.0]]
    assert s.seen == [True, False, False, True, False, False]   # a row count of 0 is no data
    assert s.present == [True, False, False]
    assert s.seen_cum == [0, 1, 1, 1, 2, 2, 2]
    m = s.minutes(0)
    assert (m.good, m.total, m.bad) == ([9.0, 0, 0.0], [10.0, 0, 0.0], [1.0, 0, 0.0])
    assert m.bad_all == [1.0, 0, 0, 1.0, 0, 0.0]


def test_trailing_burn_counts_the_history():
    m = Minutes([0.0, 10.0, 10.0, 10.0], [10.0, 10.0, 10.0, 10.0], n_pre=2)
    # target 0.9: all 10 bad at history step 0, none after; a 3-minute window still sees it at window step 0
    assert m.trailing_burn(0.9, 180) == pytest.approx([10 / 30 / 0.1, 0.0])
    assert m.trailing_burn(0.9, 60) == pytest.approx([0.0, 0.0])


def test_completeness_against_the_mean_interval():
    counts = Counts(input_rows=4, covered_ms=4 * 60_000, series=2,
                    pre_rows=[_row(-3, rows=2, covered_ms=120_000), _row(-1, rows=1, covered_ms=60_000)])
    s = minute_series([_row(0), _row(1), *counts.pre_rows], 1, STEPS)
    c = completeness(counts, s, STEPS)
    assert (c["series"], c["rows"], c["interval_seconds"], c["expected_rows"]) == (2, 4, 60.0, 6.0)
    assert (c["missing_rows"], c["coverage"]) == (2.0, pytest.approx(4 / 6))
    assert (c["steps"], c["steps_missing"], c["hours_with_data"], c["window_hours"]) == (3, 1, 2 / 60, 3 / 60)
    h = c["rolling_history"]
    assert (h["rows"], h["expected_rows"], h["coverage"], h["steps_missing"]) == (3, 6.0, 0.5, 1)
    assert (h["start"], h["end"]) == ("1970-01-01T00:07:00Z", "1970-01-01T00:10:00Z")


def test_completeness_without_data():
    c = completeness(Counts(), minute_series([], 1, STEPS), STEPS)
    assert (c["rows"], c["interval_seconds"], c["expected_rows"], c["coverage"]) == (0, None, 0, 0.0)
    assert c["steps_missing"] == 3 and c["rolling_history"]["coverage"] == 0.0
