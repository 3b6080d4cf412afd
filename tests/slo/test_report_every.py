"""`kafkascope slo report --every`: a real process (one Spark session) on small live-shaped SLI files and a lag
monitor history-dir; two cycles, `latest` moves, the first report is pruned, SIGTERM ends it."""

import datetime as dt
import json
import signal
import subprocess
import sys
import time

from common.polling import wait_until
from lagmonitor import history
from slo import live
from slo.generate import GenConfig, generate


def _lag_history(root, now_ms):
    """What the lag monitor's HistorySink writes: one group committing on one partition, 20 minutes."""
    sink = history.HistorySink(root)
    for k in range(20):
        t = now_ms - (20 - k) * 60_000
        sink.broker(t, history.BROKER_OFFSET, "orders", 0, 100 * (k + 1), 1)
        sink.commit(t + 1, history.COMMIT, "g1", "orders", 0, 100 * (k + 1), k, t)
    sink.flush()


def test_two_cycles_latest_moves_old_pruned(tmp_path):
    now_ms = int(time.time() * 1000)
    start = dt.datetime.fromtimestamp((now_ms // 60_000 - 60) * 60, dt.UTC)   # the last hour, whole minutes
    sli, lag, out = tmp_path / "sli", tmp_path / "lag-history", tmp_path / "reports"
    generate(GenConfig(days=1 / 24, partitions=3, interval_s=60, start=start), sli, per_interval=True)
    (sli / live.SYNTHETIC_MARKER).unlink()          # stands in for xmonitor's files: not synthetic
    _lag_history(lag, now_ms)
    cmd = [sys.executable, "-m", "kafkascope", "slo", "report", "--sli-dir", str(sli), "--lag-dir", str(lag),
           "--out", str(out), "--every", "2s", "--keep", "1"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def running(value):
        if p.poll() is not None:   # a dead scheduler: fail now, with its output, not after the timeout
            raise AssertionError(f"scheduler exited {p.returncode}: {p.stderr.read()[-3000:]}")
        return value

    try:
        first = wait_until(lambda: running(live.latest(out)), 240, 0.2, "first report")
        second = wait_until(lambda: running((r := live.latest(out)) != first and r), 120, 0.2, "second report")
        wait_until(lambda: not first.exists(), 30, 0.1, "first report pruned")   # --keep 1
    finally:
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    # every 2 s a third cycle may publish (and, with --keep 1, prune the second) before SIGTERM lands
    last = live.latest(out)
    assert second.name > first.name and last is not None and last.name >= second.name
    assert sorted(x.name for x in out.glob("report-*"))[-1] == last.name
    assert not list(out.glob(".tmp-*"))
    runs = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert len(runs) >= 2 and all(r["synthetic"] is False for r in runs)
    report = json.loads((last / "report.json").read_text())
    as_of = live.parse_iso(report["window"]["as_of"])
    # the window ends at the run (its last whole minute past the open intervals), not at the data's end
    assert as_of % 60_000 == 0 and now_ms - 90_000 <= as_of <= int(time.time() * 1000) - live.LIVE_GRACE_MS
    c = report["completeness"]
    assert 0.9 <= c["hours_with_data"] <= 1.0 and c["coverage"] < 0.01 and c["window_hours"] == 14 * 24
    assert report["source"]["synthetic"] is False
    assert [g["group"] for g in report["lag"]["groups"]] == ["g1"] and report["lag"]["groups"][0]["instants"] > 0
    sched = live.read_schedule(out)
    assert sched["every_seconds"] == 2 and sched["keep"] == 1 and sched["last_report"] == live.latest(out).name


def test_report_on_compacted_days_equals_the_per_interval_files(tmp_path):
    """The scheduler reads closed days from its cache (slo.live.compact): the same report as from the raw files."""
    from slo.generate import Incident
    from slo.jobs.slo_report import slo_report
    from slo.spark import session
    from slo.specs import load_specs

    sli, cache = tmp_path / "sli", tmp_path / "cache"
    start = dt.datetime(2026, 11, 24, 20, tzinfo=dt.UTC)
    generate(GenConfig(days=0.5, partitions=3, interval_s=60, start=start,
                       incidents=(Incident.parse("broker-down@3h+20m:broker=1"),)), sli, per_interval=True)
    end = live.parse_iso("2026-11-25T08:00:00Z")
    assert live.compact(sli, cache, end) == ["2026-11-24"]
    spark = session("test-slo-compact", shuffle_partitions=2)
    try:
        raw = slo_report(spark, sli, load_specs(), tmp_path / "raw", end_ms=end, window_s=86400)
        cached = slo_report(spark, sli, load_specs(), tmp_path / "cached", end_ms=end, window_s=86400,
                            sli_cache=cache)
    finally:
        spark.stop()
    assert cached["completeness"]["rows"] == raw["completeness"]["rows"] == 12 * 60 * 3
    for key in ("window", "completeness", "slos", "latency"):
        assert cached[key] == raw[key], key
    write = next(s for s in raw["slos"] if s["name"] == "write-availability")
    assert write["occurrences"]["bad"] == 20 * 10    # the broker-down (1 of 3 partitions, 10 records a minute)
