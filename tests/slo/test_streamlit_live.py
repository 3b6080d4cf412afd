"""The Streamlit page on a reports root of `slo report --every`: follows `latest`, the age line, and the stale,
incomplete and synthetic banners (AppTest; the report is the session's small Spark-built one, its report.json
edited per case)."""

import json
import shutil
import time
from pathlib import Path

from slo import live

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "streamlit_app.py")


def _root(tmp_path, report_dir, made_s_ago, every_s=60, next_in_s=30, coverage=None, synthetic=False):
    """A reports root holding one copy of the fixture report, made `made_s_ago` seconds ago."""
    now_ms = int(time.time() * 1000)
    made = now_ms - made_s_ago * 1000
    tmp = live.temp_dir(tmp_path)
    shutil.copytree(report_dir, tmp, dirs_exist_ok=True)
    report = json.loads((tmp / "report.json").read_text())
    report["generated_at"] = report["window"]["as_of"] = live.iso(made)
    if coverage is not None:
        report["completeness"].update(coverage=coverage, hours_with_data=1.5)
    report["source"] = {"synthetic": synthetic}
    (tmp / "report.json").write_text(json.dumps(report))
    published = live.publish(tmp_path, tmp, made)
    live.write_schedule(tmp_path, every_s, now_ms + next_in_s * 1000, published.name, 8)
    return published


def _run(monkeypatch, root):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KAFKASCOPE_REPORT", str(root))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def test_fresh_complete_live_report_has_age_line_and_no_banner(report_dir, tmp_path, monkeypatch):
    _root(tmp_path, report_dir, made_s_ago=20)
    at = _run(monkeypatch, tmp_path)
    assert not at.error and not at.warning
    line = next(c.value for c in at.caption if c.value.startswith("Data as of"))
    assert "s ago" in line and "next report in" in line
    assert "Kafka SLOs" in [t.value for t in at.title]


def test_stale_report_banner(report_dir, tmp_path, monkeypatch):
    _root(tmp_path, report_dir, made_s_ago=3600, every_s=60, next_in_s=-3540)
    at = _run(monkeypatch, tmp_path)
    assert len(at.error) == 1 and at.error[0].value.startswith("Stale: this report is 60 min old")
    assert any("overdue" in c.value for c in at.caption)


def test_incomplete_and_synthetic_banners(report_dir, tmp_path, monkeypatch):
    _root(tmp_path, report_dir, made_s_ago=5, coverage=0.031, synthetic=True)
    at = _run(monkeypatch, tmp_path)
    texts = [w.value for w in at.warning]
    assert any(t.startswith("Incomplete data: 1.5 h of the 48 h window have data (3.1%") for t in texts), texts
    assert any(t.startswith("Synthetic data") for t in texts), texts
    assert not at.error


def test_page_follows_latest(report_dir, tmp_path, monkeypatch):
    first = _root(tmp_path, report_dir, made_s_ago=120)
    at = _run(monkeypatch, tmp_path)
    assert any(live.iso(live.parse_iso(json.loads((first / "report.json").read_text())["generated_at"]))
               in c.value for c in at.caption)
    second = _root(tmp_path, report_dir, made_s_ago=2, synthetic=True)
    assert live.latest(tmp_path) == second
    at.run()   # what the next rerun (a click, or the fragment seeing a new `latest`) shows
    assert not at.exception and any(w.value.startswith("Synthetic data") for w in at.warning)


def test_first_report_under_way(tmp_path, monkeypatch):
    live.write_schedule(tmp_path, 300, int(time.time() * 1000) - 40_000, None, 8)
    at = _run(monkeypatch, tmp_path)
    assert not at.error and at.info[0].value.startswith("No report yet: reports every 5 min; the first one has "
                                                        "been under way for")
