"""The PySpark SLO report on generated data: every number in report.json against the closed form."""

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from slo.generate import DAY_S, GenConfig, Incident, expected, generate, profile_samples
from slo.jobs.slo_report import slo_report
from slo.specs import DEFAULT_SPEC, load_specs, parse_spec
from tests.slo.closed_form import FIELDS

INCIDENTS = ("broker-down@2h+4h:cluster=c0,broker=1", "latency-spike@10h+1h:cluster=c1", "loss@14h+30m:lost=2",
             "gap@20h+20m", "no-traffic@1d+1d", "loss@2d12h+1h:cluster=c0,lost=1")
CFG = GenConfig(days=3, clusters=2, partitions=3, interval_s=60, records=10,
                incidents=tuple(map(Incident.parse, INCIDENTS)))
WINDOW = 3 * DAY_S
SPECS = load_specs()


@pytest.fixture(scope="module")
def spark():
    from slo.spark import session
    s = session("test-slo-report", shuffle_partitions=2)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    data = tmp_path_factory.mktemp("sli")
    generate(CFG, data)
    lag = tmp_path_factory.mktemp("lag")
    table = pa.table({"group": ["g1", "g1", "g2"], "instants": [1440, 1440, 1440], "share_ok": [1.0, 0.98, 0.5],
                      "share_warn": [0.0, 0.02, 0.0], "share_err": [0.0, 0.0, 0.5], "max_lag": [1, 5, 900],
                      "max_lag_seconds": [0.0, 1.0, 60.0], "date": ["2026-01-01", "2026-01-02", "2026-01-01"]})
    pq.write_to_dataset(table, str(lag / "daily_summary"), partition_cols=["date"])
    out = tmp_path_factory.mktemp("report")
    r = slo_report(spark, data, SPECS, out, window_s=WINDOW, lag_dir=lag)
    return r, out


def _slo(r, name):
    return next(s for s in r["slos"] if s["name"] == name)


@pytest.mark.parametrize("name", list(FIELDS))
def test_occurrences_budget_burn_vs_closed_form(report, name):
    r, _ = report
    e = expected(CFG)
    good_f, total_f = FIELDS[name]
    total, good = e[total_f], e[good_f]
    bad = total - good
    s = _slo(r, name)
    T = s["target"]
    occ = s["occurrences"]
    assert (occ["total"], occ["bad"]) == (total, bad)
    assert occ["sli"] == pytest.approx(good / total)
    assert occ["allowed_events"] == pytest.approx((1 - T) * total)
    assert occ["remaining_events"] == pytest.approx((1 - T) * total - bad)
    assert occ["allowed_minutes"] == pytest.approx((1 - T) * WINDOW / 60)
    assert occ["consumed_minutes"] == pytest.approx(bad / ((1 - T) * total) * (1 - T) * WINDOW / 60)
    assert occ["remaining_ratio"] == pytest.approx(1 - bad / total / (1 - T))
    assert s["burn"]["period"] == pytest.approx(bad / total / (1 - T))
    last = expected(CFG, 2 * DAY_S, 3 * DAY_S)
    b24 = (last[total_f] - last[good_f]) / last[total_f] / (1 - T)
    assert s["burn"]["trailing_24h"] == pytest.approx(b24)
    rem = occ["remaining_ratio"]
    want = 0.0 if rem <= 0 else (None if b24 == 0 else rem * WINDOW / 3600 / b24)
    assert s["exhaustion_hours_at_24h_burn"] == (pytest.approx(want) if want is not None else None)
    for day, row in enumerate(s["daily"]):
        d = expected(CFG, day * DAY_S, (day + 1) * DAY_S)
        assert (row["events"], row["bad_events"]) == (d[total_f], d[total_f] - d[good_f])
        if d[total_f] == 0:  # the zero-traffic day
            assert row["sli"] is None and row["burn_rate"] is None


def test_negative_budget_kept(report):
    s = _slo(report[0], "write-availability")
    assert s["occurrences"]["remaining_ratio"] < 0 and s["met"] is False
    assert s["exhaustion_hours_at_24h_burn"] == 0.0


