"""benchmarks/rebalance_time.py's arithmetic, on hand-made callback timelines (no broker)."""

from __future__ import annotations

import pytest

from benchmarks.rebalance_member import config
from benchmarks.rebalance_time import balanced, empty_time, measure, summarize

F = frozenset


def test_balanced_needs_every_partition_once_and_equal_shares():
    assert balanced([F(range(0, 4)), F(range(4, 8)), F(range(8, 12))])
    assert balanced([F({0, 1, 2}), F({3, 4, 5}), F({6, 7, 8}), F({9, 10, 11})])
    assert not balanced([F(range(0, 4)), F(range(4, 8)), F(range(8, 11))])          # 11 missing
    assert not balanced([F(range(0, 5)), F(range(4, 8)), F(range(8, 12))])          # 4 held twice
    assert not balanced([F(range(0, 5)), F(range(5, 8)), F(range(8, 12))])          # 5/3/4
    assert not balanced([F(range(0, 12)), F(), F(), F()])


def test_empty_time_counts_only_the_window():
    tl = [(0.0, F({1})), (10.0, F()), (10.4, F({1, 2})), (11.0, F()), (11.2, F({3}))]
    assert empty_time(tl, 5.0, 12.0) == pytest.approx(0.4 + 0.2)
    assert empty_time(tl, 10.2, 10.3) == pytest.approx(0.1)   # window inside one empty stretch
    assert empty_time(tl, 10.5, 10.9) == 0.0
    assert empty_time([], 1.0, 3.0) == 2.0                        # never assigned: empty all along
    assert empty_time([(2.0, F({0}))], 1.0, 3.0) == pytest.approx(1.0)


def test_measure_eager_pause_and_incremental_none():
    sub = 100.0
    eager = {"0": [(90.0, F({0, 1})), (100.3, F()), (100.5, F({0}))],
             "1": [(90.0, F({2, 3})), (100.35, F()), (100.5, F({2}))],
             "new": [(100.52, F({1, 3}))]}
    assert measure(sub, eager, ["0", "1"]) == {"rebalance_s": pytest.approx(0.52), "pause_s": pytest.approx(0.2),
                                               "after_notice_s": pytest.approx(0.22)}
    incremental = {"0": [(90.0, F({0, 1})), (100.3, F({0}))],
                   "1": [(90.0, F({2, 3})), (100.3, F({2}))],
                   "new": [(100.6, F({1})), (100.9, F({1, 3}))]}
    assert measure(sub, incremental, ["0", "1"]) == {"rebalance_s": pytest.approx(0.9), "pause_s": 0.0,
                                                     "after_notice_s": pytest.approx(0.6)}


def test_summarize_medians_and_ratio_ours_over_kafka():
    runs = {"kafkascope": {"eager": [{"rebalance_s": x, "pause_s": x / 2, "after_notice_s": x}
                                     for x in (1.0, 3.0, 2.0)]},
            "kafka-4.1": {"eager": [{"rebalance_s": x, "pause_s": x, "after_notice_s": 1.0} for x in (4.0, 4.0, 9.0)]}}
    out = summarize(runs)
    assert out["median"]["kafkascope"]["eager"] == {"rebalance_s": 2.0, "pause_s": 1.0, "after_notice_s": 2.0}
    assert out["ratio_ours_over_kafka"] == {"eager": {"rebalance_s": 0.5, "pause_s": 0.25, "after_notice_s": 2.0}}
    assert summarize({"kafkascope": runs["kafkascope"]})["ratio_ours_over_kafka"] == {}


def test_member_configs_per_protocol():
    eager = config("b:1", "g", "eager", 500)
    assert (eager["group.protocol"], eager["partition.assignment.strategy"], eager["heartbeat.interval.ms"]) == (
        "classic", "range", 500)
    assert config("b:1", "g", "cooperative", 500)["partition.assignment.strategy"] == "cooperative-sticky"
    kip848 = config("b:1", "g", "consumer", 500)
    # under KIP-848 the client may not set these: librdkafka refuses them with group.protocol=consumer
    assert kip848["group.protocol"] == "consumer" and "heartbeat.interval.ms" not in kip848
    assert "partition.assignment.strategy" not in kip848 and "session.timeout.ms" not in kip848
