"""Issue 21's proof: `kafkascope up --bootstrap-servers` against a separately started 3-broker cluster of ours
publishes live SLO reports that see a fault. One broker is paused (SIGSTOP) while the probe sends; the report whose
window covers the pause has the SLI files' counts, write availability below 1, and names the paused broker among the
leaders that used the error budget. Ctrl-C then leaves the watched cluster running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkascope.local import process as proc
from kafkascope.local.cluster import Cluster, wait_for
from tests.dashboards.test_up_watch import READY, REPO, TOPIC, topics

CLUSTER = "theirs"
PAUSE_S = 45


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """Three brokers of ours (ZooKeeper mode), started apart from `up`. The ZooKeeper session outlives most of the
    pause: with the default 18 s the controller moves the paused broker's leadership before the probe's in-flight
    record times out (message.timeout.ms 20 s), librdkafka delivers it to the new leader, and, as the probe sends
    nothing more to a partition while a record is in flight, the pause costs latency but no failed send."""
    c = Cluster(tmp_path_factory.mktemp("three"), brokers=3, zookeeper_session_timeout_ms=60_000).start()
    yield c
    c.shutdown()


def sli_totals(sli_dir: Path, start_ms: int, end_ms: int) -> dict[str, int]:
    """Sums of the probe's SLI files over the intervals starting in [start_ms, end_ms) (the report's rule)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = [f for f in sorted(sli_dir.glob("date=*/*.parquet")) if not f.name.startswith((".", "_"))]
    table = pa.concat_tables([pq.read_table(f, columns=["interval_start", "produce_attempts", "produce_successes",
                                                        "records_consumed", "records_lost", "records_late"])
                              for f in files])
    t = pc.cast(table["interval_start"], pa.int64())
    table = table.filter(pc.and_(pc.greater_equal(t, start_ms), pc.less(t, end_ms)))
    s = {c: int(pc.sum(table[c]).as_py() or 0) for c in table.column_names if c != "interval_start"}
    s["rows"] = table.num_rows
    return s


def leaders(bootstrap: str) -> tuple[dict[int, int], int]:
    """The probe topic's leaders by partition, and the controller's id."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    return {p.id: p.leader for p in md.topics[TOPIC].partitions.values()}, md.controller_id


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_live_report_sees_a_paused_broker(three, tmp_path):
    from slo import live

    data = tmp_path / "state"
    reports = data / "slo-reports"
    cmd = [sys.executable, "-m", "kafkascope", "up", "--bootstrap-servers", three.bootstrap, "--data-dir", str(data),
           "--create-probe-topic", "--cluster-name", CLUSTER, "--report-every", "1m", "--no", "streamlit"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    paused, resumed = None, False
    try:
        for line in p.stdout:
            lines.append(line)
            if READY in line:
                break
        assert "kafkascope is up" in "".join(lines), "".join(lines)
        first = wait_for(lambda: live.latest(reports), timeout=300, interval=1, what="first live report")
        first_s = time.monotonic() - t0
        # a broker that leads probe partitions, not the controller (its failover is another story)
        led, controller = leaders(three.bootstrap)
        paused = next(b for b in sorted(set(led.values())) if b >= 0 and b != controller)
        led_by_paused = sorted(pt for pt, b in led.items() if b == paused)
        pause_ms = int(time.time() * 1000)
        three.broker(paused).pause()
        time.sleep(PAUSE_S)
        three.broker(paused).resume()
        resume_ms = int(time.time() * 1000)
        resumed = True

        def covering():
            r = live.latest(reports)
            if r is None:
                return None
            body = json.loads((r / "report.json").read_text())
            return (r, body) if live.parse_iso(body["window"]["as_of"]) >= resume_ms + 30_000 else None

        report, body = wait_for(covering, timeout=240, interval=2, what="a report whose window covers the pause")
        covered_s = time.monotonic() - t0
        pids = [tuple(map(int, f.read_text().split())) for f in (data / "pids").glob("*.pid")]
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[0]
        assert p.returncode == 0 and "stopped" in rest, "".join(lines) + rest
        wait_for(lambda: not [pid for pid, st in pids if proc.alive(pid, st)], timeout=10,
                 what="no process of the stack left")
    finally:
        if paused is not None and not resumed:
            three.broker(paused).resume()
        if p.poll() is None:
            p.kill()
            p.wait(10)

    w = body["window"]
    start_ms, end_ms = live.parse_iso(w["start"]), live.parse_iso(w["as_of"])
    assert start_ms <= pause_ms and resume_ms <= end_ms, w
    slos = {s["name"]: s for s in body["slos"]}
    write, read = slos["write-availability"], slos["read-availability"]
    files = sli_totals(data / "sli", start_ms, end_ms)
    print(f"\nfirst live report {first.name} after {first_s:.1f} s; paused broker {paused} (leads partitions "
          f"{led_by_paused}) {PAUSE_S} s; report {report.name} covering it after {covered_s:.1f} s\n"
          f"SLI files {files}\nwrite {write['occurrences']}\nread {read['occurrences']}\n"
          f"write brokers {write['brokers']}")
    # (1) the report's counts are the SLI files' counts in its window
    assert (write["occurrences"]["total"], write["occurrences"]["good"]) == \
        (files["produce_attempts"], files["produce_successes"])
    assert (read["occurrences"]["total"], read["occurrences"]["good"]) == \
        (files["records_consumed"] + files["records_lost"], files["records_consumed"] - files["records_late"])
    assert body["completeness"]["rows"] == files["rows"]
    # (2) the pause cost writes
    assert write["sli"] < 1 and write["occurrences"]["bad"] > 0
    # (3) the paused broker is named among the leaders that used the budget
    assert paused in {b["leader"] for b in write["brokers"] if b["cluster"] == CLUSTER and b["bad"] > 0}, \
        write["brokers"]
    # Ctrl-C left the watched cluster running
    assert all(b.state == "running" for b in three.brokers), three.status()
    assert TOPIC in topics(three.bootstrap)
