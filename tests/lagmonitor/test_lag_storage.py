"""Burrow's window storage: insert order, duplicates, min-distance merge, expiry, allow/deny lists, snapshots."""

from __future__ import annotations

import json

import pytest

from lagmonitor.evaluator import Evaluator, EvaluatorConfig, lag_seconds
from lagmonitor.rules import Status
from lagmonitor.storage import LagStorage, StorageConfig

NOW = 1_700_000_000_000


def store(**cfg) -> LagStorage:
    s = LagStorage(StorageConfig(**{"intervals": 3, **cfg}))
    s.set_broker_offset("t", 0, 1000, NOW, partition_count=2)
    return s


def ring(s, group="g", topic="t", p=0):
    return [(e.offset, e.order, e.lag) for e in s.groups[group].topics[topic][p].ring]


def commit(s, order, offset=None, ts=None, group="g", p=0, now=NOW):
    return s.add_commit(group, "t", p, order * 10 if offset is None else offset,
                        NOW + order * 1000 if ts is None else ts, order, now)


def test_appends_in_order_compute_lag_and_keep_the_last_intervals():
    s = store()
    for order in (1, 2, 3, 4):
        assert commit(s, order)
    assert ring(s) == [(20, 2, 980), (30, 3, 970), (40, 4, 960)]
    assert s.groups["g"].last_commit == NOW + 4000


def test_out_of_order_inserts_have_null_lag_and_do_not_move_last_commit():
    s = store(intervals=4)
    commit(s, 5)
    commit(s, 2)          # prepend into a partial ring
    commit(s, 4)          # insert between
    assert ring(s) == [(20, 2, None), (40, 4, None), (50, 5, 950)]
    assert s.groups["g"].last_commit == NOW + 5000
    commit(s, 6)
    commit(s, 3)          # full ring: insert after order 2, the oldest falls off
    assert ring(s) == [(30, 3, None), (40, 4, None), (50, 5, 950), (60, 6, 940)]


def test_duplicates_and_commits_older_than_a_full_window_are_dropped():
    s = store()
    for order in (1, 2, 3):
        commit(s, order)
    assert not commit(s, 2, offset=999)
    assert not commit(s, 1, offset=999)   # ring full and oldest order ≥ new
    assert not commit(s, 0)
    assert ring(s) == [(10, 1, 990), (20, 2, 980), (30, 3, 970)]


def test_dropped_before_broker_offsets_or_for_unknown_partitions():
    s = store()
    assert not s.add_commit("g", "other", 0, 1, NOW, 1, NOW)      # topic unknown to the broker poller
    assert not s.add_commit("g", "t", 2, 1, NOW, 1, NOW)          # partition ≥ partition count
    assert not s.add_commit("g", "t", -1, 1, NOW, 1, NOW)
    assert not s.add_commit("g", "t", 1, 1, NOW, 1, NOW)          # no broker offset fetched yet for p1
    assert "g" not in s.groups


def test_new_group_gets_every_partition_slot_without_a_ring():
    s = store()
    commit(s, 1)
    views = s.fetch_group("g", NOW + 5000)
    assert [len(v.offsets) for v in views] == [3, 0]
    assert [v.offsets[:2] for v in views][0] == [None, None]


def test_min_distance_merge_keeps_the_older_timestamp():
    s = store(min_distance_s=5)
    commit(s, 1, ts=NOW)
    commit(s, 2, ts=NOW + 2000)            # within 5 s: overwrites order 1, keeps its timestamp
    commit(s, 3, ts=NOW + 4999)            # still within 5 s of the kept timestamp
    [e] = s.groups["g"].topics["t"][0].ring
    assert (e.offset, e.order, e.timestamp) == (30, 3, NOW)
    commit(s, 4, ts=NOW + 5000)            # 5 s apart: a new slot
    assert [(x.order, x.timestamp) for x in s.groups["g"].topics["t"][0].ring] == [(3, NOW), (4, NOW + 5000)]


def test_min_distance_zero_still_merges_when_timestamps_go_backwards():
    s = store()
    commit(s, 1, ts=NOW)
    commit(s, 2, ts=NOW - 1)
    assert [(e.order, e.timestamp) for e in s.groups["g"].topics["t"][0].ring] == [(2, NOW)]


def test_old_commits_are_dropped_and_idle_groups_expire_on_fetch():
    s = store(expire_group_s=60)
    assert not commit(s, 1, ts=NOW - 61_000)
    assert commit(s, 2, ts=NOW - 59_000)
    assert s.fetch_group("g", NOW) is not None
    assert s.fetch_group("g", NOW + 1999) is not None  # (now_s - expire) * 1000 is not yet > last_commit
    assert s.fetch_group("g", NOW + 2000) is None
    assert "g" not in s.groups


