import datetime as dt
import re

import pytest
import yaml

from slo.specs import SpecError, load_specs, parse_spec


def _doc(**over):
    doc = yaml.safe_load("""
apiVersion: openslo/v1
kind: SLO
metadata: {name: w}
spec:
  budgetingMethod: Occurrences
  timeWindow: [{duration: 14d, isRolling: true}]
  indicator: {spec: {ratioMetric: {good: produce_successes, total: produce_attempts}}}
  objectives: [{target: 0.99}]
""")
    for path, value in over.items():
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[keys[-1]] = value
    return doc


def test_defaults_ship_the_four_slos_and_lag():
    specs = {s.name: s for s in load_specs()}
    assert specs["write-availability"].objective.target == 0.99
    assert specs["write-availability"].good == "produce_successes"
    assert specs["read-availability"].objective.target == 0.99
    assert specs["e2e-latency"].kind == "latency" and specs["e2e-latency"].threshold_us == 500_000
    assert specs["no-loss"].total == "records_expected"
    assert specs["consumer-lag"].kind == "lag"
    assert all(s.window_s == 14 * 86400 and s.rolling for s in specs.values())


def test_valid_minimal():
    s = parse_spec(_doc())
    assert (s.budgeting_method, s.window_s, s.objective.time_slice_window_s) == ("Occurrences", 14 * 86400, 60)


