"""DescribeAcls / CreateAcls / DeleteAcls: Kafka's answers, the checks on them, and the standalone ACL file."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.authz.test_data_path import create, produce
from tests.broker.harness import Client, Harness

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
T = ResourceType.TOPIC


def creation(principal: str, name: str, op: AclOperation = AclOperation.WRITE,
             pattern: PatternType = PatternType.LITERAL, rt: ResourceType = T,
             permission: AclPermissionType = AclPermissionType.ALLOW) -> dict:
    return {"resource_type": rt.code, "resource_name": name, "resource_pattern_type": pattern.code,
            "principal": principal, "host": "*", "operation": op.code, "permission_type": permission.code}


def create_acls(c: Client | Harness, *creations: dict) -> list[tuple[int, str | None]]:
    resp = c.request(CREATE_ACLS, 3, {"creations": list(creations)})
    return [(r.error_code, r.error_message) for r in resp.results]


def describe_acls(c: Client | Harness, name: str | None = None, pattern: PatternType = PatternType.ANY):
    return c.request(DESCRIBE_ACLS, 3, {
        "resource_type_filter": ResourceType.ANY.code, "resource_name_filter": name,
        "pattern_type_filter": pattern.code, "principal_filter": None, "host_filter": None,
        "operation": AclOperation.ANY.code, "permission_type": AclPermissionType.ANY.code})


def delete_filter(principal: str | None = None, name: str | None = None) -> dict:
    return {"resource_type_filter": ResourceType.ANY.code, "resource_name_filter": name,
            "pattern_type_filter": PatternType.ANY.code, "principal_filter": principal, "host_filter": None,
            "operation": AclOperation.ANY.code, "permission_type": AclPermissionType.ANY.code}


def test_create_describe_delete_round_trip(ah: AuthzHarness) -> None:
    create(ah, "orders")
    alice = ah.as_user("alice")
    assert produce(alice, "orders") == ErrorCode.topic_authorization_failed
    assert create_acls(ah, creation("User:alice", "orders"),
                       creation("User:alice", "ord", AclOperation.READ, PatternType.PREFIXED)) == [(0, None), (0, None)]
    assert produce(alice, "orders") == ErrorCode.none
    resp = describe_acls(ah)
    assert resp.error_code == ErrorCode.none
    got = {(r.resource_name, r.pattern_type, a.principal, a.operation) for r in resp.resources for a in r.acls}
    assert got == {("orders", PatternType.LITERAL.code, "User:alice", AclOperation.WRITE.code),
                   ("ord", PatternType.PREFIXED.code, "User:alice", AclOperation.READ.code)}
    # MATCH finds every pattern that applies to the named resource
    assert len(describe_acls(ah, "orders", PatternType.MATCH).resources) == 2
    resp = ah.request(DELETE_ACLS, 3, {"filters": [delete_filter(name="orders")]})
    [fr] = resp.filter_results
    assert fr.error_code == ErrorCode.none and [m.resource_name for m in fr.matching_acls] == ["orders"]
    assert produce(alice, "orders") == ErrorCode.topic_authorization_failed


def test_invalid_acls_are_refused(ah: AuthzHarness) -> None:
    results = create_acls(ah, creation("alice", "t"),
                          creation("User:alice", "other", rt=ResourceType.CLUSTER, op=AclOperation.ALTER))
    assert [code for code, _ in results] == [ErrorCode.invalid_request] * 2
    assert results[1][1] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert list(describe_acls(ah).resources) == []


def test_acl_apis_need_cluster_acls(ah: AuthzHarness) -> None:
    alice = ah.as_user("alice")
    assert describe_acls(alice).error_code == ErrorCode.cluster_authorization_failed
    assert create_acls(alice, creation("User:alice", "t"))[0][0] == ErrorCode.cluster_authorization_failed
    [fr] = alice.request(DELETE_ACLS, 3, {"filters": [delete_filter()]}).filter_results
    assert fr.error_code == ErrorCode.cluster_authorization_failed
    create_acls(ah, creation("User:alice", "kafka-cluster", AclOperation.ALTER, rt=ResourceType.CLUSTER))
    assert create_acls(alice, creation("User:bob", "t"))[0][0] == ErrorCode.none
    assert describe_acls(alice).error_code == ErrorCode.none   # ALTER implies DESCRIBE


def test_without_authorizer_security_disabled(tmp_path) -> None:
    with Harness(tmp_path) as h:
        assert describe_acls(h).error_code == ErrorCode.security_disabled
        assert create_acls(h, creation("User:a", "t"))[0][0] == ErrorCode.security_disabled


def test_acls_survive_a_restart(tmp_path) -> None:
    with AuthzHarness(tmp_path) as ah:
        create(ah, "orders")
        create_acls(ah, creation("User:alice", "orders"))
    with AuthzHarness(tmp_path) as ah:
        assert produce(ah.as_user("alice"), "orders") == ErrorCode.none
        assert len(describe_acls(ah).resources) == 1


def test_acl_changes_a_full_disk_cannot_take_are_answered_not_kept(ah, monkeypatch):
    """CreateAcls and DeleteAcls whose ACL file cannot be written: KAFKA_STORAGE_ERROR per creation or filter,
    the ACLs as they were, the connection open. Before, the OSError escaped the handler (connection closed) with the
    change kept in memory only."""
    import errno

    import common.atomic_file

    assert create_acls(ah, creation("User:alice", "t")) == [(ErrorCode.none, None)]

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    real = common.atomic_file.os.fsync
    monkeypatch.setattr(common.atomic_file.os, "fsync", full)
    [(code, message)] = create_acls(ah, creation("User:bob", "t"))
    assert code == ErrorCode.kafka_storage_error and "No space left" in message
    resp = ah.request(DELETE_ACLS, 3, {"filters": [delete_filter("User:alice")]})
    assert resp.filter_results[0].error_code == ErrorCode.kafka_storage_error
    monkeypatch.setattr(common.atomic_file.os, "fsync", real)
    assert sorted(a.principal for r in describe_acls(ah).resources for a in r.acls) == ["User:alice"]


def test_a_scram_change_a_full_disk_cannot_take_is_answered_not_kept(ah, monkeypatch):
    """AlterUserScramCredentials whose credentials file cannot be written: KAFKA_STORAGE_ERROR for that user,
    and logins keep the credentials the file has (before: the connection closed)."""
    import errno

    import common.atomic_file

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(common.atomic_file.os, "fsync", full)
    resp = ah.request(51, 0, {"deletions": [], "upsertions": [
        {"name": "bob", "mechanism": 2, "iterations": 8192, "salt": b"s" * 16, "salted_password": b"x" * 64}]})
    assert [(r.user, r.error_code) for r in resp.results] == [("bob", ErrorCode.kafka_storage_error)]
    assert ah.broker.metadata.scram_credentials().lookup("bob", "SCRAM-SHA-512") is None
