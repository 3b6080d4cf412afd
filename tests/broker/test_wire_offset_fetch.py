"""OffsetFetch's null topic arrays over raw frames against a real broker (OffsetFetchRequest.json semantics)."""

from __future__ import annotations

import struct
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10


@pytest.fixture
def committed(shared_broker, topic_name):
    """A group (assign-style commits) with offsets on two partitions of topic_name; yields (group, topic)."""
    create_topic(shared_broker.port, topic_name, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(shared_broker.port) as w:
        assert w.call(FIND_COORDINATOR, 3, {"key": group, "key_type": 0}).error_code == ErrorCode.none
        resp = w.call(OFFSET_COMMIT, 8, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time": -1, "topics": [{"name": topic_name, "partitions": [
                {"partition_index": p, "committed_offset": 10 + p, "committed_leader_epoch": -1,
                 "committed_metadata": f"m{p}"} for p in (0, 1)]}]})
        assert [p.error_code for p in resp.topics[0].partitions] == [ErrorCode.none] * 2
    return group, topic_name


@pytest.mark.parametrize("version", [2, 5, 6, 7, 8, 9])  # 6+: flexible (compact null); 8+: per-group topics
def test_null_topics_fetch_every_committed_offset(shared_broker, committed, version):
    group, topic = committed
    body = {"group_id": group, "topics": None, "require_stable": False,
            "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}]}
    with WireClient(shared_broker.port) as w:
        resp = w.call(OFFSET_FETCH, version, body)
    entry = resp.groups[0] if version >= 8 else resp
    assert entry.error_code == ErrorCode.none
    got = {(t.name, p.partition_index): (p.committed_offset, p.metadata) for t in entry.topics for p in t.partitions}
    assert got == {(topic, 0): (10, "m0"), (topic, 1): (11, "m1")}


def test_v1_null_topics_closes_the_connection_as_kafka(shared_broker, committed):
    """v1's Topics is not nullable: Kafka cannot parse the request and closes the connection."""
    group = committed[0].encode()
    client_id = b"wire-test"
    frame = (struct.pack(">hhih", OFFSET_FETCH, 1, 1, len(client_id)) + client_id
             + struct.pack(">h", len(group)) + group + struct.pack(">i", -1))
    with WireClient(shared_broker.port) as w:
        w.send_raw(frame)
        assert w.is_closed_by_peer()
