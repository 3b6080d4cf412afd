"""Group API handlers against a stub broker: each version's kio request in, each version's response encodes."""

import asyncio
from types import SimpleNamespace

import pytest

from broker.config import BrokerConfig
from broker.controller.state import PartitionState
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.coordinator.offsets_schema import GroupMetadataKey, decode_group_metadata_value
from broker.errors import ErrorCode, InvalidRequest
from broker.metadata import BrokerInfo
from broker.protocol.api import RequestContext
from broker.protocol.codec import build, encode_response, request_class
from broker.protocol.handlers import groups
from common.clock import ManualClock
from tests.broker.test_group_coordinator import MemoryOffsetsLog, subscription


def stub_broker():
    config = BrokerConfig(offsets_topic_num_partitions=4, group_initial_rebalance_delay_ms=0)
    topics = {"t": SimpleNamespace(partitions=2)}
    offsets_log = MemoryOffsetsLog()
    coordinator = GroupCoordinator(config, ManualClock(), offsets_log)
    coordinator.load()
    metadata = SimpleNamespace(topic=topics.get, brokers=lambda: [BrokerInfo(1, "h", 9092)],
                               partition_state=lambda t, p: PartitionState((1,), 1, 0, (1,)))
    part = SimpleNamespace(log=SimpleNamespace(log_end_offset=1))

    async def replicated(_part, _last, _timeout):
        return ErrorCode.none

    replicas = SimpleNamespace(leader_partition=lambda t, p: part, wait_for_replication=replicated)
    return SimpleNamespace(node_id=1, advertised_host="h", advertised_port=9092, metadata=metadata,
                           replicas=replicas, config=config,
                           ensure_offsets_topic=lambda: True,
                           ensure_txn_state_topic=lambda: False,  # too few brokers for __transaction_state
                           group_coordinator=coordinator, offsets_log=offsets_log, authorizer=None)


def call(broker, fn, api_key, version, body, client_host="127.0.0.1"):
    req = build(request_class(api_key, version), body)
    ctx = RequestContext(broker, api_key, version, 1, "cid", client_host)  # the server passes the bare address
    resp = asyncio.run(fn(ctx, req))
    encode_response(api_key, version, 1, resp)   # every field the version has must be buildable
    return resp


