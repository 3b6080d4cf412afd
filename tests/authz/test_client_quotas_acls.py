"""Describe/AlterClientQuotas need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster, as Kafka's KafkaApis checks."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.security.acl import AclOperation, ResourceType
from tests.authz.conftest import AuthzHarness
from tests.broker.test_client_quotas import DESCRIBE, E, alter, describe, op


def test_quota_apis_need_cluster_config_acls(tmp_path):
    with AuthzHarness(tmp_path) as ah:
        alice = ah.as_user("alice")
        resp = alice.request(DESCRIBE, 1, {"components": [], "strict": False})
        assert (resp.error_code, resp.error_message, resp.entries) == (
            ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", None)
        assert alter(alice, (E(("user", "bob")), [op("producer_byte_rate", 1)])) == [
            (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", [("user", "bob")])]
        ah.allow("User:alice", AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, "kafka-cluster")
        assert alter(alice, (E(("user", "bob")), [op("producer_byte_rate", 1)]))[0][0] == ErrorCode.none
        assert describe(alice) == {(("user", "bob"),): {"producer_byte_rate": 1.0}}   # ALTER_CONFIGS implies DESCRIBE
