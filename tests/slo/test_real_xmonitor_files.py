"""The SLO report on SLI files that a real xmonitor wrote against a real broker (not the generator)."""

from __future__ import annotations

import signal
import subprocess
import sys

from common.polling import wait_until
from kafkascope.local.broker_process import ROOT
from tests.scenarios.slo import assert_counts_match_the_files, run_report


def test_report_reads_what_xmonitor_wrote(broker, tmp_path):
    broker.start()
    cfg = tmp_path / "xmonitor.yaml"
    cfg.write_text("produce.record.delay.ms: 50\nsli.interval.ms: 1000\n")
    sli = tmp_path / "sli"
    probe = subprocess.Popen([sys.executable, "-m", "xmonitor", "--bootstrap-servers", broker.bootstrap,
                              "--config", str(cfg), "--sli-dir", str(sli)], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: len(list(sli.rglob("*.parquet"))) >= 4, 60, 0.2, "xmonitor writing 4 SLI intervals")
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
