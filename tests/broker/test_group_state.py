"""The pure group state machine: transitions, membership, protocol selection, static members, timeouts."""

import pytest

from broker.coordinator.group_state import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Group,
    GroupState,
    IllegalStateTransition,
    Member,
    OffsetAndMetadata,
    decode_subscription_topics,
    new_member_id,
)
from tests.broker.test_group_coordinator import subscription


def member(mid, protocols=(("range", b"r"),), instance=None, session=10_000, rebalance=30_000):
    return Member(mid, instance, "c", "/h", rebalance, session, "consumer", list(protocols))


def test_member_id_format():
    mid = new_member_id("client")
    assert mid.startswith("client-") and len(mid) == len("client-") + 36


def test_transitions_follow_kafka():
    g = Group("g")
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.STABLE, 1)
    for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
                  GroupState.PREPARING_REBALANCE, GroupState.EMPTY, GroupState.DEAD):
        g.transition_to(state, 5)
    assert g.state_timestamp == 5
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.EMPTY, 6)


def test_first_member_sets_type_and_leads_and_leadership_moves_on_removal():
    g = Group("g")
    g.add(member("a"))
    g.add(member("b"))
    assert g.protocol_type == "consumer" and g.leader_id == "a"
    g.remove("a")
    assert g.leader_id == "b"
    g.remove("b")
    assert g.leader_id is None and g.remove("b") is None


def test_supports_protocols():
    g = Group("g")
    assert not g.supports_protocols("", ["range"])
    assert g.supports_protocols("consumer", ["range"])
    g.add(member("a", [("range", b""), ("roundrobin", b"")]))
    assert g.supports_protocols("consumer", ["roundrobin"])
    assert not g.supports_protocols("consumer", ["sticky"])
    assert not g.supports_protocols("connect", ["range"])


def test_protocol_selection_by_votes():
    g = Group("g")
    g.add(member("a", [("range", b""), ("roundrobin", b"")]))
    g.add(member("b", [("roundrobin", b""), ("range", b""), ("sticky", b"")]))
    g.add(member("c", [("roundrobin", b""), ("range", b"")]))
    assert g.candidate_protocols() == {"range", "roundrobin"}
    assert g.select_protocol() == "roundrobin"
    g.remove("c")
    assert g.select_protocol() == "range"   # one vote each: the first member's preference wins


def test_all_members_joined_counts_pending_members():
    g = Group("g")
    a, b = member("a"), member("b")
    g.add(a)
    g.add(b)
    a.awaiting_join = True
    assert not g.has_all_members_joined() and g.not_yet_rejoined_members() == [b]
    b.awaiting_join = True
    assert g.has_all_members_joined()
    g.add_pending_member("p", 100)
    assert not g.has_all_members_joined()
    assert g.expired_pending_members(99) == [] and g.expired_pending_members(100) == ["p"]


def test_next_generation_and_joined_leader():
    g = Group("g")
    g.add(member("a"))
    g.add(member("b", protocols=[("range", subscription("t", "u"))]))
    g.members["b"].awaiting_join = True
    g.transition_to(GroupState.PREPARING_REBALANCE, 1)
    g.maybe_elect_joined_leader()
    assert g.leader_id == "b"
    g.remove("a")
    g.init_next_generation(2)
    assert (g.state, g.generation_id, g.protocol_name) == (GroupState.COMPLETING_REBALANCE, 1, "range")
    assert g.subscribed_topics == {"t", "u"} and not g.is_subscribed_to_topic("v")
    g.transition_to(GroupState.PREPARING_REBALANCE, 3)
    g.remove("b")
    g.init_next_generation(4)
    assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == (GroupState.EMPTY, 2, None, None)
    assert g.subscribed_topics == set()


def test_static_membership_replace_and_fence():
    g = Group("g")
    g.add(member("old", instance="i"))
    g.add(member("x"))
    assert g.static_member_id("i") == "old"
    m = g.replace_static_member("i", "old", "new")
    assert m.member_id == "new" and g.leader_id == "new" and list(g.members) == ["x", "new"]
    assert g.is_static_member_fenced("old", "i")
    assert g.validate_member("old", "i") == "fenced"
    assert g.validate_member("old", None) == "unknown"
    assert g.validate_member("new", "i") is None


def test_session_expiry():
    m = member("a", session=10_000)
    m.last_heartbeat = 1000
    assert not m.session_expired(10_999) and m.session_expired(11_000)
    assert m.session_deadline() == 11_000
    m.awaiting_sync = True
    assert not m.session_expired(1_000_000) and m.session_deadline() is None
    m.awaiting_sync, m.awaiting_join = False, True
    assert not m.session_expired(1_000_000)
    m.is_new = True
    assert m.session_expired(1000 + NEW_MEMBER_JOIN_TIMEOUT_MS)
    g = Group("g")
    g.add(member("b"))
    g.members["b"].last_heartbeat = 0
    g.join_deadline = 5000
    assert g.next_deadline() == 5000 and [x.member_id for x in g.expired_members(10_000)] == ["b"]


def test_offset_expiry_rules():
    retention = 1000
    g = Group("g")   # standalone consumer (no protocol type): by commit timestamp
    g.offsets[("t", 0)] = OffsetAndMetadata(1, -1, "", commit_timestamp=0)
    g.offsets[("t", 1)] = OffsetAndMetadata(1, -1, "", commit_timestamp=500)
    g.offsets[("t", 2)] = OffsetAndMetadata(1, -1, "", commit_timestamp=900, expire_timestamp=1200)
    assert g.expired_offsets(1000, retention) == [("t", 0)]
    assert sorted(g.expired_offsets(1200, retention)) == [("t", 0), ("t", 2)]
    # An empty consumer group counts from when it became empty.
    g.protocol_type = "consumer"
    g.state_timestamp = 800
    assert g.expired_offsets(1700, retention) == [("t", 2)]   # an explicit expire timestamp always wins
    assert sorted(g.expired_offsets(1800, retention)) == [("t", 0), ("t", 1), ("t", 2)]
    # A stable consumer group only expires topics nobody subscribes to.
    g.state = GroupState.STABLE
    g.subscribed_topics = {"t"}
    g.offsets[("u", 0)] = OffsetAndMetadata(1, -1, "", commit_timestamp=0)
    assert g.expired_offsets(5000, retention) == [("u", 0)]
    g.subscribed_topics = None
    assert g.expired_offsets(5000, retention) == []


def test_decode_subscription_topics():
    assert decode_subscription_topics(subscription("a", "b")) == {"a", "b"}
    assert decode_subscription_topics(b"\x00") is None
    assert decode_subscription_topics(b"\xff\xff") is None
    assert decode_subscription_topics(b"\x00\x00\x00\x00\x00\x05") is None
