"""The SLO report on SLI files that a real xmonitor wrote against a real broker (not the generator)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkascope.local.broker_process import ROOT
from xmonitor import sink
from xmonitor.sli_schema import decode_hdr


def run_report(sli: Path, out: Path) -> dict:
    """`kafkascope slo report` (Spark local) over the last hour of `sli`; the report.json it wrote."""
    run = subprocess.run([sys.executable, "-m", "kafkascope", "slo", "report", "--sli-dir", str(sli),
                          "--out", str(out), "--window", "1h"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads((out / "report.json").read_text())


def assert_counts_match_the_files(report: dict, sli: Path) -> None:
    """The report's event counts are exactly the sums over the SLI files (slo/specs.py FIELDS)."""
    t = sink.read_dir(sli)
    col = lambda c: sum(t.column(c).to_pylist())  # noqa: E731
    occ = {s["name"]: s["occurrences"] for s in report["slos"]}
    assert (occ["write-availability"]["total"], occ["write-availability"]["good"]) == (
        col("produce_attempts"), col("produce_successes"))
    expected = col("records_consumed") + col("records_lost")
    assert (occ["read-availability"]["total"], occ["read-availability"]["good"]) == (
        expected, col("records_consumed") - col("records_late"))
    assert (occ["no-loss"]["total"], occ["no-loss"]["good"]) == (expected, col("records_consumed"))
    e2e_samples = sum(decode_hdr(h).get_total_count() for h in t.column("e2e_latency_hdr").to_pylist())
    assert occ["e2e-latency"]["total"] == e2e_samples == col("records_consumed") > 0


def test_report_reads_what_xmonitor_wrote(broker, tmp_path):
    broker.start()
    cfg = tmp_path / "xmonitor.yaml"
    cfg.write_text("produce.record.delay.ms: 50\nsli.interval.ms: 1000\n")
    sli = tmp_path / "sli"
    probe = subprocess.Popen([sys.executable, "-m", "xmonitor", "--bootstrap-servers", broker.bootstrap,
                              "--config", str(cfg), "--sli-dir", str(sli)], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(sli.rglob("*.parquet"))) < 4:
            time.sleep(0.2)
    finally:
        probe.send_signal(signal.SIGTERM)
        probe.wait(30)
    assert len(list(sli.rglob("*.parquet"))) >= 4, "xmonitor wrote no SLI intervals"
    out = tmp_path / "report"
    report = run_report(sli, out)
    assert_counts_match_the_files(report, sli)
    write = next(s for s in report["slos"] if s["name"] == "write-availability")
    assert write["occurrences"]["total"] > 0
    assert write["occurrences"]["bad"] == 0 and write["sli"] == 1.0   # a healthy broker
    assert (out / "report.html").stat().st_size > 0
