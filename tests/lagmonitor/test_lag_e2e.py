"""The live monitor against our real broker: OK, STOP, STALL, REWIND; HTTP API vs /metrics; restart keeps windows.

The scenario bodies are tests/scenarios/lag.py's, which tests/interop/test_monitors.py runs on Apache Kafka too."""

from __future__ import annotations

import time

import pytest

from lagmonitor.collector import Collector
from lagmonitor.config import LagConfig
from lagmonitor.monitor import LagMonitor
from tests.scenarios import lag
from tests.scenarios.lag import CONFIG, Running, Scenario, commit_series


@pytest.fixture
def running(shared_broker):
    r = Running(shared_broker.bootstrap, CONFIG)
    yield r
    r.close()


@pytest.fixture
def scenario(shared_broker, running):
    with lag.scenarios(shared_broker.bootstrap, running) as make:
        yield make


def test_keeps_up_is_ok(scenario):
    lag.keeps_up_is_ok(scenario)


def test_stops_committing_with_lag_is_stop(scenario):
    lag.stops_committing_with_lag_is_stop(scenario)


def test_same_offset_while_lag_grows_is_stall(scenario):
    lag.same_offset_while_lag_grows_is_stall(scenario)


def test_reset_to_earlier_offset_is_rewind(scenario):
    lag.reset_to_earlier_offset_is_rewind(scenario)


def test_http_api_and_metrics_agree(scenario, running):
    lag.http_api_and_metrics_agree(scenario, running)


def test_restart_keeps_windows_without_rereading(shared_broker, tmp_path):
    config = LagConfig(**{**CONFIG.__dict__, "state_dir": str(tmp_path / "state")})
    first = Running(shared_broker.bootstrap, config)
    try:
        s = Scenario(shared_broker.bootstrap, first, 100)
        commit_series(s, [10, 20, 30])
        s.close()
    finally:
        first.close()
    before = first.monitor.storage.to_state()["groups"][s.group]

    second = LagMonitor(config)
    assert second.storage.to_state()["groups"][s.group] == before
    assert second.positions == first.monitor.positions
    applied = []
    original = second.apply_record
    second.apply_record = lambda *a: (applied.append(a), original(*a))
    collector = Collector(shared_broker.bootstrap, second)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        collector.consume(0.2)
    collector.consumer.close()
    mine = [a for a in applied if s.group.encode() in (a[2] or b"")]
    assert mine == []   # nothing of this group is read again
    assert second.storage.to_state()["groups"][s.group] == before
