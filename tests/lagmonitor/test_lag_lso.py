"""Lag to the Last Stable Offset (KIP-98, docs/lag-monitor.md §6): on a transactional partition the log end counts
commit markers and an open transaction a read_committed consumer cannot reach. Burrow's lag (to the log end) never
reaches 0 there; the status measures lag to the LSO by default, and both lags are in the API and /metrics."""

from __future__ import annotations

import json

import pytest

from lagmonitor.api import LagAPI
from lagmonitor.config import ConfigError, LagConfig, load_config
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.rules import Status
from lagmonitor.storage import StorageConfig
from tests.lagmonitor.test_lag_metrics import series

NOW = 1_700_000_000_000


def monitor(status_lag: str = "lso") -> LagMonitor:
    return LagMonitor(LagConfig(storage=StorageConfig(intervals=3),
                                evaluator=EvaluatorConfig(expire_cache_s=0, status_lag=status_lag)))


def poll(m: LagMonitor, at: int, log_end: int, lso: int | None) -> None:
    m.broker_offsets({("t", 0): log_end}, {"t": 1}, at, None if lso is None else {("t", 0): lso})


def caught_up_transactional(m: LagMonitor) -> None:
    """Three commits at offset 12 a minute ago: everything committed read, a transaction open from offset 12
    (its first record at 12, so log end 13 and LSO 12), and the producer writing into it since."""
    for i in range(3):
        poll(m, NOW - 60_000 + i * 1000, 13, 12)
        m.commit("g", "t", 0, 12, NOW - 60_000 + i * 1000, i, NOW - 60_000 + i * 1000)
    for i in range(3):
        poll(m, NOW - 2000 + i * 1000, 20 + i, 12)


def test_a_caught_up_read_committed_group_is_ok_with_lso_lag_zero_and_burrow_lag_above():
    m = monitor()
    caught_up_transactional(m)
    g = m.evaluator.group("g", NOW)
    p = g.partitions[0]
    assert (g.status, p.status) == (Status.OK, Status.OK)
    assert (p.current_lag, p.lso_lag, g.totallag, g.lso_totallag) == (22 - 12, 0, 10, 0)
    assert p.end.lag == 1 and p.end.lso_lag == 0   # each commit keeps both lags as stored
    assert p.lag_seconds == 0.0                    # measured against the end the status uses


def test_burrows_choice_flags_the_same_group():
    m = monitor("high-watermark")
    caught_up_transactional(m)
    g = m.evaluator.group("g", NOW)
    assert g.status is Status.ERR and g.partitions[0].status is Status.STOP
    assert g.partitions[0].lso_lag == 0   # still reported


def test_a_group_that_stops_below_the_lso_is_stop():
    m = monitor()
    for i in range(3):
        poll(m, NOW - 60_000 + i * 1000, 13 + i, 12 + i)
        m.commit("g", "t", 0, 10 + i, NOW - 60_000 + i * 1000, i, NOW - 60_000 + i * 1000)
    for i in range(3):
        poll(m, NOW - 2000 + i * 1000, 30 + i, 29 + i)
    p = m.evaluator.group("g", NOW).partitions[0]
    assert (p.status, p.current_lag, p.lso_lag) == (Status.STOP, 32 - 12, 31 - 12)


def test_without_transactions_both_choices_agree():
    """LSO = log end on a plain topic: the status is Burrow's, whichever end it measures."""
    results = []
    for choice in ("lso", "high-watermark"):
        m = monitor(choice)
        for i in range(3):
            poll(m, NOW - 60_000 + i * 1000, 50 + 10 * i, 50 + 10 * i)
            m.commit("g", "t", 0, 45 + 10 * i, NOW - 60_000 + i * 1000, i, NOW - 60_000 + i * 1000)
        g = m.evaluator.group("g", NOW)
        results.append((g.status, g.partitions[0].status, g.totallag, g.lso_totallag))
    # lag 5 at every commit, never decreasing: Burrow's WARN either way
    assert results[0] == results[1] == (Status.WARN, Status.WARN, 5, 5)