def test_timeslices_and_completeness(report):
    r, _ = report
    s = _slo(r, "write-availability")
    ts = s["timeslices"]
    # 4 h broker down on 1 of 6 partitions: each minute is 5/6 good < 0.99; gap minutes are missing
    assert (ts["slices"], ts["missing"], ts["bad"]) == (3 * 1440, 20, 240)
    assert ts["sli"] == pytest.approx((4300 - 240) / 4300)
    assert ts["sli_missing_as_bad"] == pytest.approx((4300 - 240) / 4320)
    assert ts["ratio_timeslices_sli"] == pytest.approx((4300 - 1440 - 240 + 240 * 5 / 6) / (4300 - 1440))
    c = r["completeness"]
    assert (c["series"], c["rows"], c["missing_rows"], c["steps_missing"]) == (6, expected(CFG)["rows"], 120, 20)


def test_alerts_bad_periods_brokers(report):
    r, _ = report
    s = _slo(r, "write-availability")
    bd_start, bd_end = 2 * 60, 6 * 60
    page = [a for a in s["alerts"] if a["rule"] == "page-fast"]
    # burn during the outage is (1/6)/0.01 = 16.7 > 14.4: fires once the 1h window holds 14.4/16.7 of an hour
    assert len(page) == 1 and page[0]["start_step"] == bd_start + 51 and page[0]["end_step"] <= bd_end + 60
    assert s["bad_periods"][0]["start_step"] == bd_start and s["bad_periods"][0]["end_step"] == bd_end
    allowed = s["occurrences"]["allowed_events"]
    assert s["bad_periods"][0]["budget_share"] == pytest.approx(240 * 10 / allowed)
    assert s["brokers"][0]["cluster"] == "c0" and s["brokers"][0]["leader"] == 1
    assert s["partitions"][0]["partition"] == 1 and s["partitions"][0]["bad"] == 2400
    scopes = {(x["cluster"], x.get("topic")): x for x in s["scopes"]}
    assert scopes[("c1", None)]["bad"] == 0 and scopes[("c0", "xmonitor")]["bad"] == 2400


def test_latency_percentiles_from_merged_hdr(report):
    r, _ = report
    samples = []
    e = expected(CFG)
    slow_rows = 60 * 3  # latency spike: 1 h on c1's 3 partitions
    normal_rows = (e["latency_samples"] - slow_rows * 10 - 30 * 6 * 8 - 60 * 3 * 9) // 10
    samples += profile_samples("slow", 10) * slow_rows + profile_samples("normal", 8) * (30 * 6)
    samples += profile_samples("normal", 9) * (60 * 3) + profile_samples("normal", 10) * normal_rows
    samples.sort()
    w = r["latency"]["window"]["e2e_latency_hdr"]
    assert w["count"] == len(samples) == e["latency_samples"]
    for name, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        exact = samples[max(int(p * len(samples) / 100 + 0.5), 1) - 1]
        assert abs(w[name] - exact) <= exact * 1e-3 + 1, name
    assert abs(w["max"] - samples[-1]) <= samples[-1] * 1e-3
    days = [d for d in r["latency"]["daily"] if d["histogram"] == "e2e_latency_hdr"]
    assert [d["count"] for d in days] == [expected(CFG, i * DAY_S, (i + 1) * DAY_S)["latency_samples"]
                                          for i in range(3)]
    assert days[1]["p99"] is None  # zero-traffic day


def test_lag_and_outputs(report):
    r, out = report
    groups = {g["group"]: g for g in r["lag"]["groups"]}
    assert groups["g1"]["share_ok"] == pytest.approx(0.99) and groups["g1"]["met"] is True
    assert groups["g2"]["met"] is False and r["lag"]["groups_met"] == 1
    assert json.loads((out / "report.json").read_text())["window"]["seconds"] == WINDOW
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 13 and "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    for name in ("slo_summary", "daily", "scopes", "brokers", "partitions", "bad_periods", "alerts", "burn_down",
                 "latency", "lag_groups"):
        assert pq.read_table(out / f"{name}.parquet").num_rows > 0, name


