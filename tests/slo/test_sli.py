import random

import numpy as np
import pytest

from slo import hdr, sli
from xmonitor.sli_schema import encode_hdr, new_histogram


def test_budget_and_burn_closed_form():
    b = sli.error_budget(total=100_000, bad=500, target=0.99, window_s=14 * 86400)
    assert b["allowed_events"] == pytest.approx(1000)
    assert b["remaining_events"] == pytest.approx(500)
    assert b["allowed_minutes"] == pytest.approx(201.6)
    assert b["consumed_minutes"] == pytest.approx(100.8)
    assert sli.burn_rate(500, 100_000, 0.99) == pytest.approx(0.5)
    neg = sli.error_budget(total=1000, bad=30, target=0.99, window_s=14 * 86400)
    assert neg["remaining_ratio"] == pytest.approx(-2.0) and neg["remaining_events"] == pytest.approx(-20)
    # a week's calendar period 1 day in: 500 bad of 100,000 = 0.5% of 1 day's minutes, out of 1% of the week's
    part = sli.error_budget(total=100_000, bad=500, target=0.99, window_s=7 * 86400, elapsed_s=86400)
    assert part["allowed_minutes"] == pytest.approx(100.8) and part["consumed_minutes"] == pytest.approx(7.2)
    assert part["remaining_minutes"] == pytest.approx(93.6) and part["remaining_ratio"] == pytest.approx(0.5)
    assert sli.exhaustion_hours(-2.0, 5, 14 * 86400) == 0.0
    assert sli.exhaustion_hours(0.5, 2.0, 14 * 86400) == pytest.approx(0.5 * 336 / 2)
    assert sli.exhaustion_hours(0.5, 0.0, 14 * 86400) is None
    # a calendar week with 2 days left: 84 h at this burn lasts past the reset, 84 h < 100 h left does not
    assert sli.exhaustion_hours(0.5, 1.0, 7 * 86400, hours_left=48.0) is None
    assert sli.exhaustion_hours(0.5, 1.0, 7 * 86400, hours_left=100.0) == pytest.approx(84.0)
    assert sli.sli(0, 0) is None and sli.burn_rate(0, 0, 0.99) is None
    assert sli.ALERT_RULES[0].budget_consumed_at_fire(14 * 86400) == pytest.approx(14.4 / 336)


def _plain_rolling(bad, total, steps, target):
    out = []
    for i in range(len(bad)):
        window = range(max(0, i - steps + 1), i + 1)
        t = sum(total[j] for j in window)
        out.append(0.0 if t == 0 else sum(bad[j] for j in window) / t / (1 - target))
    return out


def test_rolling_burn_and_alerts_vs_plain_python():
    rng = random.Random(7)
    total = [rng.randint(0, 50) for _ in range(600)]
    bad = [0] * 600
    for i in range(200, 260):
        bad[i] = total[i]
    for steps in (5, 60, 360):
        assert sli.rolling_burn(bad, total, steps, 0.99) == pytest.approx(_plain_rolling(bad, total, steps, 0.99))
    rule = sli.ALERT_RULES[0]
    fire = sli.alert_firing(bad, total, 60, 0.99, rule)
    lo, sh = _plain_rolling(bad, total, 60, 0.99), _plain_rolling(bad, total, 5, 0.99)
    assert fire == [a > 14.4 and b > 14.4 for a, b in zip(lo, sh, strict=True)]
    periods = sli.alert_periods(bad, total, 60, 0.99)
    page = [p for p in periods if p["rule"] == "page-fast"]
    # 100% bad from step 200 at 99%: the 1h burn passes 14.4 after 14.4% of an hour (~8.6 min)
    assert page and 205 <= page[0]["start_step"] <= 212 and page[0]["end_step"] <= 265


def test_timeslices_and_bad_periods():
    good = [10, 9, 0, 10, 0]
    total = [10, 10, 0, 10, 0]
    present = [True, True, True, True, False]
    ts = sli.timeslices(good, total, present, slice_target=0.95, target=0.5, slice_s=60)
    assert (ts["present"], ts["missing"], ts["bad"], ts["sli"]) == (4, 1, 1, 0.75)
    assert ts["sli_missing_as_bad"] == 0.6
    assert ts["ratio_timeslices_sli"] == pytest.approx((1 + 0.9 + 1) / 3)
    assert ts["allowed_minutes"] == 2 and ts["remaining_minutes"] == 1
    # a calendar period under way: the whole period's time budget (10 slices x 0.5), 1 bad slice so far
    cal = sli.timeslices(good, total, present, slice_target=0.95, target=0.5, slice_s=60, period_slices=10)
    assert (cal["sli"], cal["allowed_minutes"], cal["remaining_ratio"]) == (0.75, 5, 0.8)
    bp = sli.bad_periods([0, 1, 2, 0, 5, 0, 1], allowed_events=10)
    assert bp[0] == {"start_step": 4, "end_step": 5, "bad_events": 5, "budget_share": 0.5}
    assert bp[1]["bad_events"] == 3 and len(bp) == 3


def test_merged_hdr_percentiles_vs_exact():
    rng = random.Random(3)
    samples, payloads = [], []
    for _ in range(40):
        h = new_histogram()
        chunk = [int(rng.lognormvariate(9, 1.2)) + 1 for _ in range(500)]
        for v in chunk:
            h.record_value(v)
        samples += chunk
        payloads.append(encode_hdr(h))
    merged = hdr.merge((p, 1) for p in payloads)
    s = hdr.summary(merged)
    samples.sort()
    n = len(samples)
    assert s["count"] == n
    for name, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        exact = samples[max(int(p * n / 100 + 0.5), 1) - 1]  # HdrHistogram's rank rule
        assert abs(s[name] - exact) <= exact * 1e-3 + 1, name
    assert abs(s["max"] - samples[-1]) <= samples[-1] * 1e-3 + 1
    # multiplicity = repeated adds
    twice = hdr.merge([(payloads[0], 2)])
    assert np.array_equal(twice, 2 * hdr.counts_of(payloads[0]))
    assert hdr.summary(hdr.empty())["p99"] is None
