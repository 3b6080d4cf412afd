"""KIP-848 APIs with an authorizer: ConsumerGroupHeartbeat needs READ on the group, ConsumerGroupDescribe DESCRIBE
(GROUP_AUTHORIZATION_FAILED otherwise; authorized operations when asked)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.authz.test_data_path import create
from tests.broker.test_consumer_group_handlers import beat

DESCRIBE = 69
G = ResourceType.GROUP


def test_heartbeat_needs_read_and_describe_needs_describe(ah: AuthzHarness) -> None:
    create(ah, "t")
    alice = ah.as_user("alice")
    denied = beat(alice, "A", 0)
    assert (denied.error_code, denied.assignment) == (ErrorCode.group_authorization_failed, None)
    ah.allow("User:alice", AclOperation.READ, G, "g")
    assert beat(alice, "A", 0).error_code == ErrorCode.none

    bob = ah.as_user("bob")
    [d] = bob.request(DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": True}).groups
    assert d.error_code == ErrorCode.group_authorization_failed and d.members == ()
    ah.allow("User:bob", AclOperation.DESCRIBE, G, "g")
    [d] = bob.request(DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": True}).groups
    assert d.error_code == ErrorCode.none and [m.member_id for m in d.members] == ["A"]
    assert d.authorized_operations == 1 << AclOperation.DESCRIBE.code
    # READ implies DESCRIBE, as in Kafka's ACL rules.
    [d] = alice.request(DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": False}).groups
    assert d.error_code == ErrorCode.none