def test_empty_window(spark, tmp_path):
    r = slo_report(spark, tmp_path / "nothing", SPECS, tmp_path / "out", end_ms=CFG.start_ms, window_s=WINDOW)
    for s in r["slos"]:
        assert s["occurrences"]["total"] == 0 and s["sli"] is None and s["met"] is None
        assert s["occurrences"]["remaining_ratio"] == 1.0
    assert r["completeness"]["rows"] == 0 and r["completeness"]["steps_missing"] == WINDOW // 60
    assert (tmp_path / "out" / "report.html").exists()


def test_window_with_files_but_no_rows(spark, tmp_path):
    cfg = GenConfig(days=0.1, clusters=1, partitions=2, interval_s=60)
    generate(cfg, tmp_path / "sli")
    r = slo_report(spark, tmp_path / "sli", SPECS, tmp_path / "out", end_ms=cfg.start_ms - 86_400_000,
                   window_s=DAY_S)
    assert all(s["occurrences"]["total"] == 0 for s in r["slos"])
    assert r["latency"]["window"]["e2e_latency_hdr"]["count"] == 0


def _remaining(e, name):
    good_f, total_f = FIELDS[name]
    target = next(s for s in SPECS if s.name == name).objective.target
    return 1.0 if e[total_f] == 0 else 1 - (e[total_f] - e[good_f]) / e[total_f] / (1 - target)


