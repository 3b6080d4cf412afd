"""`kafkascope acls` against a broker process with an authorizer (the CLI connects as User:ANONYMOUS over
PLAINTEXT, made a super user here), output as kafka-acls.sh prints it."""

from __future__ import annotations

import pytest

from kafkascope.cli import main
from kafkascope.local.broker_process import BrokerProcess
from tests.authz.conftest import ACL_AUTHORIZER


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("acl-broker"), authorizer_class_name=ACL_AUTHORIZER,
                       super_users="User:ANONYMOUS") as b:
        yield b


def acls(capsys, broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["acls", "--bootstrap-server", broker.bootstrap, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_remove(capsys, secured) -> None:
    code, out, _ = acls(capsys, secured, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                        "--operation", "Describe", "--topic", "orders")
    assert code == 0
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:" in out
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:" in out
    code, out, _ = acls(capsys, secured, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "sales.",
                        "--group", "g", "--resource-pattern-type", "prefixed")
    assert code == 0 and "name=sales., patternType=PREFIXED" in out and "name=g, patternType=PREFIXED" in out
    code, out, _ = acls(capsys, secured, "--list", "--topic", "orders")
    assert code == 0
    assert out.count("(principal=User:alice") == 2 and "User:bob" not in out
    code, out, _ = acls(capsys, secured, "--list")
    assert "User:bob" in out and "User:alice" in out
    code, out, _ = acls(capsys, secured, "--list", "--principal", "User:bob")
    assert out.startswith("ACLs for principal `User:bob`\n") and "User:alice" not in out and "User:bob" in out
    code, out, _ = acls(capsys, secured, "--remove", "--force", "--topic", "orders")
    assert code == 0
    _, out, _ = acls(capsys, secured, "--list")
    assert "User:alice" not in out and "User:bob" in out


def test_bad_flags_are_usage_errors(capsys, secured) -> None:
    code, _, err = acls(capsys, secured, "--add", "--topic", "t")
    assert code == 2 and "--allow-principal" in err
    code, _, err = acls(capsys, secured, "--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite",
                        "--topic", "t")
    assert code == 2 and "only supports operations" in err


def test_without_permission(capsys, tmp_path) -> None:
    with BrokerProcess(tmp_path, authorizer_class_name=ACL_AUTHORIZER) as b:
        # (--list would print nothing: librdkafka 2.16 drops DescribeAcls' top-level error, checked on the wire)
        code, _, err = acls(capsys, b, "--add", "--allow-principal", "User:x", "--topic", "t")
        assert code != 0 and "Cluster authorization failed" in err
