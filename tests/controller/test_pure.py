"""Pure assignment and election decisions."""

from __future__ import annotations

from collections import Counter

import pytest

from broker.controller import election as el
from broker.controller.assignment import assign_new_partitions, assign_replicas, rack_alternated
from broker.controller.state import NO_LEADER
from broker.errors import KafkaError


def test_rack_unaware_matches_kafka_fixed_start():
    # Kafka's AdminRackAwareTest/AdminUtilsTest expected layout for brokers 0..4, start index 0
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got == {0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
                   5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2)}


def test_leaders_and_replicas_spread_evenly():
    got = assign_replicas([1, 2, 3], 30, 2)
    leaders = Counter(r[0] for r in got.values())
    assert set(leaders.values()) == {10}
    assert all(len(set(r)) == 2 for r in got.values())
    assert set(Counter(b for r in got.values() for b in r).values()) == {20}


def test_rack_aware_every_partition_spans_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assert rack_alternated(racks) == [1, 3, 5, 2, 4, 6]
    got = assign_replicas(racks, 12, 3)
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == 3
    assert set(Counter(r[0] for r in got.values()).values()) == {2}
    # RF above the number of racks: every rack used, then brokers repeat racks
    two = assign_replicas({1: "a", 2: "a", 3: "b", 4: "b"}, 4, 3)
    for replicas in two.values():
        assert {"a", "b"} <= {("a" if b < 3 else "b") for b in replicas} and len(set(replicas)) == 3


def test_replication_factor_checks_and_new_partitions():
    with pytest.raises(KafkaError):
        assign_replicas([1, 2], 1, 3)
    existing = {0: (2, 3), 1: (3, 1)}
    new = assign_new_partitions({1: None, 2: None, 3: None}, existing, 5)
    assert sorted(new) == [2, 3, 4] and all(len(set(r)) == 2 for r in new.values())
    with pytest.raises(KafkaError):
        assign_new_partitions({1: None}, existing, 2)


def test_clean_election_prefers_assignment_order_in_isr_and_live():
    d = el.reconcile((1, 2, 3), leader=1, isr=(1, 2, 3), live={2, 3}, unclean_enabled=False)
    assert d == el.Decision(2, (2, 3))
    d = el.reconcile((1, 2, 3), leader=1, isr=(1, 3), live={2, 3}, unclean_enabled=False)
    assert d.leader == 3 and d.isr == (3,)


def test_offline_without_unclean_keeps_last_isr_member():
    d = el.reconcile((1, 2), leader=1, isr=(1,), live={2}, unclean_enabled=False)
    assert d == el.Decision(NO_LEADER, (1,))
    # already offline: nothing to write
    assert el.reconcile((1, 2), leader=NO_LEADER, isr=(1,), live={2}, unclean_enabled=False) is None
    # the ISR member returns: clean election
    assert el.reconcile((1, 2), leader=NO_LEADER, isr=(1,), live={1, 2}, unclean_enabled=False).leader == 1


def test_unclean_election_is_flagged():
    d = el.reconcile((1, 2), leader=1, isr=(1,), live={2}, unclean_enabled=True)
    assert d == el.Decision(2, (2,), unclean=True)


def test_dead_follower_leaves_isr_and_shutdown_moves_leadership():
    assert el.reconcile((1, 2, 3), 1, (1, 2, 3), {1, 3}, False) == el.Decision(1, (1, 3))
    d = el.reconcile((1, 2, 3), 1, (1, 2, 3), {1, 2, 3}, False, shutting_down={1})
    assert d == el.Decision(2, (2, 3))
    # nobody else in the ISR: the shutting-down leader stays
    assert el.reconcile((1, 2), 1, (1,), {1, 2}, False, shutting_down={1}) is None
    # a shutting-down follower leaves the ISR
    assert el.reconcile((1, 2, 3), 1, (1, 2, 3), {1, 2, 3}, False, shutting_down={3}) == el.Decision(1, (1, 2))


def test_preferred_election_and_imbalance():
    assert el.preferred((1, 2), 2, (1, 2), {1, 2}) == ("elected", el.Decision(1, (1, 2)))
    assert el.preferred((1, 2), 1, (1, 2), {1, 2})[0] == "not_needed"
    assert el.preferred((1, 2), 2, (2,), {1, 2})[0] == "not_available"
    parts = [((1, 2), 2), ((1, 2), 1), ((2, 1), 2), ((1, 3), 3), ((3, 1), 3)]
    assert el.imbalance(parts) == {1: (3, 2), 2: (1, 0), 3: (1, 0)}
    assert el.imbalanced_brokers(parts, 10) == {1}
    assert el.imbalanced_brokers(parts, 70) == set()
    assert el.preferred_imbalance_count(parts) == 2
    assert el.unclean_request((1, 2), 1, (1,), {1, 2})[0] == "not_needed"
    assert el.unclean_request((1, 2), NO_LEADER, (1,), {2}) == ("elected", el.Decision(2, (2,), unclean=True))
    assert el.unclean_enabled({"unclean.leader.election.enable": "true"}, False)
    assert not el.unclean_enabled({}, False)
