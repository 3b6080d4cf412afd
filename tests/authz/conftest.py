"""An in-process broker with an authorizer, and client connections as given principals.

Until the listeners authenticate in the harness, a connection's principal is chosen by its client address:
`AuthzHarness.as_user("alice")` connects from an address of its own and maps it to User:alice (the
broker's `authz.principal` is patched to read that map, so the rest of the path is the real one)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from broker.protocol import authz
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tests.broker.harness import Client, Harness

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
_PRINCIPALS: dict[str, KafkaPrincipal] = {}
_hosts = itertools.count(2)


class AuthzHarness(Harness):
    """A Harness whose default connection is the super user `User:admin`."""

    def __init__(self, data_dir, **props: object) -> None:
        props.setdefault("authorizer_class_name", ACL_AUTHORIZER)
        props.setdefault("super_users", "User:admin")
        super().__init__(data_dir, **props)
        self.client = self.as_user("admin")

    def as_user(self, name: str, host: str | None = None) -> Client:
        host = host or f"10.0.0.{next(_hosts)}"
        _PRINCIPALS[host] = KafkaPrincipal.user(name)
        return self.connect(host)

    def allow(self, principal: str, op: AclOperation, rt: ResourceType, name: str,
              pattern: PatternType = PatternType.LITERAL, deny: bool = False, host: str = "*") -> None:
        """Add an ACL straight into the store (CreateAcls has its own tests)."""
        self.broker.metadata.acl_storage().add([AclBinding(ResourcePattern(rt, name, pattern), AccessControlEntry(
            principal, host, op, AclPermissionType.DENY if deny else AclPermissionType.ALLOW))])


@pytest.fixture(autouse=True)
def principal_by_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = authz.principal
    monkeypatch.setattr(authz, "principal", lambda ctx: _PRINCIPALS.get(ctx.client_host) or real(ctx))
    yield


@pytest.fixture
def ah(tmp_path) -> Iterator[AuthzHarness]:
    with AuthzHarness(tmp_path, num_partitions=1) as harness:
        yield harness
