"""KIP-848 consumer groups as pure logic: epochs, revoke-before-assign, leaving, static members, sessions."""

from broker.coordinator.consumer.coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    HeartbeatRequest,
)
from broker.coordinator.consumer.group import ConsumerGroupState
from broker.coordinator.consumer.reconcile import MemberState
from broker.errors import ErrorCode
from common.clock import ManualClock

TOPICS = {"t": 6, "other": 2, "__consumer_offsets": 1}


class Group:
    """A coordinator, a manual clock and helpers that heartbeat like a well-behaved consumer."""

    def __init__(self, **settings):
        self.clock = ManualClock()
        self.coord = ConsumerGroupCoordinator(ConsumerGroupSettings(**settings))
        self.topics = dict(TOPICS)
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, dict[str, frozenset[int]]] = {}

    def now(self):
        return int(self.clock.monotonic() * 1000)

    def hb(self, member, epoch=None, owned=None, **fields):
        req = HeartbeatRequest("g", member, self.epochs.get(member, 0) if epoch is None else epoch,
                               owned=self.owned.get(member, {}) if owned is None else owned, **fields)
        if req.member_epoch == 0:
            req.rebalance_timeout_ms = fields.get("rebalance_timeout_ms", 30_000)
            req.owned = {}
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                req.subscribed_topic_names = ["t"]
        result = self.coord.heartbeat(req, self.topics, self.now())
        if result.error == ErrorCode.none:
            self.epochs[member] = result.member_epoch
            if result.assignment is not None:
                self.owned[member] = dict(result.assignment)   # the client revokes/assigns at once
        return result

    def parts(self, member):
        return {p for ps in self.owned.get(member, {}).values() for p in ps}

    def group(self):
        return self.coord.group("g")


def test_first_member_gets_everything_at_epoch_one():
    g = Group()
    r = g.hb("m1")
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.none, 1, 5000)
    assert r.assignment == {"t": frozenset(range(6))}
    assert g.group().state is ConsumerGroupState.STABLE


def test_revoke_before_assign_when_a_member_joins():
    g = Group()
    g.hb("m1")
    r2 = g.hb("m2")
    # The newcomer is at the new epoch but waits: m1 still owns its target partitions.
    assert r2.member_epoch == 2 and r2.assignment == {}
    assert g.group().members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert g.group().state is ConsumerGroupState.RECONCILING
    r1 = g.hb("m1")
    assert r1.member_epoch == 1 and len(g.parts("m1")) == 3          # revoke first, epoch unchanged
    assert g.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    r1 = g.hb("m1")                                                     # reports the smaller set: revoked
    assert r1.member_epoch == 2 and g.group().members["m1"].state is MemberState.STABLE
    g.hb("m2")
    assert g.parts("m1") | g.parts("m2") == set(range(6)) and not g.parts("m1") & g.parts("m2")
    assert g.group().state is ConsumerGroupState.STABLE


def converge(g, members, rounds=6):
    for _ in range(rounds):
        for m in members:
            assert g.hb(m).error == ErrorCode.none


def test_three_members_split_and_a_leaver_is_incremental():
    g = Group()
    for m in ("m1", "m2", "m3"):
        g.hb(m)
    converge(g, ["m1", "m2", "m3"])
    assert [len(g.parts(m)) for m in ("m1", "m2", "m3")] == [2, 2, 2]
    kept = {m: g.parts(m) for m in ("m1", "m2")}
    r = g.hb("m3", epoch=-1)
    assert (r.error, r.member_epoch) == (ErrorCode.none, -1)
    converge(g, ["m1", "m2"])
    assert all(kept[m] <= g.parts(m) for m in kept)    # the stayers kept theirs and took m3's
    assert g.parts("m1") | g.parts("m2") == set(range(6))


def test_member_epoch_fencing():
    g = Group()
    g.hb("m1")
    g.hb("m2")
    assert g.hb("m1", epoch=7).error == ErrorCode.fenced_member_epoch
    assert g.hb("nobody", epoch=1).error == ErrorCode.unknown_member_id
    converge(g, ["m1", "m2"])
    m1 = g.group().members["m1"]
    # A lost response: the previous epoch is fine while the member owns a subset of its assignment.
    assert g.hb("m1", epoch=m1.previous_member_epoch).error == ErrorCode.none
    bad = {"t": frozenset(range(6))}
    assert g.hb("m1", epoch=m1.previous_member_epoch, owned=bad).error == ErrorCode.fenced_member_epoch


