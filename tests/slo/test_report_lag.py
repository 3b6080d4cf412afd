"""slo.report.lag: the consumer-lag SLO maths over the lag-history job's per-group sums (no Spark)."""

from pathlib import Path

import pytest

from slo.report.lag import lag_report, lag_slo
from slo.report.window import Steps
from slo.specs import load_specs

LAG = next(s for s in load_specs() if s.kind == "lag")   # target 0.99


def test_groups_meet_the_target_on_their_share_of_ok_instants():
    rows = [{"group": "a", "instants": 1000, "ok": 995.0, "warn": 5.0, "err": 0.0, "max_lag": 7},
            {"group": "b", "instants": 1000, "ok": 980.0, "warn": 0.0, "err": 20.0, "max_lag": 900},
            {"group": "c", "instants": None, "ok": None, "warn": None, "err": None, "max_lag": None}]
    r = lag_slo(LAG, rows)
    a, b, c = r["groups"]
    assert (a["share_ok"], a["share_warn"], a["met"]) == (0.995, 0.005, True)
    assert a["budget_remaining"] == pytest.approx(0.5)
    assert (b["share_err"], b["met"]) == (0.02, False) and b["budget_remaining"] == pytest.approx(-1.0)
    assert (c["instants"], c["share_ok"], c["met"], c["budget_remaining"]) == (0, None, None, None)
    assert (r["slo"], r["target"], r["groups_met"], r["groups_total"]) == (LAG.name, 0.99, 1, 3)


def test_no_lag_section_without_a_spec_or_a_history(tmp_path: Path):
    steps = Steps(0, 60_000, 60, 60)
    assert lag_report(None, tmp_path, [], tmp_path, steps) is None        # no lag spec: Spark is not asked
    assert lag_report(None, None, [LAG], tmp_path, steps) is None
    assert lag_report(None, tmp_path / "empty", [LAG], tmp_path, steps) is None   # a monitor without history yet
