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
