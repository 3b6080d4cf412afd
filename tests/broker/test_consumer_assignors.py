"""The KIP-848 server-side assignors: uniform (balanced, sticky) and range (co-partitioned)."""

import pytest

from broker.coordinator.consumer.assignors import MemberSpec, assignor_names, range_assign, uniform_assign


def spec(mid, topics, current=None, instance=None):
    return MemberSpec(mid, instance, frozenset(topics), {t: frozenset(ps) for t, ps in (current or {}).items()})


def flat(assignment):
    return {(t, p) for t, ps in assignment.items() for p in ps}


def counts(result):
    return {m: len(flat(a)) for m, a in result.items()}


def test_uniform_balances_and_covers_every_partition():
    members = {m: spec(m, {"a", "b"}) for m in ("m1", "m2", "m3")}
    result = uniform_assign(members, {"a": 4, "b": 3})
    everything = [tp for a in result.values() for tp in flat(a)]
    assert sorted(everything) == sorted({("a", p) for p in range(4)} | {("b", p) for p in range(3)})
    assert len(everything) == len(set(everything))
    assert sorted(counts(result).values()) == [2, 2, 3]


def test_uniform_is_sticky_when_a_member_joins():
    before = uniform_assign({m: spec(m, {"t"}) for m in ("m1", "m2")}, {"t": 6})
    members = {m: spec(m, {"t"}, before[m]) for m in ("m1", "m2")}
    members["m3"] = spec("m3", {"t"})
    after = uniform_assign(members, {"t": 6})
    assert counts(after) == {"m1": 2, "m2": 2, "m3": 2}
    # Only the partitions the newcomer needs moved; the others kept theirs.
    assert flat(after["m1"]) <= flat(before["m1"]) and flat(after["m2"]) <= flat(before["m2"])


def test_uniform_is_sticky_when_a_member_leaves():
    three = {m: spec(m, {"t"}) for m in ("m1", "m2", "m3")}
    before = uniform_assign(three, {"t": 6})
    members = {m: spec(m, {"t"}, before[m]) for m in ("m1", "m2")}
    after = uniform_assign(members, {"t": 6})
    assert counts(after) == {"m1": 3, "m2": 3}
    assert flat(before["m1"]) <= flat(after["m1"]) and flat(before["m2"]) <= flat(after["m2"])


def test_uniform_heterogeneous_subscriptions():
    members = {"m1": spec("m1", {"a"}), "m2": spec("m2", {"a", "b"}), "m3": spec("m3", {"b"})}
    result = uniform_assign(members, {"a": 3, "b": 3})
    assert {t for t, _ in flat(result["m1"])} <= {"a"} and {t for t, _ in flat(result["m3"])} <= {"b"}
    assert sorted(counts(result).values()) == [2, 2, 2]


def test_uniform_drops_unsubscribed_and_vanished_partitions():
    members = {"m1": spec("m1", {"a"}, {"a": {0, 5}, "gone": {0}}), "m2": spec("m2", {"a"}, {"a": {0}})}
    result = uniform_assign(members, {"a": 2})
    assert flat(result["m1"]) | flat(result["m2"]) == {("a", 0), ("a", 1)}
    assert ("a", 0) in flat(result["m1"])   # kept by the first holder only, never duplicated


def test_range_is_co_partitioned():
    members = {m: spec(m, {"a", "b"}) for m in ("m2", "m1", "m3")}
    result = range_assign(members, {"a": 7, "b": 7})
    assert result["m1"] == {"a": frozenset({0, 1, 2}), "b": frozenset({0, 1, 2})}
    assert result["m2"] == {"a": frozenset({3, 4}), "b": frozenset({3, 4})}
    assert result["m3"] == {"a": frozenset({5, 6}), "b": frozenset({5, 6})}


def test_range_orders_static_members_by_instance_id():
    members = {"zz": spec("zz", {"t"}, instance="i1"), "aa": spec("aa", {"t"}, instance="i2")}
    result = range_assign(members, {"t": 2})
    assert result["zz"] == {"t": frozenset({0})} and result["aa"] == {"t": frozenset({1})}


def test_assignor_names_accept_kafka_class_names():
    assert assignor_names(["org.apache.kafka.coordinator.group.assignor.RangeAssignor", "uniform"]) == [
        "range", "uniform"]
    with pytest.raises(ValueError, match="sticky"):
        assignor_names(["sticky"])
