"""slo.report.passes on a small generated window: both Spark passes against the generator's closed form."""

import pytest
from pyspark.sql import functions as F

from slo.generate import GenConfig, Incident, expected, generate
from slo.report.hist import HISTS, latency_thresholds
from slo.report.passes import aggregate, hash_pass, payload_pass, split_window
from slo.report.read import last_end_ms, read_intervals
from slo.report.window import Steps, report_window
from slo.specs import load_specs
from tests.slo.closed_form import FIELDS

CFG = GenConfig(days=2 / 24, clusters=1, partitions=2, interval_s=60, records=10, incidents=tuple(map(
    Incident.parse, ("broker-down@30m+10m:broker=1", "latency-spike@1h10m+5m", "loss@1h30m+3m:lost=2"))))
SPECS = [s for s in load_specs() if s.kind != "lag"]


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    from slo.spark import session

    data = tmp_path_factory.mktemp("sli")
    generate(CFG, data)
    spark = session("test-slo-passes", shuffle_partitions=2)
    df = read_intervals(spark, data)
    end = last_end_ms(df)
    steps = Steps.of(report_window(SPECS, end, 3600), end)   # the last hour; the first is its history
    yield spark, df, steps
    spark.stop()


def _sums(rows, i):
    return sum(r[f"g{i}"] or 0 for r in rows), sum(r[f"t{i}"] or 0 for r in rows)


def test_both_passes_count_the_window_and_its_history(window):
    spark, df, steps = window
    assert steps.start_ms == CFG.start_ms + 3_600_000
    counts = aggregate(spark, df, steps, SPECS)
    win, hist = expected(CFG, 3600, 7200), expected(CFG, 0, 3600)
    assert (counts.input_rows, counts.series, counts.covered_ms) == (win["rows"], 2, win["rows"] * 60_000)
    assert sum(r["rows"] for r in counts.pre_rows) == hist["rows"]
    for i, s in enumerate(SPECS):
        good, total = FIELDS[s.name]
        assert _sums(counts.step_rows, i) == (win[good], win[total]), s.name
        assert _sums(counts.pre_rows, i) == (hist[good], hist[total]), s.name
        assert _sums(counts.groups["cluster"], i) == (win[good], win[total]), s.name
    assert sorted(r["leader"] for r in counts.groups["leader"]) == [0, 1]
    assert len(counts.groups["partition"]) == 2
    e2e = sum(sum(vals) for _, vals in counts.merged[HISTS[0]].values())
    assert e2e == win["latency_samples"]
    assert {k[1:] for k in counts.merged[HISTS[0]]} == {("c0", "xmonitor")}


def test_identical_payloads_collapse(window):
    spark, df, steps = window
    thresholds = latency_thresholds(SPECS)
    lat = [h for h in HISTS if thresholds[h]]
    rows, pre = split_window(df, steps)
    hashed, _ = hash_pass(rows, pre, steps, SPECS, lat)
    stats = payload_pass(spark, rows, pre, (500_000,), lat)
    try:
        assert rows.count() == expected(CFG, 3600, 7200)["rows"] and pre.count() == expected(CFG, 0, 3600)["rows"]
        # 60 s intervals: one row per partition and minute, each with multiplicity 1
        assert hashed.count() == rows.count() == hashed.agg(F.sum("rows")).first()[0]
        n_distinct = stats.count()
        assert 0 < n_distinct < 10
        n_le = sorted((r["n"], r["le500000"]) for r in stats.collect())
        assert (10, 10) in n_le and (10, 0) in n_le   # fast payloads, and the latency spike's slow ones
        assert (8, 8) in n_le                          # the loss: 2 of 10 records never arrive
    finally:
        hashed.unpersist()
        stats.unpersist()
