"""`kafkascope lag evaluate`: the offline JSON format, errors with case index and field, exit code 2."""

from __future__ import annotations

import argparse
import json

import pytest

from kafkascope.cli import lag as lag_cli


def run(argv):
    p = argparse.ArgumentParser()
    lag_cli.register(p.add_subparsers())
    args = p.parse_args(argv)
    return args.run(args)


GOOD = {"window": [None, {"offset": 10, "timestamp_ms": 1000, "lag": 5}, {"offset": 20, "timestamp_ms": 2000,
                                                                        "lag": None}],
        "broker_offsets": [25], "current_lag": 5, "now_ms": 3000, "allowed_lag": 0, "minimum_complete": 0.0}


def test_evaluate_prints_one_result_per_case(tmp_path, capsys):
    f = tmp_path / "cases.json"
    f.write_text(json.dumps([GOOD, {**GOOD, "current_lag": 0}, {**GOOD, "window": []}]))
    assert run(["lag", "evaluate", str(f)]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"status": "WARN", "complete": pytest.approx(2 / 3)}, {"status": "OK", "complete": pytest.approx(2 / 3)},
        {"status": "OK", "complete": 0.0}]


@pytest.mark.parametrize("bad,needle", [
    ({**GOOD, "window": "x"}, "case 1: field 'window'"),
    ({**GOOD, "window": [{"offset": 1, "timestamp_ms": 1}]}, "case 1: field 'window[0].lag'"),
    ({**GOOD, "window": [{"offset": "1", "timestamp_ms": 1, "lag": 0}]}, "case 1: field 'window[0].offset'"),
    ({**GOOD, "window": [{"offset": 1, "timestamp_ms": 1, "lag": 0}, None]}, "case 1: field 'window[1]'"),
    ({**GOOD, "broker_offsets": [1.5]}, "case 1: field 'broker_offsets'"),
    ({k: v for k, v in GOOD.items() if k != "now_ms"}, "case 1: field 'now_ms'"),
    ({**GOOD, "allowed_lag": True}, "case 1: field 'allowed_lag'"),
    ({**GOOD, "current_lag": -1}, "case 1: field 'current_lag'"),
    ({**GOOD, "minimum_complete": "0"}, "case 1: field 'minimum_complete'"),
    (7, "case 1: field '(case)'"),
])
def test_invalid_input_names_case_and_field_and_exits_2(tmp_path, capsys, bad, needle):
    f = tmp_path / "cases.json"
    f.write_text(json.dumps([GOOD, bad]))
    assert run(["lag", "evaluate", str(f)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and needle in out.err


@pytest.mark.parametrize("text", ["{}", "[", ""])
def test_not_a_list_or_not_json_exits_2(tmp_path, capsys, text):
    f = tmp_path / "cases.json"
    f.write_text(text)
    assert run(["lag", "evaluate", str(f)]) == 2
    assert "error" in capsys.readouterr().err