@pytest.mark.parametrize("path,value,field", [
    ("apiVersion", "openslo/v2", "apiVersion"),
    ("spec.budgetingMethod", "Sometimes", "spec.budgetingMethod"),
    ("spec.timeWindow", [{"duration": "14 days"}], "spec.timeWindow[0].duration"),
    ("spec.objectives", [{"target": 1.5}], "spec.objectives[0].target"),
    ("spec.objectives", [{"target": "high"}], "spec.objectives[0].target"),
    ("spec.indicator.spec.ratioMetric.good", "nope", "ratioMetric.good"),
    ("spec.budgetingMethod", "Timeslices", "timeSliceWindow"),
    ("metadata.name", "Bad Name", "metadata.name"),
    ("spec.indicator.spec", {"latency": {"histogram": "x", "threshold": "1s"}}, "latency.histogram"),
    ("spec.objectives", [{"target": 0.99, "timeSliceWindow": "11s"}], "timeSliceWindow"),
])
def test_invalid_names_the_field(path, value, field):
    with pytest.raises(SpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_spec(_doc(**{path: value}))


def test_missing_field_named(tmp_path):
    doc = _doc()
    del doc["spec"]["objectives"]
    with pytest.raises(SpecError, match="spec.objectives"):
        parse_spec(doc)
    p = tmp_path / "dup.yaml"
    p.write_text(yaml.safe_dump_all([_doc(), _doc()]))
    with pytest.raises(SpecError, match="duplicate"):
        load_specs(p)


def _utc_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


@pytest.mark.parametrize("duration,start,zone,at,period", [
    # a week anchored Saturday 12:00 New York: the week holding the DST change (8 March 2026) is 167 h long
    ("1w", "2022-01-01 12:00:00", "America/New_York", "2026-03-10T00:00:00+00:00",
     ("2026-03-07T17:00:00+00:00", "2026-03-14T16:00:00+00:00")),
    # 1 ms before the anchor's wall-clock time on a period's first day: still the previous period
    ("1w", "2022-01-01 12:00:00", "America/New_York", "2026-03-07T16:59:59.999+00:00",
     ("2026-02-28T17:00:00+00:00", "2026-03-07T17:00:00+00:00")),
    ("2w", "2026-01-01 00:00:00", "UTC", "2026-01-15T00:00:00+00:00",
     ("2026-01-15T00:00:00+00:00", "2026-01-29T00:00:00+00:00")),
    # months anchored on the 31st start on the last day of shorter months
    ("1M", "2026-01-31 00:00:00", "UTC", "2026-03-01T00:00:00+00:00",
     ("2026-02-28T00:00:00+00:00", "2026-03-31T00:00:00+00:00")),
    ("1Q", "2025-01-01 00:00:00", "Europe/Paris", "2026-05-15T00:00:00+00:00",
     ("2026-03-31T22:00:00+00:00", "2026-06-30T22:00:00+00:00")),
    ("1Y", "2020-07-01 00:00:00", "UTC", "2026-01-01T00:00:00+00:00",
     ("2025-07-01T00:00:00+00:00", "2026-07-01T00:00:00+00:00")),
    # before the anchor (00:30 Paris = 23:30 UTC): the period that ends at it
    ("90m", "2026-01-01 00:30:00", "Europe/Paris", "2025-12-31T23:10:00+00:00",
     ("2025-12-31T22:00:00+00:00", "2025-12-31T23:30:00+00:00")),
])
def test_calendar_period_alignment(duration, start, zone, at, period):
    window = {"duration": duration, "isRolling": False, "calendar": {"startTime": start, "timeZone": zone}}
    s = parse_spec(_doc(**{"spec.timeWindow": [window]}))
    assert not s.rolling and s.calendar.time_zone == zone
    assert s.calendar.period(_utc_ms(at)) == (_utc_ms(period[0]), _utc_ms(period[1]))


def test_calendar_window_parsed_from_yaml_datetime():
    doc = yaml.safe_load("""
apiVersion: openslo/v1
kind: SLO
metadata: {name: w}
spec:
  budgetingMethod: Occurrences
  timeWindow:
    - duration: 1M
      calendar: {startTime: 2026-01-01 00:00:00, timeZone: UTC}
  indicator: {spec: {ratioMetric: {good: produce_successes, total: produce_attempts}}}
  objectives: [{target: 0.99}]
""")  # unquoted startTime is a YAML timestamp; isRolling omitted with a calendar means false
    s = parse_spec(doc)
    assert not s.rolling and s.calendar.start == dt.datetime(2026, 1, 1) and s.window_s == 31 * 86400


@pytest.mark.parametrize("window,field", [
    ({"duration": "1w", "isRolling": False}, "spec.timeWindow[0].calendar"),
    ({"duration": "1w", "isRolling": True, "calendar": {"startTime": "2026-01-01 00:00:00", "timeZone": "UTC"}},
     "spec.timeWindow[0].calendar"),
    ({"duration": "1.5w", "isRolling": False, "calendar": {"startTime": "2026-01-01 00:00:00", "timeZone": "UTC"}},
     "spec.timeWindow[0].duration"),
    ({"duration": "1w", "isRolling": False, "calendar": {"startTime": "1 Jan 2026", "timeZone": "UTC"}},
     "spec.timeWindow[0].calendar.startTime"),
    ({"duration": "1w", "isRolling": False, "calendar": {"timeZone": "UTC"}}, "spec.timeWindow[0].calendar.startTime"),
    ({"duration": "1w", "isRolling": False, "calendar": {"startTime": "2026-01-01 00:00:00", "timeZone": "Mars/Base"}},
     "spec.timeWindow[0].calendar.timeZone"),
])
def test_invalid_calendar_names_the_field(window, field):
    with pytest.raises(SpecError, match=re.escape(field) + r"\b"):
        parse_spec(_doc(**{"spec.timeWindow": [window]}))


def test_one_time_window_per_file(tmp_path):
    p = tmp_path / "mixed.yaml"
    p.write_text(yaml.safe_dump_all([_doc(), _doc(**{"metadata.name": "v", "spec.timeWindow": [
        {"duration": "1w", "isRolling": False, "calendar": {"startTime": "2026-01-01 00:00:00", "timeZone": "UTC"}}]})]))
    with pytest.raises(SpecError, match=r"\(v\): spec.timeWindow"):
        load_specs(p)