@pytest.mark.parametrize("allow,deny,stored", [
    (None, None, {"app-1", "burrow-x", "test"}),
    ("^app", None, {"app-1"}),
    ("p-", None, {"app-1"}),               # unanchored search, like Go's MatchString
    (None, "burrow", {"app-1", "test"}),
    ("a|t", "^te", {"app-1"}),
])
def test_group_allow_and_deny_lists(allow, deny, stored):
    s = store(group_allowlist=allow, group_denylist=deny)
    for g in ("app-1", "burrow-x", "test"):
        s.add_commit(g, "t", 0, 1, NOW, 1, NOW)
        s.set_owners(g, [("c", "/h", (("t", 1),))])
    assert set(s.groups) == stored


def test_owners_create_null_rings_and_an_empty_member_list_clears_them():
    s = store()
    commit(s, 1)
    s.set_broker_offset("t", 1, 50, NOW, partition_count=2)
    s.set_owners("g", [("client-1", "/10.0.0.1", (("t", 1),))])
    view = s.fetch_group("g", NOW)[1]
    assert (view.offsets, view.owner, view.client_id) == ([None] * 3, "/10.0.0.1", "client-1")
    s.set_owners("g", [])
    assert all(v.owner == "" for v in s.fetch_group("g", NOW))


def test_current_lag_uses_the_newest_broker_offset_and_floors_at_zero():
    s = store()
    commit(s, 1, offset=900)
    s.set_broker_offset("t", 0, 1500, NOW + 1000, 2)
    assert s.fetch_group("g", NOW + 1000)[0].current_lag == 600
    commit(s, 2, offset=1600)
    assert s.fetch_group("g", NOW + 2000)[0].current_lag == 0


def test_deletes_topic_group_and_offset_tombstones():
    s = store()
    commit(s, 1)
    commit(s, 1, group="h")
    assert not s.delete_offset("h", "t", 0) and ring(s, "h") == [(10, 1, 990)]   # Burrow ignores them
    s.config = StorageConfig(intervals=3, drop_on_offset_tombstone=True)
    assert s.delete_offset("h", "t", 0)
    assert "h" not in s.groups
    assert s.consumers_of("t") == ["g"]
    s.delete_topic("t")
    assert s.groups["g"].topics == {} and s.topic_offsets("t") is None
    assert s.delete_group("g") and not s.delete_group("g")


def test_broker_history_is_a_ring_of_intervals():
    s = store()
    for i in range(5):
        s.set_broker_offset("t", 0, 2000 + i, NOW + i, 2)
    commit(s, 1)
    assert s.fetch_group("g", NOW)[0].broker_offsets == [2002, 2003, 2004]
    assert s.topic_offsets("t") == [2004]


def test_snapshot_round_trip_through_json():
    s = store(min_distance_s=1)
    for order in (1, 2, 3):
        commit(s, order)
    s.set_owners("g", [("c", "/h", (("t", 0),))])
    again = LagStorage(s.config)
    again.load_state(json.loads(json.dumps(s.to_state())))
    assert again.to_state() == s.to_state()
    assert again.fetch_group("g", NOW) == s.fetch_group("g", NOW)


@pytest.mark.parametrize("history,committed,now,expected", [
    ([], 5, 10_000, None),
    ([(100, 0), (200, 10_000)], 200, 20_000, 0.0),
    ([(100, 0), (200, 10_000)], 150, 20_000, 15.0),     # interpolated: offset 150 was the log end at 5 s
    ([(100, 10_000), (200, 20_000)], 50, 30_000, 25.0),  # extrapolated at 10 offsets/s to 5 s
    ([(100, 10_000), (100, 20_000)], 50, 30_000, 20.0),  # a log that did not move: the oldest poll time
])
def test_lag_seconds_estimate(history, committed, now, expected):
    assert lag_seconds(history, committed, now) == expected


def test_evaluator_caches_for_expire_cache_seconds():
    s = store()
    commit(s, 1)
    ev = Evaluator("c", s, EvaluatorConfig(expire_cache_s=10))
    first = ev.group("g", NOW + 1000)
    assert first.status is Status.ERR  # a single commit with lag and positive age: STOP
    s.delete_group("g")
    assert ev.group("g", NOW + 5000) is first
    assert ev.group("g", NOW + 11_000).status is Status.NOTFOUND
