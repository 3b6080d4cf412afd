"""The consumer-group APIs through the in-process harness: the whole broker (group coordinator, its timers,
`__consumer_offsets`) on a manual clock, members on their own connections, waits ended by advancing the clock."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.broker.harness import Client, Harness
from tests.broker.test_group_coordinator import subscription

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN, HEARTBEAT, SYNC, DESCRIBE_GROUPS = 8, 9, 10, 11, 12, 14, 15
CREATE_TOPICS = 19
SESSION_MS, INITIAL_DELAY_MS = 10_000, 3000  # the delay is Kafka's default group.initial.rebalance.delay.ms


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path) as harness:
        resp = harness.request(CREATE_TOPICS, 7, {
            "topics": [{"name": "t", "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout": 5000, "validate_only": False})
        assert resp.topics[0].error_code == ErrorCode.none
        yield harness


def join(c: Client, member_id: str = ""):
    return c.send(JOIN, 9, {"group_id": "g", "session_timeout": SESSION_MS, "rebalance_timeout": 30_000,
                            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
                            "protocols": [{"name": "range", "metadata": subscription("t")}], "reason": None})


def known_member(c: Client) -> str:
    """JoinGroup v4+: the first join only hands out a member id (MEMBER_ID_REQUIRED, KIP-394)."""
    first = join(c).result()
    assert first.error_code == ErrorCode.member_id_required and first.member_id
    return first.member_id


def sync(c: Client, generation: int, member_id: str, assignments: dict[str, bytes]):
    return c.send(SYNC, 5, {"group_id": "g", "generation_id": generation, "member_id": member_id,
                            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                            "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()]})


def heartbeat(c: Client, generation: int, member_id: str) -> ErrorCode:
    return c.request(HEARTBEAT, 4, {"group_id": "g", "generation_id": generation, "member_id": member_id,
                                    "group_instance_id": None}).error_code


def commit(c: Client, generation: int, member_id: str, offset: int) -> ErrorCode:
    resp = c.request(OFFSET_COMMIT, 8, {
        "group_id": "g", "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "retention_time": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": "m"}]}]})
    return resp.topics[0].partitions[0].error_code


def committed(c: Client) -> int:
    resp = c.request(OFFSET_FETCH, 8, {"require_stable": False, "groups": [
        {"group_id": "g", "member_id": None, "member_epoch": -1,
         "topics": [{"name": "t", "partition_indexes": [0]}]}]})
    [group] = resp.groups
    assert group.error_code == ErrorCode.none
    return group.topics[0].partitions[0].committed_offset


def group_state(c: Client) -> tuple[str, int]:
    [group] = c.request(DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False}).groups
    return group.group_state, len(group.members)


def test_one_member_cycle_and_its_session_expiring(h):
    coordinator = h.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators[0]
    assert (coordinator.error_code, coordinator.node_id) == (ErrorCode.none, h.broker.node_id)
    member = known_member(h.client)
    joined = join(h.client, member)
    h.advance(INITIAL_DELAY_MS - 1)
    assert not joined.done()                    # a new group waits for more members to join
    h.advance(1)
    resp = joined.result()
    assert (resp.error_code, resp.generation_id, resp.leader) == (ErrorCode.none, 1, member)
    assert [m.member_id for m in resp.members] == [member]
    synced = sync(h.client, 1, member, {member: b"plan"}).result()
    assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"plan")
    assert group_state(h.client) == ("Stable", 1)

    assert commit(h.client, 1, member, 42) == ErrorCode.none
    assert committed(h.client) == 42
    h.advance(SESSION_MS - 1000)
    assert heartbeat(h.client, 1, member) == ErrorCode.none  # in time: the session starts over
    h.advance(SESSION_MS - 1)
    assert group_state(h.client) == ("Stable", 1)
    h.advance(2)                                               # no heartbeat for a whole session
    assert heartbeat(h.client, 1, member) == ErrorCode.unknown_member_id
    assert group_state(h.client) == ("Empty", 0)
    assert commit(h.client, 1, member, 43) == ErrorCode.unknown_member_id
    assert committed(h.client) == 42                           # an empty group keeps its offsets


def test_two_members_on_two_connections(h):
    a, b = h.client, h.connect("10.0.0.2")
    ma, mb = known_member(a), known_member(b)
    ja, jb = join(a, ma), join(b, mb)
    h.advance(INITIAL_DELAY_MS)
    # A member joined during the initial delay: it starts over (Kafka's InitialDelayedJoin), for one more delay.
    assert not (ja.done() or jb.done())
    h.advance(INITIAL_DELAY_MS)
    ra, rb = ja.result(), jb.result()
    assert ra.generation_id == rb.generation_id == 1 and ra.leader == rb.leader
    leader, follower = (a, b) if ra.leader == ma else (b, a)
    lid, fid = (ma, mb) if leader is a else (mb, ma)
    assert len((ra if leader is a else rb).members) == 2 and (rb if leader is a else ra).members == ()

    waiting = sync(follower, 1, fid, {})
    assert not waiting.done()                  # a follower waits for the leader's assignment
    assert sync(leader, 1, lid, {lid: b"L", fid: b"F"}).result().assignment == b"L"
    assert waiting.result().assignment == b"F"  # answered by the leader's request, the clock still

    # Only the leader heartbeats: the follower's session ends and the group rebalances around the leader.
    h.advance(SESSION_MS // 2)
    assert heartbeat(leader, 1, lid) == ErrorCode.none
    h.advance(SESSION_MS // 2 + 1)
    assert heartbeat(leader, 1, lid) == ErrorCode.rebalance_in_progress
    assert heartbeat(follower, 1, fid) == ErrorCode.unknown_member_id
    rejoined = join(leader, lid).result()      # the only member left: the rebalance completes at once
    assert (rejoined.generation_id, [m.member_id for m in rejoined.members]) == (2, [lid])