def test_rolling_without_history(report):
    r, out = report
    h = r["completeness"]["rolling_history"]
    assert (h["rows"], h["coverage"], h["steps_missing"]) == (0, 0.0, WINDOW // 60)
    bd = pq.read_table(out / "burn_down.parquet").to_pylist()
    for row in bd:  # no data before the start: the trailing window holds exactly the events to date
        assert row["remaining_rolling"] == pytest.approx(row["remaining_to_date"])
    last = [row for row in bd if row["slo"] == "write-availability"][-1]
    assert last["rolling_coverage"] == pytest.approx((4320 - 20) / 4320)


ROLL = GenConfig(days=4, clusters=1, partitions=3, interval_s=60, incidents=tuple(map(Incident.parse, (
    "gap@0+6h", "broker-down@1d+4h:broker=1", "latency-spike@1d12h+2h", "loss@2d12h+1h:lost=3"))))


@pytest.fixture(scope="module")
def rolling(spark, tmp_path_factory):
    data, out = tmp_path_factory.mktemp("sli-roll"), tmp_path_factory.mktemp("report-roll")
    generate(ROLL, data)
    return slo_report(spark, data, SPECS, out, window_s=2 * DAY_S), out


def test_rolling_burn_down_vs_closed_form(rolling):
    """Incidents before the window start: the rolling line burns budget until they leave the trailing 2 days,
    the fixed one never sees them; both, and the trailing burn lines, against the generator's closed form at
    every hour."""
    r, out = rolling
    assert r["window"]["kind"] == "rolling" and r["window"]["start_ms"] == ROLL.start_ms + 2 * DAY_S * 1000
    bd = pq.read_table(out / "burn_down.parquet").to_pylist()
    for name in FIELDS:
        rows = [row for row in bd if row["slo"] == name]
        assert len(rows) == 48
        allowed, target = _slo(r, name)["occurrences"]["allowed_events"], _slo(r, name)["target"]
        good_f, total_f = FIELDS[name]
        for h, row in enumerate(rows, start=1):
            t = 2 * DAY_S + h * 3600
            assert row["remaining_rolling"] == pytest.approx(_remaining(expected(ROLL, t - 2 * DAY_S, t), name)), \
                (name, h)
            fixed = expected(ROLL, 2 * DAY_S, t)
            assert row["remaining_fixed"] == pytest.approx(1 - (fixed[total_f] - fixed[good_f]) / allowed)
            gap = max(0, 6 * 3600 - (t - 2 * DAY_S))  # the part of the 6 h gap at 0 in the trailing window
            assert row["rolling_coverage"] == pytest.approx(1 - gap / (2 * DAY_S))
            for col, span in (("burn_1h", 3600), ("burn_1d", DAY_S), ("burn_3d", 3 * DAY_S)):
                e = expected(ROLL, max(0, t - span), t)  # trailing windows reach into the history
                assert row[col] == pytest.approx(0.0 if e[total_f] == 0 else
                                                 (e[total_f] - e[good_f]) / e[total_f] / (1 - target)), (name, h, col)
        assert rows[-1]["remaining_rolling"] == pytest.approx(_slo(r, name)["occurrences"]["remaining_ratio"])
    write = [row for row in bd if row["slo"] == "write-availability"]
    assert write[0]["remaining_fixed"] == 1.0 and write[0]["remaining_rolling"] < 0  # the outage at 1d, seen
    assert write[0]["burn_1d"] > 0 and write[0]["burn_1h"] == 0                     # ... by the 1-day burn too
    assert write[23]["remaining_rolling"] < 0 and write[28]["remaining_rolling"] == 1.0  # gone after 3d4h
    h = r["completeness"]["rolling_history"]
    assert (h["rows"], h["steps_missing"]) == (expected(ROLL, 0, 2 * DAY_S)["rows"], 6 * 60)
    assert h["coverage"] == pytest.approx(1 - 6 / 48)


CAL = GenConfig(days=3, clusters=1, partitions=3, interval_s=60, incidents=tuple(map(Incident.parse, (
    "broker-down@1d+3h:broker=1", "broker-down@2d10h+2h:broker=2"))))


def _calendar_specs(window: dict) -> list:
    docs = list(yaml.safe_load_all(DEFAULT_SPEC.read_text()))
    for d in docs:
        d["spec"]["timeWindow"] = [window]
    return [parse_spec(d) for d in docs]


def test_calendar_window_report(spark, tmp_path):
    """A daily calendar window anchored at 06:00 Paris (05:00 UTC in January): the data ends 2026-01-04T00:00Z,
    so the period is 2026-01-03T05:00Z - 2026-01-04T05:00Z, 19 h of it elapsed; the budget is consumed so far."""
    generate(CAL, tmp_path / "sli")
    specs = _calendar_specs({"duration": "1d", "isRolling": False,
                             "calendar": {"startTime": "2025-12-01 06:00:00", "timeZone": "Europe/Paris"}})
    r = slo_report(spark, tmp_path / "sli", specs, tmp_path / "out")
    w = r["window"]
    assert (w["kind"], w["start"], w["end"], w["as_of"]) == (
        "calendar", "2026-01-03T05:00:00Z", "2026-01-04T05:00:00Z", "2026-01-04T00:00:00Z")
    assert (w["seconds"], w["elapsed_seconds"]) == (DAY_S, 19 * 3600)
    assert w["calendar"] == {"startTime": "2025-12-01 06:00:00", "timeZone": "Europe/Paris", "duration": "1d"}
    lo = 2 * DAY_S + 5 * 3600
    e = expected(CAL, lo, 3 * DAY_S)
    s = _slo(r, "write-availability")
    occ, T = s["occurrences"], s["target"]
    bad = e["produce_attempts"] - e["produce_successes"]
    assert (occ["total"], occ["bad"]) == (e["produce_attempts"], bad) and bad == 2 * 60 * 10
    assert occ["remaining_ratio"] == pytest.approx(1 - bad / e["produce_attempts"] / (1 - T))
    assert occ["allowed_minutes"] == pytest.approx((1 - T) * 1440)
    assert occ["consumed_minutes"] == pytest.approx(bad / e["produce_attempts"] * 19 * 60)
    ts = s["timeslices"]  # whole-period time budget: (1 - T) x 1440 one-minute slices
    assert (ts["slices"], ts["bad"]) == (19 * 60, 120)
    assert ts["remaining_ratio"] == pytest.approx(1 - 120 / ((1 - T) * 1440))
    assert r["completeness"]["steps"] == 19 * 60 and r["completeness"]["steps_missing"] == 0
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Calendar window 2026-01-03T05:00:00Z" in html and "Europe/Paris" in html
    bd = [row for row in pq.read_table(tmp_path / "out" / "burn_down.parquet").to_pylist()
          if row["slo"] == "write-availability"]
    for row in bd:  # rolling: the trailing day (the period's length) ending at each hour
        t = (dt.datetime.fromisoformat(row["time"]).timestamp() * 1000 - CAL.start_ms) / 1000
        assert row["remaining_rolling"] == pytest.approx(_remaining(expected(CAL, t - DAY_S, t),
                                                                    "write-availability"))
    assert bd[0]["remaining_fixed"] == 1.0
