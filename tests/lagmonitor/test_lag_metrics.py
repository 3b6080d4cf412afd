"""The lag monitor's kafka_exporter series mean what kafka_exporter's do: kafka_consumergroup_lag is -1 for a
partition without a committed offset and left out of kafka_consumergroup_lag_sum; kafka_consumergroup_members."""

from __future__ import annotations

import json

from lagmonitor.api import LagAPI
from lagmonitor.config import LagConfig
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.storage import LagStorage, StorageConfig

NOW = 1_700_000_000_000


def series(text: str, name: str) -> dict[str, float]:
    """{label text: value} of one metric name in Prometheus text."""
    return {line[len(name):].rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith(name + "{")}


def scrape() -> str:
    m = LagMonitor(LagConfig(storage=StorageConfig(intervals=3), evaluator=EvaluatorConfig(expire_cache_s=0)))
    m.broker_offsets({("t", 0): 100, ("t", 1): 100, ("t", 2): 100, ("u", 0): 5}, {"t": 3, "u": 1}, NOW)
    m.commit("g", "t", 0, 60, NOW - 2000, 1, NOW)
    m.commit("g", "t", 2, 90, NOW - 2000, 2, NOW)    # nothing ever committed on t-1
    m.storage.set_owners("g", [("c1", "/127.0.0.1", (("t", 0), ("t", 1))), ("c2", "/127.0.0.1", (("u", 0),))])
    m.storage.set_owners("joined-only", [("c", "/127.0.0.1", ()), ("c", "/127.0.0.1", ()), ("c", "/h", ())])
    return LagAPI(m, lambda: NOW).metrics()


def test_lag_is_minus_one_without_a_committed_offset():
    lag = series(scrape(), "kafka_consumergroup_lag")
    assert lag == {'{consumergroup="g",topic="t",partition="0"}': 40,
                   '{consumergroup="g",topic="t",partition="1"}': -1,
                   '{consumergroup="g",topic="t",partition="2"}': 10}   # topic u: no offset at all, no series


def test_lag_sum_per_topic_leaves_the_minus_ones_out():
    text = scrape()
    assert series(text, "kafka_consumergroup_lag_sum") == {'{consumergroup="g",topic="t"}': 50}
    # Burrow's series keep Burrow's meaning: no offset is a current lag of 0.
    assert series(text, "burrow_kafka_consumer_lag_total") == {'{cluster="local",consumer_group="g"}': 50}
    assert series(text, "burrow_kafka_consumer_partition_lag")[
        '{cluster="local",consumer_group="g",topic="t",partition="1"}'] == 0


def test_members_from_the_last_group_metadata_record():
    assert series(scrape(), "kafka_consumergroup_members") == {'{consumergroup="g"}': 2,
                                                                '{consumergroup="joined-only"}': 3}


def test_member_counts_follow_records_deletes_and_snapshots():
    s = LagStorage(StorageConfig(group_denylist="^hidden"))
    s.set_owners("g", [("c", "/h", ()), ("c", "/h", ())])
    s.set_owners("hidden", [("c", "/h", ())])
    s.set_owners("g", [])                        # the group went empty
    assert s.members == {"g": 0}
    again = LagStorage(s.config)
    again.load_state(json.loads(json.dumps(s.to_state())))
    assert again.members == {"g": 0}
    state = s.to_state()
    del state["members"]                         # a snapshot from before member counts
    again.load_state(state)
    assert again.members == {}
    s.delete_group("g")
    assert s.members == {}