def test_without_an_lso_the_log_end_decides():
    """A replay (the history holds log ends only) or a poll whose read_committed request failed."""
    m = monitor()
    for i in range(3):
        poll(m, NOW - 60_000 + i * 1000, 13, None)
        m.commit("g", "t", 0, 12, NOW - 60_000 + i * 1000, i, NOW - 60_000 + i * 1000)
    p = m.evaluator.group("g", NOW).partitions[0]
    assert p.status is Status.STOP and p.lso_lag is None


def test_api_and_metrics_carry_the_lso_lag():
    m = monitor()
    caught_up_transactional(m)
    api = LagAPI(m, lambda: NOW)
    text = api.metrics()
    labels = '{cluster="local",consumer_group="g",topic="t",partition="0"}'
    assert series(text, "kafkascope_consumer_partition_lso_lag") == {labels: 0}
    assert series(text, "burrow_kafka_consumer_partition_lag") == {labels: 10}
    assert series(text, "kafkascope_consumer_lso_lag_total") == {'{cluster="local",consumer_group="g"}': 0}
    code, body = api.handle("GET", "/v3/kafka/local/consumer/g/lag")
    status = body["status"]
    assert code == 200 and status["status"] == "OK"
    assert (status["totallag"], status["lso_totallag"]) == (10, 0)
    assert (status["partitions"][0]["current_lag"], status["partitions"][0]["lso_lag"]) == (10, 0)
    code, body = api.handle("GET", "/v3/kafka/local/consumer/g")
    assert body["topics"]["t"][0]["lso-lag"] == 0 and body["topics"]["t"][0]["current-lag"] == 10


def test_snapshot_keeps_the_lso_and_reads_older_snapshots(tmp_path):
    m = monitor()
    caught_up_transactional(m)
    state = json.loads(json.dumps(m.storage.to_state()))
    fresh = monitor()
    fresh.storage.load_state(state)
    assert fresh.evaluator.group("g", NOW).partitions[0].lso_lag == 0
    del state["stable"]
    for slots in state["groups"]["g"]["topics"].values():
        for ring, _, _ in slots:
            for entry in ring:
                del entry[5]   # a ring entry written before lso_lag existed
    old = monitor()
    old.storage.load_state(state)
    assert old.evaluator.group("g", NOW).partitions[0].lso_lag is None


def test_status_lag_config_key():
    assert load_config({"evaluator": {"status-lag": "high-watermark"}}).evaluator.status_lag == "high-watermark"
    assert load_config({}).evaluator.status_lag == "lso"
    with pytest.raises(ConfigError, match="status-lag"):
        load_config({"evaluator": {"status-lag": "log-end"}})


def test_a_commit_at_a_markers_offset_is_caught_up_once_the_gap_is_read_empty():
    """The group committed right after the transaction's last record, at the commit marker's offset (17), which
    it never receives; the LSO is 18. Until the collector reads [17, 18) empty the gap counts."""
    m = monitor()
    for i in range(3):
        poll(m, NOW - 60_000 + i * 1000, 18, 18)
        m.commit("g", "t", 0, 5 + 6 * i, NOW - 60_000 + i * 1000, i, NOW - 60_000 + i * 1000)
    poll(m, NOW - 1000, 21, 18)
    assert m.storage.marker_candidates(100) == {("t", 0, 17, 18)}
    assert m.storage.marker_candidates(0) == set()
    p = m.evaluator.group("g", NOW).partitions[0]
    assert (p.status, p.lso_lag) == (Status.STOP, 1)
    m.storage.set_markers_only("t", 0, 17, 18)
    m.evaluator.invalidate()
    assert m.storage.marker_candidates(100) == set()
    p = m.evaluator.group("g", NOW).partitions[0]
    assert (p.status, p.lso_lag, p.current_lag, p.lag_seconds) == (Status.OK, 0, 4, 0.0)
    poll(m, NOW, 30, 25)   # the transaction committed: records to read again, the old range is dropped
    m.evaluator.invalidate()
    assert m.storage.markers_only[("t", 0)] == {}
    assert m.evaluator.group("g", NOW).partitions[0].lso_lag == 25 - 17
