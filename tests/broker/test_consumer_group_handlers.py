"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) through the in-process broker on a manual clock, with
the classic APIs beside them: ListGroups/DescribeGroups, JoinGroup on a consumer group, the empty classic group's
conversion, OffsetCommit v9 by member epoch."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from tests.broker.harness import Harness
from tests.broker.test_group_coordinator import subscription

OFFSET_COMMIT, OFFSET_FETCH, JOIN, DESCRIBE_GROUPS, LIST_GROUPS = 8, 9, 11, 15, 16
CREATE_TOPICS, HEARTBEAT, DESCRIBE = 19, 68, 69
SESSION_MS = 6000


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path, **{"group.consumer.session.timeout.ms": SESSION_MS,
                              "group.consumer.min.session.timeout.ms": 1000,
                              "group.consumer.heartbeat.interval.ms": 1000,
                              "group.consumer.min.heartbeat.interval.ms": 100}) as harness:
        resp = harness.request(CREATE_TOPICS, 7, {
            "topics": [{"name": "t", "num_partitions": 4, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout": 5000, "validate_only": False})
        assert resp.topics[0].error_code == ErrorCode.none
        yield harness


def topic_id(h):
    return h.broker.metadata.topic("t").topic_id


def beat(c, member_id, epoch, owned=None, version=1, group="g", **fields):
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": owned}
    if epoch == 0:
        body.update(rebalance_timeout=30_000, subscribed_topic_names=["t"], topic_partitions=[])
    body.update(fields)
    return c.request(HEARTBEAT, version, body)


def parts(resp):
    if resp.assignment is None:
        return None
    return {p for tp in resp.assignment.topic_partitions for p in tp.partitions}


def owned(h, ps):
    return [{"topic_id": topic_id(h), "partitions": sorted(ps)}]


def test_two_members_reconcile_over_the_wire(h):
    a, b = h.connect(), h.connect()
    r = beat(a, "A", 0)
    assert (r.error_code, r.member_epoch, r.member_id) == (ErrorCode.none, 1, "A")
    assert r.heartbeat_interval.total_seconds() == 1.0 and parts(r) == {0, 1, 2, 3}
    r = beat(b, "B", 0)
    assert r.member_epoch == 2 and parts(r) == set()               # waits for A to revoke
    r = beat(a, "A", 1, owned(h, {0, 1, 2, 3}))
    keep = parts(r)
    assert r.member_epoch == 1 and len(keep) == 2                   # revoke first
    r = beat(a, "A", 1, owned(h, keep))
    assert r.member_epoch == 2
    r = beat(b, "B", 2, owned(h, set()))
    assert parts(r) == {0, 1, 2, 3} - keep

    d = h.request(DESCRIBE, 1, {"group_ids": ["g", "nope"], "include_authorized_operations": False})
    g, missing = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        ErrorCode.none, "Stable", 2, 2, "uniform")
    by_id = {m.member_id: m for m in g.members}
    assert {p for tp in by_id["B"].assignment.topic_partitions for p in tp.partitions} == {0, 1, 2, 3} - keep
    assert by_id["B"].assignment.topic_partitions[0].topic_name == "t" and by_id["B"].member_type == 1
    assert by_id["A"].client_host == "/127.0.0.1"
    assert missing.error_code == ErrorCode.group_id_not_found

    listed = h.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]}).groups
    assert [(x.group_id, x.group_type, x.protocol_type, x.group_state) for x in listed] == [
        ("g", "consumer", "consumer", "Stable")]
    assert h.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]}).groups == ()
    dg = h.request(DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False}).groups[0]
    assert (dg.group_state, dg.protocol_type, len(dg.members)) == ("Stable", "consumer", 2)


def test_errors(h):
    c = h.connect()
    assert beat(c, "", 0).error_code == ErrorCode.invalid_request              # v1: the client names itself
    r = beat(c, "", 0, version=0)
    assert r.error_code == ErrorCode.none and r.member_id                      # v0: the coordinator does
    assert beat(c, "X", 0, server_assignor="nope").error_code == ErrorCode.unsupported_assignor
    unknown = beat(c, "X", 5)
    assert (unknown.error_code, unknown.member_id, unknown.member_epoch) == (ErrorCode.unknown_member_id, None, 0)
    assert beat(c, "X", 5, group="other").error_code == ErrorCode.group_id_not_found
    assert beat(c, r.member_id, 9, version=0).error_code == ErrorCode.fenced_member_epoch
    assert beat(c, "X", 0, subscribed_topic_regex="(", subscribed_topic_names=None).error_code == \
        ErrorCode.invalid_regular_expression
    gone = [{"topic_id": uuid.UUID(int=1), "partitions": [0]}]   # no such topic
    r = beat(c, "Y", 0, topic_partitions=gone)
    assert (r.error_code, r.error_message) == (ErrorCode.invalid_request,
                                               "TopicPartitions must be empty when (re-)joining.")


