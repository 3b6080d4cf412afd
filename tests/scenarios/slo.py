"""The SLO report on SLI files a real xmonitor wrote: run `kafkascope slo report` and check its counts against the
files (used on our broker by tests/slo and on both backends by tests/interop/test_monitors.py)."""

from __future__ import annotations

import json
import subprocess
import sys
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
