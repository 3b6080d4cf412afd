"""The consumer-group APIs with an authorizer: GROUP_AUTHORIZATION_FAILED, per-topic errors, silent filters."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.authz.test_data_path import create
from tests.broker.harness import Client
from tests.broker.test_inproc_groups import commit, join

OFFSET_FETCH, FIND_COORDINATOR, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 9, 10, 15, 16, 42
T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER


def offset_fetch(c: Client, topics: list[str] | None):
    resp = c.request(OFFSET_FETCH, 8, {"require_stable": False, "groups": [
        {"group_id": "g", "member_id": None, "member_epoch": -1,
         "topics": None if topics is None else [{"name": t, "partition_indexes": [0]} for t in topics]}]})
    return resp.groups[0]


def test_join_group_needs_read_on_the_group(ah: AuthzHarness) -> None:
    create(ah, "t")
    alice = ah.as_user("alice")
    assert join(alice).result().error_code == ErrorCode.group_authorization_failed
    ah.allow("User:alice", AclOperation.READ, G, "g")
    assert join(alice).result().error_code == ErrorCode.member_id_required   # past the check


def test_find_coordinator_and_describe_groups(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    [c] = alice.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators
    assert c.error_code == ErrorCode.group_authorization_failed
    [d] = alice.request(DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": True}).groups
    assert d.error_code == ErrorCode.group_authorization_failed
    ah.allow("User:alice", AclOperation.DESCRIBE, G, "g")
    [c] = alice.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators
    assert c.error_code == ErrorCode.none
    [d] = alice.request(DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": True}).groups
    assert d.error_code == ErrorCode.none and d.authorized_operations == 1 << AclOperation.DESCRIBE.code


def test_offset_commit_and_fetch_need_topic_access(ah: AuthzHarness) -> None:
    create(ah, "t")
    create(ah, "hidden")
    alice = ah.as_user("alice")
    ah.allow("User:alice", AclOperation.READ, G, "g")
    assert commit(alice, -1, "", 5) == ErrorCode.topic_authorization_failed
    ah.allow("User:alice", AclOperation.READ, T, "t")
    assert commit(alice, -1, "", 5) == ErrorCode.none
    assert commit(ah.as_user("mallory"), -1, "", 7) == ErrorCode.group_authorization_failed
    listed = {t.name: t.partitions[0] for t in offset_fetch(alice, ["t", "hidden"]).topics}
    assert listed["t"].committed_offset == 5
    assert listed["hidden"].error_code == ErrorCode.topic_authorization_failed
    assert listed["hidden"].committed_offset == -1
    # the super user commits to "hidden" too; alice's fetch of all topics does not show it
    assert commit(ah.client, -1, "", 3) == ErrorCode.none
    ah.client.request(8, 8, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                             "group_instance_id": None, "retention_time": -1, "topics": [
                                 {"name": "hidden", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                    "committed_leader_epoch": -1,
                                                                    "committed_metadata": ""}]}]})
    assert [t.name for t in offset_fetch(ah.client, None).topics] == ["t", "hidden"]
    assert [t.name for t in offset_fetch(alice, None).topics] == ["t"]


def test_list_groups_filters_and_delete_groups(ah: AuthzHarness) -> None:
    create(ah, "t")
    assert commit(ah.client, -1, "", 1) == ErrorCode.none   # group "g" now exists (Empty)
    alice = ah.as_user("alice")
    assert list(alice.request(LIST_GROUPS, 4, {"states_filter": []}).groups) == []
    ah.allow("User:alice", AclOperation.DELETE, G, "g")
    assert [g.group_id for g in alice.request(LIST_GROUPS, 4, {"states_filter": []}).groups] == ["g"]
    ah.allow("User:bob", AclOperation.DESCRIBE, C, "kafka-cluster")
    assert [g.group_id for g in ah.as_user("bob").request(LIST_GROUPS, 4, {"states_filter": []}).groups] == ["g"]
    [r] = ah.as_user("bob").request(DELETE_GROUPS, 2, {"groups_names": ["g"]}).results
    assert r.error_code == ErrorCode.group_authorization_failed
    [r] = alice.request(DELETE_GROUPS, 2, {"groups_names": ["g"]}).results
    assert r.error_code == ErrorCode.none