def test_session_timeout_moves_partitions(h):
    a, b = h.connect(), h.connect()
    beat(a, "A", 0)
    beat(b, "B", 0)
    ra = beat(a, "A", 1, owned(h, {0, 1, 2, 3}))
    mine = parts(ra)
    ra = beat(a, "A", 1, owned(h, mine))
    beat(b, "B", 2, owned(h, set()))
    for _ in range(4):                       # A keeps beating, B falls silent
        h.advance(2000)
        ra = beat(a, "A", ra.member_epoch, owned(h, mine))
        mine = parts(ra) if ra.assignment is not None else mine
    assert ra.member_epoch == 3 and mine == {0, 1, 2, 3}
    assert beat(b, "B", 2).error_code == ErrorCode.unknown_member_id


def test_classic_and_consumer_groups_side_by_side(h):
    c = h.connect()
    beat(c, "A", 0)
    join = {"group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 30_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "reason": None,
            "protocols": [{"name": "range", "metadata": subscription("t")}]}
    assert h.request(JOIN, 9, join).error_code == ErrorCode.inconsistent_group_protocol
    # An empty classic group (offsets only) becomes a consumer group and keeps its offsets.
    assert commit(h, "solo", -1, "", 9, 42) == ErrorCode.none
    r = beat(c, "S", 0, group="solo")
    assert r.error_code == ErrorCode.none and r.member_epoch == 1
    assert fetch(h, "solo") == 42
    assert commit(h, "solo", r.member_epoch, "S", 9, 43) == ErrorCode.none
    assert commit(h, "solo", r.member_epoch - 1, "S", 9, 44) == ErrorCode.stale_member_epoch
    assert commit(h, "solo", r.member_epoch, "S", 8, 44) == ErrorCode.unsupported_version
    assert commit(h, "solo", r.member_epoch, "nobody", 9, 44) == ErrorCode.unknown_member_id
    assert fetch(h, "solo") == 43
    # Once it is empty again a classic consumer may take it back.
    assert beat(c, "S", -1, group="solo").member_epoch == -1
    assert h.request(JOIN, 9, {**join, "group_id": "solo"}).error_code == ErrorCode.member_id_required


def commit(h, group, epoch, member, version, offset):
    resp = h.request(OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
        "group_instance_id": None, "retention_time": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    return resp.topics[0].partitions[0].error_code


def fetch(h, group):
    resp = h.request(OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": [
        {"name": "t", "partition_indexes": [0]}]}], "require_stable": False})
    return resp.groups[0].topics[0].partitions[0].committed_offset


def test_disabled_protocol(tmp_path):
    with Harness(tmp_path, **{"group.coordinator.rebalance.protocols": "classic"}) as h:
        assert beat(h, "A", 0).error_code == ErrorCode.unsupported_version


def test_metadata_by_topic_id(h):
    """librdkafka's KIP-848 consumer looks its assigned topic ids up with Metadata v12 (null name, KIP-516)."""
    import uuid
    resp = h.request(3, 12, {"topics": [{"name": None, "topic_id": topic_id(h)},
                                        {"name": None, "topic_id": uuid.uuid4()}],
                             "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    found, unknown = resp.topics
    assert (found.error_code, found.name, len(found.partitions)) == (ErrorCode.none, "t", 4)
    assert (unknown.error_code, unknown.name) == (ErrorCode.unknown_topic_id, None)


def test_offset_fetch_v9_checks_the_member_epoch(h):
    c = h.connect()
    r = beat(c, "A", 0)
    assert commit(h, "g", r.member_epoch, "A", 9, 7) == ErrorCode.none

    def fetch_v9(member, epoch):
        resp = h.request(OFFSET_FETCH, 9, {"groups": [{"group_id": "g", "member_id": member, "member_epoch": epoch,
                                                       "topics": [{"name": "t", "partition_indexes": [0]}]}],
                                           "require_stable": False})
        g = resp.groups[0]
        return g.error_code, (g.topics[0].partitions[0].committed_offset if g.topics else None)

    assert fetch_v9("A", r.member_epoch) == (ErrorCode.none, 7)
    assert fetch_v9(None, -1) == (ErrorCode.none, 7)                  # an admin read
    assert fetch_v9("A", r.member_epoch - 1)[0] == ErrorCode.stale_member_epoch
    assert fetch_v9("B", 1)[0] == ErrorCode.unknown_member_id


def test_not_coordinator_once_the_offsets_partition_moves(h):
    c = h.connect()
    assert beat(c, "A", 0).error_code == ErrorCode.none
    h.broker.group_coordinator.unload_partition(0)     # leadership of __consumer_offsets-0 went elsewhere
    assert beat(c, "A", 1).error_code == ErrorCode.not_coordinator
    d = h.request(DESCRIBE, 0, {"group_ids": ["g"], "include_authorized_operations": False}).groups[0]
    assert d.error_code == ErrorCode.not_coordinator
