import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from slo import hdr
from slo.generate import GenConfig, Incident, expected, generate, profile_samples
from xmonitor.sli_schema import SLI_SCHEMA

INCIDENTS = ("broker-down@1h+30m:cluster=c0,broker=1", "loss@3h+10m:lost=2", "latency-spike@1d+1h:cluster=c1",
             "gap@1d5h+20m", "no-traffic@1d8h+15m:cluster=c0,partition=2")


def test_incident_parse():
    i = Incident.parse("broker-down@2d3h+30m:cluster=c1,broker=2")
    assert (i.kind, i.start_s, i.duration_s, i.cluster, i.broker) == ("broker-down", 2 * 86400 + 3 * 3600, 1800, "c1", 2)
    for bad in ("melt@1h+1h", "loss@1x+1h", "loss@1h+1h:color=red", "loss"):
        with pytest.raises(ValueError):
            Incident.parse(bad)


def test_generated_totals_match_closed_form(tmp_path):
    cfg = GenConfig(days=2, clusters=2, partitions=3, incidents=tuple(map(Incident.parse, INCIDENTS)))
    info = generate(cfg, tmp_path)
    t = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert t.select(SLI_SCHEMA.names).schema.equals(SLI_SCHEMA)
    e = expected(cfg)
    s = lambda a: pc.sum(a).as_py()  # noqa: E731
    assert info["rows"] == t.num_rows == e["rows"]
    assert s(t["produce_attempts"]) == e["produce_attempts"]
    assert s(t["produce_successes"]) == e["produce_successes"]
    assert s(pc.subtract(t["records_consumed"], t["records_late"])) == e["records_on_time"]
    assert s(pc.add(t["records_consumed"], t["records_lost"])) == e["records_expected"]
    assert s(t["records_consumed"]) == e["records_not_lost"]
    errs = sum(sum(v for _, v in m) for m in t["produce_errors"].to_pylist())
    assert errs == e["produce_attempts"] - e["produce_successes"]
    # a day's slice of the closed form
    day1 = t.filter(pc.equal(t["date"], "2026-01-02"))
    assert s(day1["produce_attempts"]) == expected(cfg, 86400, 2 * 86400)["produce_attempts"]
    # HDR payloads carry one sample per consumed record
    uniq = {}
    for p in t["e2e_latency_hdr"].to_pylist():
        uniq[p] = uniq.get(p, 0) + 1
    merged = hdr.merge(uniq.items())
    assert merged.sum() == e["latency_samples"]
    assert hdr.count_le(merged, 500_000) == e["latency_good"]
    assert max(profile_samples("normal", 10)) < 500_000 < min(profile_samples("slow", 10))


def test_per_interval_files_like_xmonitor_and_the_synthetic_marker(tmp_path):
    from slo import live

    cfg = GenConfig(days=1 / 24, clusters=2, partitions=3, interval_s=60, incidents=(Incident.parse("gap@10m+5m"),))
    info = generate(cfg, tmp_path, per_interval=True)
    files = sorted(tmp_path.glob("date=*/*.parquet"))
    assert info["files"] == len(files) == 2 * (60 - 5)            # one per cluster and interval, none in the gap
    t = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()   # the marker is not read as data
    assert t.num_rows == info["rows"] == expected(cfg)["rows"]
    one = ds.dataset(files[0], format="parquet").to_table()
    assert one.num_rows == 3 and len(set(one["interval_start"].to_pylist())) == 1
    marker = live.read_marker(tmp_path)
    assert marker["generator"] == "slo.generate" and marker["incidents"][0]["kind"] == "gap"
