"""slo.live: schedule grid, atomic publish, `latest`, retention and the page's freshness verdict (no Spark, no
sleeping: the clock and the wait are fakes)."""

import json
import shutil

import pytest

from slo import live

T0 = live.parse_iso("2026-11-26T12:00:00Z")


def _report(as_of_ms, coverage=1.0, hours=None, elapsed_s=14 * 86400, synthetic=False, made_ms=None,
            steps_missing=0):
    return {"generated_at": live.iso(made_ms or as_of_ms), "window": {"as_of": live.iso(as_of_ms),
                                                                      "elapsed_seconds": elapsed_s},
            "completeness": {"coverage": coverage, "hours_with_data": hours, "steps_missing": steps_missing},
            "source": {"synthetic": synthetic}}


def test_next_run_keeps_the_grid_and_skips_missed_slots():
    every = 300_000
    assert live.next_run_ms(T0, T0 + 40_000, every) == T0 + every
    assert live.next_run_ms(T0, T0 + every, every) == T0 + 2 * every      # exactly one interval long: next slot
    assert live.next_run_ms(T0, T0 + 2 * every + 1, every) == T0 + 3 * every


def test_live_window_end_is_a_whole_minute_past_the_open_intervals():
    assert live.window_end_ms(T0 + 29_999) == T0 - 60_000
    assert live.window_end_ms(T0 + 30_000) == T0
    assert live.window_end_ms(T0 + 89_999) == T0


def _fake_build(tmp, now_ms):
    (tmp / "report.json").write_text(json.dumps({"as_of": now_ms}))


def test_publish_is_a_rename_and_latest_follows(tmp_path):
    tmp = live.temp_dir(tmp_path)
    assert tmp.parent == tmp_path and tmp.name.startswith(".tmp-")
    assert live.latest(tmp_path) is None and live.resolve(tmp_path) is None
    _fake_build(tmp, T0)
    first = live.publish(tmp_path, tmp, T0)
    assert not tmp.exists() and first.name == "report-20261126T120000Z"
    assert live.latest(tmp_path) == first == live.resolve(tmp_path)
    tmp2 = live.temp_dir(tmp_path)
    _fake_build(tmp2, T0)
    second = live.publish(tmp_path, tmp2, T0)    # same second: a suffix, the first one is not overwritten
    assert second.name == "report-20261126T120000Z-1" and first.exists()
    assert live.latest(tmp_path) == second
    assert live.resolve(second) == second        # a single report directory is shown as it is
    assert not list(tmp_path.glob(".latest*"))   # no temp file left from replacing `latest`


def test_prune_keeps_the_newest_and_removes_dead_temp_dirs(tmp_path):
    for k in range(5):
        tmp = live.temp_dir(tmp_path)
        _fake_build(tmp, T0 + k * 60_000)
        live.publish(tmp_path, tmp, T0 + k * 60_000)
    dead = live.temp_dir(tmp_path)               # a run killed half-way
    removed = live.prune(tmp_path, keep=2)
    assert dead in removed and not dead.exists()
    left = sorted(p.name for p in tmp_path.glob("report-*"))
    assert left == [live.report_name(T0 + 3 * 60_000), live.report_name(T0 + 4 * 60_000)]
    assert live.latest(tmp_path).name == left[-1]


def test_run_schedule_publishes_prunes_and_writes_the_next_run(tmp_path):
    now = [T0]
    waits = []

    def clock():
        return now[0]

    def build(tmp, now_ms):
        now[0] += 20_000                          # the report takes 20 s
        if len(waits) == 2:
            raise RuntimeError("spark died")      # the third run fails: dropped, the schedule goes on
        _fake_build(tmp, now_ms)

    def wait(seconds):
        waits.append(seconds)
        now[0] += int(seconds * 1000)
        return len(waits) >= 4                    # stop after the 4th wait

    logs = []
    published = live.run_schedule(tmp_path, build, 60, 2, clock, wait, log=logs.append)
    assert published == 3 and waits == [40, 40, 40, 40]
    assert logs == ["report run failed: RuntimeError: spark died"]
    names = sorted(p.name for p in tmp_path.glob("report-*"))
    assert names == [live.report_name(T0 + 60_000), live.report_name(T0 + 180_000)]
    assert live.latest(tmp_path).name == names[-1]
    assert not list(tmp_path.glob(".tmp-*"))
    sched = live.read_schedule(tmp_path)
    assert sched == {"every_seconds": 60, "next_run": live.iso(T0 + 240_000), "last_report": names[-1], "keep": 2}


def test_schedule_is_written_before_the_first_report(tmp_path):
    seen = []

    def build(tmp, now_ms):
        seen.append(live.read_schedule(tmp_path / "new"))
        _fake_build(tmp, now_ms)

    live.run_schedule(tmp_path / "new", build, 300, 8, lambda: T0, lambda s: True)   # creates the root
    assert seen == [{"every_seconds": 300, "next_run": live.iso(T0), "last_report": None, "keep": 8}]
    assert live.waiting_text(seen[0], T0 + 65_000) == ("No report yet: reports every 5 min; the first one has been "
                                                       "under way for 65 s (Spark).")
    assert live.waiting_text(None, T0).startswith("No report yet: start with")


