"""benchmarks/plot_scale.py on fixed data: the JSON lines it reads, the exponents, and the SVG (well-formed, points
on log axes, the linear reference at slope 1)."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import pytest

from benchmarks.plot_scale import (
    LogScale,
    exponent_lines,
    fit_exponent,
    log_ticks,
    main,
    medians,
    points,
    read_runs,
    svg,
)

NS = {"s": "http://www.w3.org/2000/svg"}


def _run(impl: str, values: dict[int, float], key: str = "create_s") -> dict:
    return {"benchmark": "partition_scale", "results": {impl: {str(n): {key: v} for n, v in values.items()}}}


RUNS = [
    _run("kafkascope", {1000: 10.0, 3000: 30.0, 10000: 100.0}),       # linear
    _run("kafkascope", {1000: 12.0, 3000: 30.0}),
    _run("apache-kafka", {1000: 2.0, 3000: 18.0, 10000: 200.0}),       # quadratic
    {"benchmark": "partition_scale", "results": {"apache-kafka": {"10000": {"error": "scrape: timed out"}}}},
]


def test_read_runs_takes_the_result_objects_out_of_a_log():
    log = ["  kafkascope @ 1,000 ...", "create N partitions (s)", json.dumps(RUNS[0]),
           "noise " + json.dumps(RUNS[2]), json.dumps({"benchmark": "other", "results": {}})]
    assert read_runs(log) == [RUNS[0], RUNS[2]]


def test_points_collect_every_run_and_skip_missing_values():
    pts = points(RUNS, "create_s")
    assert pts["kafkascope"] == {1000: [10.0, 12.0], 3000: [30.0, 30.0], 10000: [100.0]}
    assert pts["apache-kafka"] == {1000: [2.0], 3000: [18.0], 10000: [200.0]}
    assert points(RUNS, "scrape_ms") == {}
    assert medians(pts["kafkascope"]) == {1000: 11.0, 3000: 30.0, 10000: 100.0}


def test_fit_exponent_is_the_log_log_slope():
    assert fit_exponent({1000: [10.0], 3000: [30.0], 10000: [100.0]}) == pytest.approx(1.0)
    assert fit_exponent({1000: [2.0], 3000: [18.0], 10000: [200.0]}) == pytest.approx(2.0)
    assert fit_exponent({1000: [5.0, 6.0]}) is None


def test_log_scale_and_ticks():
    x = LogScale(100, 10_000, 0, 200)
    assert x(100) == pytest.approx(0) and x(1000) == pytest.approx(100) and x(10_000) == pytest.approx(200)
    y = LogScale(1, 100, 300, 100)   # SVG's y grows downwards: bigger values higher up
    assert y(10) == pytest.approx(200)
    assert log_ticks(0.8, 120) == [1, 2, 5, 10, 20, 50, 100]
    assert log_ticks(3.1, 8.5) == [4, 5, 6, 7, 8]
    with pytest.raises(ValueError):
        LogScale(0, 10, 0, 1)


def _circles(doc: ET.Element, impl: str) -> dict[tuple[int, float], tuple[float, float]]:
    return {(int(c.get("data-size")), float(c.get("data-value"))): (float(c.get("cx")), float(c.get("cy")))
            for c in doc.iterfind(".//s:circle", NS) if c.get("data-impl") == impl}


def test_svg_is_well_formed_and_places_points_on_log_axes():
    doc = ET.fromstring(svg({"create_s": points(RUNS, "create_s"), "scrape_ms": {}}, "t"))
    assert doc.tag == "{http://www.w3.org/2000/svg}svg"
    ours = _circles(doc, "kafkascope")
    assert len(ours) == 4   # the two 3,000 values coincide: one key
    x1, x3, x10 = ours[(1000, 10.0)][0], ours[(3000, 30.0)][0], ours[(10000, 100.0)][0]
    # log x: 3,000 sits log10(3) of the way from 1,000 to 10,000
    assert (x3 - x1) / (x10 - x1) == pytest.approx(math.log10(3), abs=0.01)
    # log y: equal value ratios are equal distances; a linear figure is a straight line
    y1, y3, y10 = ours[(1000, 10.0)][1], ours[(3000, 30.0)][1], ours[(10000, 100.0)][1]
    assert y10 < y3 < y1
    assert (y1 - y3) / (y1 - y10) == pytest.approx(math.log10(3), abs=0.01)
    # the dashed reference has slope 1: parallel to ours, which is linear here
    ref = doc.find(".//s:line[@data-ref='linear']", NS)
    sx = (float(ref.get("y1")) - float(ref.get("y2"))) / (float(ref.get("x2")) - float(ref.get("x1")))
    assert sx == pytest.approx((y1 - y10) / (x10 - x1), rel=0.01)
    # Kafka's quadratic curve is steeper than the reference, and the median line goes through its points
    kafka = _circles(doc, "apache-kafka")
    ky1, ky10 = kafka[(1000, 2.0)][1], kafka[(10000, 200.0)][1]
    assert (ky1 - ky10) == pytest.approx(2 * (y1 - y10), rel=0.01)
    line = next(p for p in doc.iterfind(".//s:polyline", NS) if p.get("data-impl") == "apache-kafka")
    assert line.get("points").split()[0] == f"{kafka[(1000, 2.0)][0]:.1f},{ky1:.1f}"
    texts = [t.text for t in doc.iterfind(".//s:text", NS)]
    ours_fit = fit_exponent(points(RUNS, "create_s")["kafkascope"])
    assert "no data" in texts and f"ours: slope {ours_fit:.2f}" in texts and "Kafka: slope 2.00" in texts


def test_svg_without_data_is_an_error():
    with pytest.raises(ValueError):
        svg({"create_s": {}}, "t")


def test_exponent_lines_and_the_command(tmp_path, capsys):
    assert any("apache-kafka" in ln and "fit 2.00" in ln for ln in exponent_lines({"create_s": points(RUNS,
                                                                                                      "create_s")}))
    data = tmp_path / "runs.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in RUNS))
    out = tmp_path / "curves.svg"
    main([str(data), "--out", str(out)])
    ET.parse(out)
    assert "4 runs" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.jsonl"), "--out", str(out)])
