"""benchmarks/xmonitor_scale.py's pure parts: the SLI window summary, the commit counters' growth, the tables
(no broker, no probe process)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchmarks.xmonitor_scale import (
    SCENARIOS,
    build_parser,
    commit_window,
    load_figures,
    percentile,
    samples,
    scenario_rows,
    summarise_sli,
)
from xmonitor.sli_schema import encode_hdr, new_histogram

T0 = datetime(2026, 11, 27, 4, 0, tzinfo=UTC)


def _row(start_s: int, produce_us: list[int], e2e_us: list[int], *, attempts: int, successes: int, consumed: int,
         lost: int = 0, late: int = 0) -> dict:
    ph, eh = new_histogram(), new_histogram()
    for v in produce_us:
        ph.record_value(v)
    for v in e2e_us:
        eh.record_value(v)
    return {"interval_start": T0 + timedelta(seconds=start_s), "interval_end": T0 + timedelta(seconds=start_s + 5),
            "produce_attempts": attempts, "produce_successes": successes, "records_consumed": consumed,
            "records_lost": lost, "records_late": late,
            "produce_latency_hdr": encode_hdr(ph), "e2e_latency_hdr": encode_hdr(eh)}


def test_summary_merges_the_whole_intervals_inside_the_window_only():
    rows = [
        _row(0, [99_000] * 10, [99_000] * 10, attempts=10, successes=10, consumed=10),       # before the window
        _row(5, [1_000] * 98 + [50_000] * 2, [2_000] * 100, attempts=100, successes=100, consumed=100),
        _row(10, [1_000] * 100, [2_000] * 98 + [40_000] * 2, attempts=100, successes=96, consumed=95, lost=1,
             late=2),
        _row(13, [99_000] * 10, [99_000] * 10, attempts=10, successes=0, consumed=0),        # ends after it
    ]
    s = summarise_sli(rows, T0 + timedelta(seconds=5), T0 + timedelta(seconds=16))
    assert s["intervals"] == 2 and s["records"] == 195
    assert s["produce_p50_ms"] == pytest.approx(1.0, rel=0.01)
    # 2 of 200 produce samples at 50 ms: the 99th percentile is still 1 ms, the 99.5th would not be
    assert s["produce_p99_ms"] == pytest.approx(1.0, rel=0.01)
    assert s["e2e_p50_ms"] == pytest.approx(2.0, rel=0.01)
    assert s["produce_availability"] == pytest.approx(196 / 200)
    assert s["consume_availability"] == pytest.approx((195 - 2) / (195 + 1))


def test_summary_of_an_empty_window_is_all_unknown():
    s = summarise_sli([], T0, T0 + timedelta(seconds=30))
    assert s["intervals"] == 0 and s["records"] == 0
    assert all(s[k] is None for k in ("produce_p50_ms", "e2e_p99_ms", "produce_availability",
                                      "consume_availability"))


def _page(ok: int, failed: int, lat_sum: float, lat_n: int) -> str:
    return "\n".join([
        "# TYPE xmonitor_offset_commits counter",
        f'xmonitor_offset_commits_total{{cluster="c",source="probe",result="success"}} {ok - 1}',
        'xmonitor_offset_commits_total{cluster="c",source="consumer",result="success"} 1',
        f'xmonitor_offset_commits_total{{cluster="c",source="probe",result="failure"}} {failed}',
        "# TYPE xmonitor_offset_commit_latency_seconds histogram",
        f'xmonitor_offset_commit_latency_seconds_bucket{{cluster="c",source="probe",le="+Inf"}} {lat_n}',
        f'xmonitor_offset_commit_latency_seconds_sum{{cluster="c",source="probe"}} {lat_sum}',
        f'xmonitor_offset_commit_latency_seconds_count{{cluster="c",source="probe"}} {lat_n}',
        "",
    ])


def test_commit_window_is_the_growth_between_two_scrapes():
    before, after = samples(_page(10, 1, 0.05, 10)), samples(_page(40, 3, 0.35, 40))
    w = commit_window(before, after)
    assert w["commits"] == 32
    assert w["commit_availability"] == pytest.approx(30 / 32)
    assert w["commit_avg_ms"] == pytest.approx(10.0)   # 0.3 s over 30 commits


def test_commit_window_without_commits_is_unknown_not_perfect():
    page = samples(_page(10, 0, 0.1, 10))
    assert commit_window(page, page) == {"commits": 0, "commit_availability": None, "commit_avg_ms": None}


def test_percentile_nearest_rank():
    assert percentile([], 99) is None
    assert percentile([5.0], 99) == 5.0
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 99) == 99.0 and percentile(values, 50) == 50.0 and percentile(values, 100) == 100.0
    assert percentile(list(reversed(values)), 1) == 1.0


def test_scenario_rows_ratio_to_kafka_and_to_the_own_baseline():
    res = {"kafkascope": {"baseline": {"e2e_p99_ms": 4.0}, "groups": {"e2e_p99_ms": 6.0},
                          "+partitions": {"error": "create: boom"}},
           "apache-kafka": {"baseline": {"e2e_p99_ms": 5.0}, "groups": {"e2e_p99_ms": 12.0},
                            "+partitions": {"e2e_p99_ms": 15.0}}}
    rows = scenario_rows("e2e_p99_ms", ["kafkascope", "apache-kafka"], res)
    assert rows[0] == ("scenario", "kafkascope", "apache-kafka", "ours/Kafka", "kafkascope / baseline",
                       "apache-kafka / baseline")
    assert [r[0] for r in rows[1:]] == list(SCENARIOS)
    assert rows[1] == ("baseline", "4.000", "5.000", "0.800", "1.000", "1.000")
    assert rows[2] == ("groups", "6.000", "12.000", "0.500", "1.500", "2.400")
    assert rows[3] == ("+partitions", "n/a", "15.000", "n/a", "n/a", "3.000")


def test_parser_defaults_are_the_issue_sizes():
    a = build_parser().parse_args([])
    assert a.groups == 1000 and a.extra_partitions == 3000 and a.brokers == 3
    assert a.impls == "kafkascope,apache-kafka"


def test_load_figures_are_the_growth_between_two_snapshots():
    start = {"answered": 10, "failed": 1, "skipped": 0, "latencies_ms": [100.0] * 9}
    end = {"answered": 110, "failed": 3, "skipped": 5, "latencies_ms": [100.0] * 9 + [5.0] * 99 + [50.0]}
    f = load_figures(start, end, 2.0)
    assert f == {"load_commits_per_s": 50.0, "load_commit_p99_ms": 5.0, "load_failed": 2, "load_skipped": 5}
    assert load_figures(start, None, 2.0)["load_commits_per_s"] is None   # the load process died
