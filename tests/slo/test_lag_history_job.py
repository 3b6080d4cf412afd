"""The PySpark lag-history job equals the live evaluator on the same recorded history."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow.parquet as pq
import pytest

from lagmonitor.config import LagConfig
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.replay import Daily, Intervals
from lagmonitor.rules import Status
from lagmonitor.storage import StorageConfig

START = int(dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC).timestamp() * 1000)   # crosses midnight
STEP_S = 60


def simulate(history_dir, minutes: int = 90):
    """Drive a live monitor with a scripted cluster; return what its evaluator said at every instant."""
    config = LagConfig(storage=StorageConfig(intervals=5, min_distance_s=15),
                       evaluator=EvaluatorConfig(expire_cache_s=0), history_dir=str(history_dir))
    m = LagMonitor(config)
    rng = random.Random(7)
    log_end = {("orders", 0): 0, ("orders", 1): 0, ("clicks", 0): 0}
    committed = {"steady": {("orders", 0): 0, ("orders", 1): 0}, "flaky": {("clicks", 0): 0},
                 "partial": {("orders", 0): 0}}
    order = 0
    group_runs, part_runs, daily = Intervals(STEP_S * 1000), Intervals(STEP_S * 1000), {}
    for second in range(0, minutes * 60 + 1, 5):
        now = START + second * 1000
        for tp in log_end:
            log_end[tp] += rng.randint(0, 40)
        if second % 10 == 0:
            m.broker_offsets(dict(log_end), {"orders": 2, "clicks": 1}, now)
        if second % 20 == 0 and second < 50 * 60:           # steady keeps up, then stops for good at 50 min
            for tp in committed["steady"]:
                committed["steady"][tp] = log_end[tp] - rng.randint(0, 5)
                order += 1
                m.commit("steady", tp[0], tp[1], committed["steady"][tp], now - 3, order, now)
        if second % 30 == 0:                                # flaky: moves, stalls, rewinds, moves again
            phase = second // 600 % 4
            tp = ("clicks", 0)
            if phase == 0:
                committed["flaky"][tp] = log_end[tp] - 100
            elif phase == 2 and second % 600 == 0:
                committed["flaky"][tp] -= 500
            elif phase == 3:
                committed["flaky"][tp] += 10
            order += 1
            m.commit("flaky", "clicks", 0, committed["flaky"][tp], now - rng.randint(0, 20), order, now)
        if second % 40 == 0 and second >= 10 * 60:           # partial: shares orders, commits one partition only
            committed["partial"][("orders", 0)] = log_end[("orders", 0)] - 200
            order += 1
            m.commit("partial", "orders", 0, committed["partial"][("orders", 0)], now, order, now)
        if second == 70 * 60:
            m.delete_group("steady", now)
        if second % 600 == 0:
            m.save()
        if now % (STEP_S * 1000) == 0:
            for name in committed:
                g = m.evaluator.group(name, now)
                if g.status is Status.NOTFOUND:
                    continue
                group_runs.add((name,), g.status.name, now)
                for p in g.partitions:
                    part_runs.add((name, p.topic, p.partition), p.status.name, now)
                daily.setdefault((name, dt.datetime.fromtimestamp(now / 1000, dt.UTC).strftime("%Y-%m-%d")),
                                 Daily()).add(g)
    m.save()
    return config, group_runs.finish(), part_runs.finish(), daily


@pytest.fixture(scope="module")
def spark():
    from slo.spark import session
    s = session("test-lag-history", shuffle_partitions=2)
    yield s
    s.stop()


def test_history_files_are_partitioned_by_date(tmp_path):
    simulate(tmp_path / "hist", minutes=40)
    for table in ("commits", "broker"):
        dates = sorted(p.name for p in (tmp_path / "hist" / table).iterdir())
        assert dates == ["date=2026-03-01", "date=2026-03-02"]
        assert not list((tmp_path / "hist" / table).rglob(".*tmp"))
    rows = pq.read_table(tmp_path / "hist" / "commits").to_pylist()
    assert {r["kind"] for r in rows} == {"commit"} and len({r["seq"] for r in rows}) == len(rows)


def test_spark_job_equals_live_evaluator(tmp_path, spark):
    from slo.jobs.lag_history import lag_history

    config, live_groups, live_parts, live_daily = simulate(tmp_path / "hist")
    statuses = {s for *_, s, _f, _t in live_parts}
    assert {"OK", "WARN", "STOP", "STALL", "REWIND"} <= statuses, statuses   # the scenario exercises the rules
    assert {(g, t, p) for g, t, p, *_ in live_parts} >= {("steady", "orders", 1), ("partial", "orders", 1)}
    counts = lag_history(spark, tmp_path / "hist", tmp_path / "out", step_s=STEP_S, config=config)
    got = pq.read_table(tmp_path / "out" / "status_intervals").to_pylist()
    groups = sorted((r["group"], r["status"], r["from_ms"], r["to_ms"]) for r in got if r["level"] == "group")
    parts = sorted((r["group"], r["topic"], r["partition"], r["status"], r["from_ms"], r["to_ms"])
                   for r in got if r["level"] == "partition")
    assert groups == live_groups
    assert parts == live_parts
    daily = pq.read_table(tmp_path / "out" / "daily_summary").to_pylist()
    assert counts["daily_summary"] == len(daily) == len(live_daily)
    for r in daily:
        d = live_daily[(r["group"], str(r["date"]))]
        assert (r["instants"], r["max_lag"]) == (d.instants, d.max_lag)
        assert (r["share_ok"], r["share_warn"], r["share_err"]) == pytest.approx(
            (d.ok / d.instants, d.warn / d.instants, d.err / d.instants))
        assert r["max_lag_seconds"] == pytest.approx(d.max_lag_seconds)