def test_run_schedule_max_runs_does_not_wait_after_the_last(tmp_path):
    waits = []
    assert live.run_schedule(tmp_path, _fake_build, 1, 8, lambda: T0, lambda s: waits.append(s), max_runs=1) == 1
    assert waits == []


def test_freshness_fresh_complete_live_report_has_no_banner():
    sched = {"every_seconds": 300, "next_run": live.iso(T0 + 200_000)}
    f = live.freshness(_report(T0 - 30_000), sched, T0)
    assert f["banners"] == []
    assert f["line"] == ("Data as of 2026-11-26T11:59:30Z (30 s ago), report made 2026-11-26T11:59:30Z; "
                         "next report in 3 min")


def test_freshness_stale_after_twice_the_interval():
    sched = {"every_seconds": 300, "next_run": live.iso(T0 - 300_000)}
    made = T0 - 601_000
    f = live.freshness(_report(made), sched, T0)
    assert [k for k, _ in f["banners"]] == ["stale"]
    assert "10 min old" in f["banners"][0][1] and "overdue by 5 min" in f["line"]
    assert live.freshness(_report(T0 - 599_000), sched, T0)["banners"] == []


@pytest.mark.parametrize("hours,text", [(3.5, "3.5 h of the 336 h window have data"),
                                        (None, "the window's data is 1.0% complete")])
def test_freshness_incomplete_says_how_much_data(hours, text):
    f = live.freshness(_report(T0, coverage=0.0104, hours=hours), None, T0)
    assert [k for k, _ in f["banners"]] == ["incomplete"] and text in f["banners"][0][1]
    assert "next report" not in f["line"]        # a one-off report has no schedule


def test_freshness_incomplete_on_a_missing_minute_or_rows_not_on_estimate_noise():
    assert live.freshness(_report(T0, coverage=0.9995), None, T0)["banners"] == []
    assert live.freshness(_report(T0, coverage=1.0004), None, T0)["banners"] == []
    one_minute = live.freshness(_report(T0, coverage=0.9999, hours=335.98, steps_missing=1), None, T0)
    assert "336.0 h of the 336 h window have data, 60 s without any" in one_minute["banners"][0][1]
    assert [k for k, _ in live.freshness(_report(T0, coverage=0.99), None, T0)["banners"]] == ["incomplete"]


def test_freshness_synthetic():
    f = live.freshness(_report(T0, synthetic=True), None, T0)
    assert [k for k, _ in f["banners"]] == ["synthetic"] and "generated" in f["banners"][0][1]


def test_marker_round_trip(tmp_path):
    assert live.read_marker(tmp_path) is None
    live.write_marker(tmp_path / "sli", {"generator": "x"})
    assert live.read_marker(tmp_path / "sli") == {"generator": "x"}


def test_report_html_says_synthetic_and_hours_with_data(report_dir):
    from slo.report_html import render

    report = json.loads((report_dir / "report.json").read_text())
    assert report["source"]["synthetic"] and report["source"]["generator"]["generator"] == "slo.generate"
    text = (report_dir / "report.html").read_text()
    assert "<b>Synthetic data</b>" in text and "(48.0 h of the window have data)" in text
    report["source"]["synthetic"] = False
    assert "Synthetic data" not in render(report, [])


def test_compact_closed_days_once_and_rebuild_on_change(tmp_path):
    import datetime as dt

    import pyarrow.dataset as ds

    from slo.generate import GenConfig, generate

    sli, cache = tmp_path / "sli", tmp_path / "cache"
    start = dt.datetime(2026, 11, 24, 22, tzinfo=dt.UTC)   # 6 h: 2 h on the 24th, 4 h on the 25th
    generate(GenConfig(days=0.25, partitions=2, interval_s=300, start=start), sli, per_interval=True)
    now = live.parse_iso("2026-11-25T04:05:00Z")
    assert live.closed_days(sli, now) == ["2026-11-24"]
    assert live.closed_days(sli, live.parse_iso("2026-11-25T00:09:59Z")) == []   # grace for late intervals
    assert live.compact(sli, cache, now) == ["2026-11-24"]
    (f,) = (cache / "date=2026-11-24").glob("*.parquet")
    assert f.name == "compact-24.parquet"                                  # 2 h of 5-min intervals
    raw = ds.dataset(sli / "date=2026-11-24", format="parquet").to_table()
    assert ds.dataset(f, format="parquet").to_table().sort_by("interval_start").equals(raw.sort_by("interval_start"))
    mtime = f.stat().st_mtime_ns
    assert live.compact(sli, cache, now) == ["2026-11-24"] and f.stat().st_mtime_ns == mtime   # built once
    next(iter((sli / "date=2026-11-24").glob("*.parquet"))).unlink()
    live.compact(sli, cache, now)
    assert [p.name for p in (cache / "date=2026-11-24").glob("*.parquet")] == ["compact-23.parquet"]
    shutil.rmtree(sli / "date=2026-11-24")
    assert live.compact(sli, cache, now) == [] and not (cache / "date=2026-11-24").exists()