def test_session_timeout_removes_a_silent_member():
    g = Group(session_timeout_ms=6000)
    g.hb("m1")
    g.hb("m2")
    converge(g, ["m1", "m2"])
    for _ in range(3):
        g.clock.advance(2000)
        g.hb("m1")
    assert g.coord.expire(g.now()) == [("g", "m2")]
    converge(g, ["m1"])
    assert g.parts("m1") == set(range(6))
    assert g.coord.next_deadline() == g.now() + 6000


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    g = Group()
    g.hb("m1", rebalance_timeout_ms=1000)
    g.hb("m2")
    g.hb("m1")   # told to revoke
    g.clock.advance(1000)
    g.hb("m2")   # keeps m2's session alive
    assert ("g", "m1") in g.coord.expire(g.now())


def test_static_member_leaves_and_comes_back_with_its_partitions():
    g = Group(session_timeout_ms=10_000)
    g.hb("a1", instance_id="a")
    g.hb("b1", instance_id="b")
    converge(g, ["a1", "b1"])
    a_parts = g.parts("a1")
    r = g.hb("a1", epoch=-2, instance_id="a")
    assert (r.error, r.member_epoch) == (ErrorCode.none, -2)
    epoch = g.group().group_epoch
    assert g.hb("a2", instance_id="a").error == ErrorCode.none       # same instance, new member id
    assert g.group().group_epoch == epoch and g.parts("a2") == a_parts
    assert "a1" not in g.group().members
    assert g.hb("a3", instance_id="a").error == ErrorCode.unreleased_instance_id
    assert g.hb("a1", epoch=1, instance_id="a").error == ErrorCode.fenced_instance_id


def test_static_member_that_does_not_return_is_removed_after_the_session():
    g = Group(session_timeout_ms=10_000)
    g.hb("a1", instance_id="a")
    g.hb("a1", epoch=-2, instance_id="a")
    g.clock.advance(10_000)
    assert g.coord.expire(g.now()) == [("g", "a1")]
    assert g.group().state is ConsumerGroupState.EMPTY


def test_invalid_requests():
    """Kafka 4.1's throwIfConsumerGroupHeartbeatRequestIsInvalid: what a (re)join must carry, in Kafka's order."""
    g = Group()
    join = {"rebalance_timeout_ms": 1, "subscribed_topic_names": ["t"], "owned": {}}
    cases = [
        (HeartbeatRequest("", "m", 0, **join), "GroupId"),
        (HeartbeatRequest("", "", 0, **join), "MemberId"),            # the member id is checked first
        (HeartbeatRequest("g", "m", 0, subscribed_topic_names=["t"], owned={}), "RebalanceTimeoutMs"),
        (HeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, owned={}), "SubscribedTopicRegex"),
        (HeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"]), "TopicPartitions"),
        (HeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"],
                          owned={"t": frozenset({0})}), "TopicPartitions"),
        (HeartbeatRequest("g", "m", 0, instance_id="", **join), "InstanceId"),
        (HeartbeatRequest("g", "m", 0, rack_id="", **join), "RackId"),
        (HeartbeatRequest("g", "m", -2, rebalance_timeout_ms=1), "InstanceId"),
        (HeartbeatRequest("g", "m", -3), "MemberEpoch"),
    ]
    for req, words in cases:
        r = g.coord.heartbeat(req, TOPICS, 0)
        assert r.error == ErrorCode.invalid_request and words in r.message, (req, r)
    for epoch in (3, -1):   # v0 may leave the member id to the coordinator only when joining
        r = g.coord.heartbeat(HeartbeatRequest("g", "", epoch), TOPICS, 0, api_version=0)
        assert (r.error, r.message) == (ErrorCode.invalid_request, "MemberId can't be empty.")
    r = g.coord.heartbeat(HeartbeatRequest("g", "m", 0, server_assignor="sticky", **join), TOPICS, 0)
    assert r.error == ErrorCode.unsupported_assignor
    r = g.coord.heartbeat(HeartbeatRequest("g", "m", 3), TOPICS, 0)
    assert (r.error, r.message) == (ErrorCode.group_id_not_found, "Consumer group g not found.")
    assert g.coord.groups == {}


def test_names_and_regex_together_subscribe_to_both():
    """Kafka does not refuse a subscription by names and regex at once: the member gets both."""
    g = Group()
    r = g.hb("m1", subscribed_topic_names=["t"], subscribed_topic_regex="oth.*")
    assert r.error == ErrorCode.none and set(r.assignment) == {"t", "other"}


def test_v0_generates_the_member_id():
    g = Group()
    r = g.coord.heartbeat(HeartbeatRequest("g", "", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"],
                                           owned={}), TOPICS, 0, api_version=0)
    assert r.error == ErrorCode.none and len(r.member_id) == 22


