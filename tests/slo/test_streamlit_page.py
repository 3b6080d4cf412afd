"""The Streamlit SLO page under Streamlit's AppTest, on a small report directory written by the report job."""

import json
from pathlib import Path

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "streamlit_app.py")


def test_page_renders_every_section(report_dir, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KAFKASCOPE_REPORT", str(report_dir))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    assert not at.get("help_info")  # no stray Streamlit "magic" output
    report = json.loads((report_dir / "report.json").read_text())
    headers = [h.value for h in at.header]
    for s in report["slos"]:
        assert s["display_name"] in headers
    assert "Consumer lag by group" in headers and any("Latency" in h for h in headers)
    labels = [m.label for m in at.metric]
    assert labels.count("Budget remaining") == len(report["slos"])
    write = next(s for s in report["slos"] if s["name"] == "write-availability")
    values = [m.value for m in at.metric if m.label == "Budget remaining"]
    assert f"{write['occurrences']['remaining_ratio'] * 100:.1f}%" in values
    subheaders = [h.value for h in at.subheader]
    assert "Budget burn-down" in subheaders and "Burn rate by window" in subheaders
    charts = at.get("vega_lite_chart")
    assert len(charts) >= 2 * len(report["slos"]) + 1
    burn_down = [c for c in charts if "fixed" in str(c.proto) and "rolling" in str(c.proto)]
    assert len(burn_down) == len(report["slos"])  # one burn-down per SLO, with its fixed and rolling lines
    assert any(c.value.startswith("Rolling window") and "rolling burn-down" in c.value for c in at.caption)
    assert any("page-fast" in str(d.value) for d in at.dataframe)


def test_page_without_report(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KAFKASCOPE_REPORT", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert at.error and "No report" in at.error[0].value