def join_body(member_id=""):
    return {"group_id": "g", "session_timeout": 10000, "rebalance_timeout": 10000, "member_id": member_id,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": subscription("t")}], "reason": None}


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator(version):
    b = stub_broker()
    body = {"key": "g", "key_type": 0, "coordinator_keys": ["g", "h"]}
    resp = call(b, groups.handle_find_coordinator, 10, version, body)
    if version >= 4:
        assert [c["node_id"] for c in resp["coordinators"]] == [1, 1]
    else:
        assert (resp["node_id"], resp["host"], resp["port"]) == (1, "h", 9092)
    if version >= 1:
        txn = call(b, groups.handle_find_coordinator, 10, version, {**body, "key_type": 1})
        entry = txn["coordinators"][0] if version >= 4 else txn
        assert entry["error_code"] == ErrorCode.coordinator_not_available


@pytest.mark.parametrize("version", range(0, 10))
def test_group_lifecycle_every_join_version(version):
    b = stub_broker()
    resp = call(b, groups.handle_join_group, 11, version, join_body())
    if version >= 4:
        assert resp["error_code"] == ErrorCode.member_id_required
        resp = call(b, groups.handle_join_group, 11, version, join_body(resp["member_id"]))
    assert resp["error_code"] == ErrorCode.none and resp["generation_id"] == 1
    member = resp["member_id"]
    assert resp["leader"] == member and len(resp["members"]) == 1
    sync_version = min(version, 5)
    sync = call(b, groups.handle_sync_group, 14, sync_version, {
        "group_id": "g", "generation_id": 1, "member_id": member, "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b"A"}]})
    assert sync["error_code"] == ErrorCode.none and sync["assignment"] == b"A"
    hb = call(b, groups.handle_heartbeat, 12, min(version, 4), {
        "group_id": "g", "generation_id": 1, "member_id": member, "group_instance_id": None})
    assert hb["error_code"] == ErrorCode.none
    leave_version = min(version, 5)
    leave = call(b, groups.handle_leave_group, 13, leave_version, {
        "group_id": "g", "member_id": member,
        "members": [{"member_id": member, "group_instance_id": None, "reason": None}]})
    if leave_version >= 3:
        assert leave["members"][0]["error_code"] == ErrorCode.none
    assert leave["error_code"] == ErrorCode.none


def test_member_client_host_is_javas_inet_address_string():
    """Kafka records clientAddress.toString(): "/127.0.0.1" in DescribeGroups and in the group metadata record."""
    b = stub_broker()
    joined = call(b, groups.handle_join_group, 11, 3, join_body())
    call(b, groups.handle_sync_group, 14, 3, {"group_id": "g", "generation_id": 1, "member_id": joined["member_id"],
                                               "assignments": [{"member_id": joined["member_id"], "assignment": b""}]})
    described = call(b, groups.handle_describe_groups, 15, 5, {"groups": ["g"]})
    assert [m["client_host"] for m in described["groups"][0]["members"]] == ["/127.0.0.1"]
    stored = [decode_group_metadata_value(v) for k, v in b.offsets_log.records()
              if isinstance(k, GroupMetadataKey) and v is not None]
    assert stored and all([m.client_host for m in s.members] == ["/127.0.0.1"] for s in stored)


@pytest.mark.parametrize(("host", "java"), [
    ("127.0.0.1", "/127.0.0.1"), ("::1", "/0:0:0:0:0:0:0:1"), ("2001:db8::ff00:42:8329", "/2001:db8:0:0:0:ff00:42:8329"),
    ("::ffff:10.0.0.1", "/10.0.0.1"), ("fe80::1%eth0", "/fe80:0:0:0:0:0:0:1%eth0")])
def test_java_client_host(host, java):
    assert groups.java_client_host(host) == java


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_and_fetch(version):
    b = stub_broker()
    commit = call(b, groups.handle_offset_commit, 8, version, {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "retention_time": -1, "topics": [
            {"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2, "committed_metadata": "m"},
                {"partition_index": 9, "committed_offset": 5, "committed_leader_epoch": -1,
                 "committed_metadata": None}]},
            {"name": "nope", "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": None}]}]})
    errors = [p["error_code"] for t in commit["topics"] for p in t["partitions"]]
    assert errors == [ErrorCode.none, ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_or_partition]
    fetch_version = version
    body = {"group_id": "g", "topics": None, "require_stable": False,
            "groups": [{"group_id": "g", "member_id": None, "member_epoch": -1, "topics": None}]}
    fetched = call(b, groups.handle_offset_fetch, 9, fetch_version, body)
    topics = fetched["groups"][0]["topics"] if fetch_version >= 8 else fetched["topics"]
    assert topics[0]["partitions"][0]["committed_offset"] == 5
    assert topics[0]["partitions"][0]["metadata"] == "m"


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_fetch_null_topics_returns_every_committed_offset(version):
    """OffsetFetchRequest.json: null Topics (v2-7) / Groups[].Topics (v8+) asks for all of the group's offsets."""
    b = stub_broker()
    b.group_coordinator.commit_offsets("g", -1, "", None, [("t", 0, 5, 1, "a"), ("t", 1, 6, -1, None),
                                                           ("u", 0, 7, -1, "c")])
    b.group_coordinator.commit_offsets("other", -1, "", None, [("t", 0, 99, -1, None)])
    fetched = call(b, groups.handle_offset_fetch, 9, version, {
        "group_id": "g", "topics": None, "require_stable": False,
        "groups": [{"group_id": "g", "member_id": None, "member_epoch": -1, "topics": None},
                   {"group_id": "nobody", "member_id": None, "member_epoch": -1, "topics": None}]})
    entries = fetched["groups"] if version >= 8 else [fetched]
    got = {(t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"])
           for t in entries[0]["topics"] for p in t["partitions"]}
    assert got == {("t", 0): (5, "a"), ("t", 1): (6, ""), ("u", 0): (7, "c")}
    if version >= 8:
        assert entries[1]["topics"] == [] and entries[1]["error_code"] == ErrorCode.none


@pytest.mark.parametrize(("version", "body"), [
    (1, {"group_id": "g", "topics": None}),   # Topics is nullable from v2 only
    (5, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": None}]}),
    (8, {"groups": None}),
    (9, {"groups": [{"group_id": "g", "topics": [{"name": "t", "partition_indexes": None}]}]})])
def test_offset_fetch_null_where_the_schema_forbids_it_is_unparseable(version, body):
    """Kafka cannot read such a request (non-nullable field serialized as null) and closes the connection."""
    b = stub_broker()
    b.group_coordinator.commit_offsets("g", -1, "", None, [("t", 0, 5, -1, None)])
    with pytest.raises(InvalidRequest, match="non-nullable"):
        call(b, groups.handle_offset_fetch, 9, version, body)


def test_offset_fetch_v1_named_partitions():
    b = stub_broker()
    fetched = call(b, groups.handle_offset_fetch, 9, 1, {
        "group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]})
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == -1


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_list_delete(version):
    b = stub_broker()
    b.group_coordinator.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    described = call(b, groups.handle_describe_groups, 15, version, {
        "groups": ["solo", "missing"], "include_authorized_operations": False})
    solo, missing = described["groups"]
    assert solo["group_state"] == "Empty" and solo["error_code"] == ErrorCode.none
    assert missing["error_code"] == (ErrorCode.group_id_not_found if version >= 6 else ErrorCode.none)
    listed = call(b, groups.handle_list_groups, 16, min(version, 5), {"states_filter": [], "types_filter": []})
    assert [g["group_id"] for g in listed["groups"]] == ["solo"]
    deleted = call(b, groups.handle_delete_groups, 42, min(version, 2), {"groups_names": ["solo", "missing"]})
    assert [r["error_code"] for r in deleted["results"]] == [ErrorCode.none, ErrorCode.group_id_not_found]


def test_list_groups_filters():
    b = stub_broker()
    b.group_coordinator.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    assert call(b, groups.handle_list_groups, 16, 5, {"states_filter": ["Stable"], "types_filter": []})["groups"] == []
    assert call(b, groups.handle_list_groups, 16, 5, {"states_filter": [], "types_filter": ["consumer"]})[
        "groups"] == []
    assert len(call(b, groups.handle_list_groups, 16, 5, {"states_filter": [], "types_filter": ["Classic"]})[
        "groups"]) == 1


def test_offset_delete():
    b = stub_broker()
    b.group_coordinator.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    resp = call(b, groups.handle_offset_delete, 47, 0, {
        "group_id": "solo", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
    assert resp["error_code"] == ErrorCode.none
    assert resp["topics"][0]["partitions"][0]["error_code"] == ErrorCode.none
    missing = call(b, groups.handle_offset_delete, 47, 0, {"group_id": "nope", "topics": []})
    assert missing["error_code"] == ErrorCode.group_id_not_found