def test_group_consumer_max_size():
    """Kafka's throwIfConsumerGroupIsFull: a newcomer to a full group gets GROUP_MAX_SIZE_REACHED, members go on;
    a static member returning under a new member id is a newcomer too, as in Kafka."""
    g = Group(max_size=2)
    g.hb("m1")
    g.hb("m2", instance_id="i2")
    r = g.hb("m3")
    assert (r.error, r.message) == (ErrorCode.group_max_size_reached,
                                    "The consumer group has reached its maximum capacity of 2 members.")
    assert set(g.group().members) == {"m1", "m2"}
    converge(g, ["m1", "m2"])
    assert g.hb("m1").error == ErrorCode.none
    assert g.hb("m2", epoch=-2, instance_id="i2").error == ErrorCode.none     # still holds its slot
    assert g.hb("m2b", instance_id="i2").error == ErrorCode.group_max_size_reached
    assert g.hb("m1", epoch=-1).error == ErrorCode.none
    assert g.hb("m3").error == ErrorCode.none


def test_known_member_rejoining_with_epoch_zero_keeps_its_partitions():
    """KAFKA-19233: after FENCED_MEMBER_EPOCH (or a lost answer) a member rejoins with its id and epoch 0; it keeps
    its epoch and gets its current assignment in full, without a new group epoch."""
    g = Group()
    g.hb("m1")
    g.hb("m2")
    converge(g, ["m1", "m2"])
    before = dict(g.owned["m1"])
    group_epoch, member_epoch = g.group().group_epoch, g.epochs["m1"]
    assert g.hb("m1", epoch=member_epoch + 5).error == ErrorCode.fenced_member_epoch
    r = g.hb("m1", epoch=0)
    assert (r.error, r.member_epoch, r.assignment) == (ErrorCode.none, member_epoch, before)
    assert g.group().group_epoch == group_epoch


def test_static_member_heartbeat_names_its_instance():
    """Kafka's throwIfStaticMemberIsUnknown / throwIfInstanceIdIsFenced on a regular heartbeat."""
    g = Group()
    g.hb("a1", instance_id="a")
    r = g.hb("a1", instance_id="zz")
    assert (r.error, r.message) == (ErrorCode.unknown_member_id, "Instance id zz is unknown.")
    g.hb("a1", epoch=-2, instance_id="a")
    g.hb("a2", instance_id="a")
    r = g.hb("a1", epoch=1, instance_id="a")
    assert r.error == ErrorCode.fenced_instance_id and r.message.endswith("was fenced by member a2.")


def test_regex_subscription_follows_new_topics():
    g = Group()
    r = g.hb("m1", subscribed_topic_regex="o.*")
    assert r.assignment == {"other": frozenset({0, 1})}       # not "t", never an internal topic
    g.topics["orders"] = 1
    g.hb("m1")
    assert g.owned["m1"] == {"other": frozenset({0, 1}), "orders": frozenset({0})}
    r = g.hb("m2", subscribed_topic_regex="(")
    assert r.error == ErrorCode.invalid_regular_expression and "m2" not in g.group().members
    assert r.message.startswith("SubscribedTopicRegex `(` is not a valid regular expression: ")


def test_new_partitions_bump_the_group_epoch():
    g = Group()
    g.hb("m1")
    g.topics["t"] = 8
    r = g.hb("m1")
    assert r.member_epoch == 2 and g.parts("m1") == set(range(8))


def test_server_assignor_chooses_range():
    g = Group()
    g.hb("m1", server_assignor="range", subscribed_topic_names=["t", "other"])
    g.hb("m2", server_assignor="range", subscribed_topic_names=["t", "other"])
    converge(g, ["m1", "m2"])
    assert g.group().assignor == "range"
    assert g.owned["m1"] == {"t": frozenset({0, 1, 2}), "other": frozenset({0})}


def test_offset_commit_validation_by_member_epoch():
    g = Group()
    g.hb("m1")
    g.hb("m2")
    group, coord = g.group(), g.coord
    epoch = group.members["m2"].member_epoch
    assert coord.validate_offset_commit(group, "m2", epoch, 9) is None
    assert coord.validate_offset_commit(group, "m2", epoch - 1, 9) == ErrorCode.stale_member_epoch
    assert coord.validate_offset_commit(group, "m2", epoch + 1, 9) == ErrorCode.fenced_member_epoch
    assert coord.validate_offset_commit(group, "m2", epoch, 8) == ErrorCode.unsupported_version
    assert coord.validate_offset_commit(group, "zz", epoch, 9) == ErrorCode.unknown_member_id
    assert coord.validate_offset_commit(group, "", -1, 9) == ErrorCode.unknown_member_id   # not empty
    g.hb("m1", epoch=-1)
    g.hb("m2", epoch=-1)
    assert coord.validate_offset_commit(group, "", -1, 9) is None
    assert coord.validate_offset_fetch(group, None, -1) is None
