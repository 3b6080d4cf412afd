"""slo.report.hist: per-payload statistics, sparse merges with multiplicity and the latency tables."""

import numpy as np
import pytest

from slo import hdr
from slo.report.hist import (
    HISTS,
    dense,
    latency_tables,
    latency_thresholds,
    merge_group,
    payload_stats,
    sparse,
)
from slo.specs import load_specs
from xmonitor.sli_schema import encode_hdr, new_histogram

E2E, PRODUCE = HISTS


def _hist(samples):
    h = new_histogram()
    for v in samples:
        h.record_value(v)
    return h


def _payload(samples) -> bytes:
    return encode_hdr(_hist(samples))


def _summary_of(samples) -> dict:
    h = _hist(samples)
    return {"count": len(samples), "p50": h.get_value_at_percentile(50), "p99": h.get_value_at_percentile(99),
            "max": h.get_max_value()}


def test_thresholds_of_the_latency_slos():
    specs = load_specs()
    i = next(i for i, s in enumerate(specs) if s.kind == "latency")
    assert latency_thresholds(specs) == {E2E: [(i, 500_000)], PRODUCE: []}


def test_payload_stats_counts_samples_under_each_threshold():
    p = _payload([100, 200, 499_000, 600_000])
    assert payload_stats(p, (500_000, 150)) == (4, 3, 1)
    assert payload_stats(p, ()) == (4,)


def test_merge_with_multiplicity_is_the_histogram_of_all_samples():
    a, b = [100, 2000, 30_000], [250_000, 900_000]
    idx, vals = merge_group([(_payload(a), 3), (_payload(b), 1), (_payload([7]), 0)])
    merged = dense([(idx, vals)])
    s = hdr.summary(merged)
    e = _summary_of(a * 3 + b)
    assert (s["count"], s["p50"], s["p99"], s["max"]) == (e["count"], e["p50"], e["p99"], e["max"])
    assert idx == sorted(idx) and all(v > 0 for v in vals)


def test_dense_sums_sparse_parts_and_skips_empty_ones():
    c = hdr.empty()
    c[[3, 10]] = [2, 5]
    parts = [sparse(c), sparse(c), ([], [])]
    assert np.array_equal(dense(parts), 2 * c)
    assert dense([]).sum() == 0


def test_latency_tables_window_day_and_topic():
    fast, slow = _payload([1000] * 9), _payload([800_000])
    merged = {E2E: {("2026-01-01", "c0", "t0"): merge_group([(fast, 1)]),
                    ("2026-01-02", "c0", "t0"): merge_group([(fast, 1)]),
                    ("2026-01-02", "c0", "t1"): merge_group([(slow, 2)])},
              PRODUCE: {}}
    latency, rows = latency_tables(merged, ["2026-01-01", "2026-01-02"])
    assert latency["window"][E2E]["count"] == 20
    assert latency["window"][PRODUCE] == {"count": 0, "p50": None, "p90": None, "p99": None, "p99_9": None,
                                          "max": None}
    daily = {(r["histogram"], r["date"]): r["count"] for r in latency["daily"]}
    assert daily == {(E2E, "2026-01-01"): 9, (E2E, "2026-01-02"): 11, (PRODUCE, "2026-01-01"): 0,
                     (PRODUCE, "2026-01-02"): 0}
    topics = [(r["cluster"], r["topic"], r["count"]) for r in latency["per_topic"]]
    assert topics == [("c0", "t0", 18), ("c0", "t1", 2)]
    assert latency["per_topic"][1]["p50"] == pytest.approx(800_000, rel=1e-3)
    assert [r["scope"] for r in rows if r["histogram"] == E2E] == ["window", "day", "day", "topic", "topic"]
    assert all(set(r) >= {"histogram", "scope", "date", "cluster", "topic", "count"} for r in rows)
