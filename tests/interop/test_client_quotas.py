"""Client quota configs through Kafka 3.9's own kafka-configs.sh (ConfigCommand over DescribeClientQuotas and
AlterClientQuotas) and at the wire: the same printed lines and the same errors on ours as on Apache Kafka 3.9 in
ZooKeeper mode. Kafka prints an entity's quotas in its HashMap's order, so a line's values are compared as a set."""

from __future__ import annotations

import uuid

import pytest

from tests.interop.conftest import KRAFT, apache_kafka_or_skip, config_command


@pytest.fixture
def configs(backend):
    if backend.name == KRAFT:
        pytest.skip("Kafka 4.1's KRaft quota answers differ; this pins Kafka 3.9's ZooKeeper mode")
    apache_kafka_or_skip()
    return config_command(backend.bootstrap)


def _lines(text: str, *names: str) -> set[tuple[str, frozenset[str]]]:
    """The 'Quota configs for ...' lines naming one of `names` (or the defaults): (who, {key=value})."""
    out = set()
    for line in text.splitlines():
        who, sep, values = line.partition(" are ")
        if sep and line.startswith("Quota configs for ") and (any(f"'{n}'" in who for n in names) or "default" in who):
            out.add((who, frozenset(values.split(", "))))
    return out


def test_kafka_configs_quotas_for_users_clients_and_defaults(backend, configs):
    """Alter, describe (one entity, all users, all clients of a user) and delete, as an operator does."""
    tag = uuid.uuid4().hex[:6]
    user, client = f"u{tag}", f"c{tag}"
    u, c = ["--entity-type", "users", "--entity-name", user], ["--entity-type", "clients", "--entity-name", client]
    assert f"Completed updating config for user {user}." in configs(
        *u, "--alter", "--add-config", "producer_byte_rate=1048576,request_percentage=50").stdout
    assert f"Completed updating config for client {client}." in configs(
        *c, "--alter", "--add-config", "consumer_byte_rate=2000").stdout
    assert f"Completed updating config for user {user}." in configs(
        *u, *c, "--alter", "--add-config", "producer_byte_rate=3000").stdout
    assert "Completed updating default config for clients in the cluster." in configs(
        "--entity-type", "clients", "--entity-default", "--alter", "--add-config", "consumer_byte_rate=2048").stdout
    configs("--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default",
            "--alter", "--add-config", "controller_mutation_rate=10000000")

    assert _lines(configs(*u, "--describe").stdout, user) == {
        (f"Quota configs for user-principal '{user}'", frozenset({"producer_byte_rate=1048576.0",
                                                                   "request_percentage=50.0"}))}
    all_users = configs("--entity-type", "users", "--describe").stdout
    assert (f"Quota configs for user-principal '{user}'", frozenset({"producer_byte_rate=1048576.0",
                                                                     "request_percentage=50.0"})) in _lines(all_users, user)
    assert _lines(configs("--entity-type", "clients", "--describe").stdout, client) == {
        (f"Quota configs for client-id '{client}'", frozenset({"consumer_byte_rate=2000.0"})),
        ("Quota configs for the default client-id", frozenset({"consumer_byte_rate=2048.0"}))}
    assert _lines(configs(*u, "--entity-type", "clients", "--describe").stdout, user) == {
        (f"Quota configs for user-principal '{user}', client-id '{client}'", frozenset({"producer_byte_rate=3000.0"}))}
    assert _lines(configs("--entity-type", "users", "--entity-default", "--entity-type", "clients",
                          "--entity-default", "--describe").stdout) == {
        ("Quota configs for the default user-principal, the default client-id",
         frozenset({"controller_mutation_rate=1.0E7"}))}

    configs(*u, "--alter", "--delete-config", "request_percentage")
    assert _lines(configs(*u, "--describe").stdout, user) == {
        (f"Quota configs for user-principal '{user}'", frozenset({"producer_byte_rate=1048576.0"}))}
    configs(*u, *c, "--alter", "--delete-config", "producer_byte_rate")
    assert _lines(configs(*u, "--entity-type", "clients", "--describe").stdout, user) == set()
    for default in (["--entity-type", "clients", "--entity-default"],
                    ["--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"]):
        configs(*default, "--alter", "--delete-config",
                "consumer_byte_rate" if len(default) == 3 else "controller_mutation_rate")
    assert configs("--entity-type", "users", "--entity-name", f"nobody{tag}", "--describe").stdout.strip() == ""


def test_kafka_configs_quota_errors(backend, configs):
    u = ["--entity-type", "users", "--entity-name", f"e{uuid.uuid4().hex[:6]}"]
    bad = configs(*u, "--alter", "--add-config", "producer_byte_rate=1.5", ok=False)
    assert "InvalidRequestException: Configuration producer_byte_rate must be a LONG value" in bad.stderr
    assert _lines(configs(*u, "--describe").stdout, u[-1]) == set()   # nothing applied


def test_quota_wire_errors_as_kafka(backend):
    """Requests kafka-configs.sh never sends, answered alike (errors and messages of Kafka 3.9)."""
    if backend.name == KRAFT:
        pytest.skip("Kafka 3.9 ZooKeeper mode only")
    from kafkascope.local.wire import WireClient

    def alter(entity: list[tuple[str, str | None]], key: str, value: float) -> tuple[int, str | None]:
        with WireClient(backend.port) as w:
            [r] = w.call(49, 1, {"validate_only": True, "entries": [{
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value, "remove": False}]}]}).entries
        return r.error_code, r.error_message

    def describe(*components: tuple[str, int, str | None]) -> tuple[int, str | None]:
        with WireClient(backend.port) as w:
            r = w.call(48, 1, {"strict": False, "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components]})
        return r.error_code, r.error_message

    assert alter([("user", "a")], "foo", 1) == (42, "Invalid configuration key foo")
    assert alter([("user", "a")], "producer_byte_rate", -5) == (42, "Configuration producer_byte_rate must be a LONG value")
    assert alter([("user", "a")], "request_percentage", -5) == (0, None)
    assert alter([], "producer_byte_rate", 1) == (42, "Invalid empty client quota entity")
    assert alter([("foo", "x")], "producer_byte_rate", 1) == (42, "Unhandled client quota entity type: foo")
    assert alter([("client-id", "")], "producer_byte_rate", 1) == (42, "Empty client-id not supported")
    assert alter([("user", "a")], "SCRAM-SHA-256", 1) == (-1, None)
    assert describe(("user", 2, None), ("user", 1, None)) == (42, "Duplicate user filter component entity type")
    assert describe(("foo", 2, None)) == (35, "Custom entity type 'foo' not supported")
    assert describe(("user", 7, None)) == (-1, None)
    assert describe(("user", 2, None)) == (0, "")


def test_kafka_configs_ip_quotas(backend, configs):
    """`--entity-type ips`: an address's and the default connection_creation_rate, as Kafka 3.9 prints them."""
    ip = f"10.{uuid.uuid4().int % 250}.7.9"
    one, default = ["--entity-type", "ips", "--entity-name", ip], ["--entity-type", "ips", "--entity-default"]
    try:
        assert configs(*one, "--alter", "--add-config", "connection_creation_rate=5").stdout == \
            f"Completed updating config for ip {ip}.\n"
        assert configs(*default, "--alter", "--add-config", "connection_creation_rate=100").stdout == \
            "Completed updating default config for ips in the cluster.\n"
        assert configs(*one, "--describe").stdout == f"Quota configs for ip '{ip}' are connection_creation_rate=5.0\n"
        assert configs(*default, "--describe").stdout == \
            "Quota configs for the default ip are connection_creation_rate=100.0\n"
        err = configs(*one, "--alter", "--add-config", "connection_creation_rate=1.5", ok=False).stderr
        assert "connection_creation_rate" in err, err
        err = configs("--entity-type", "ips", "--entity-name", "no.such.host.invalid", "--alter", "--add-config",
                      "connection_creation_rate=1", ok=False).stderr
        # ConfigCommand checks the name itself (the broker's own answer: tests/broker/test_client_quotas.py)
        assert "The entity name for ips must be a valid IP or resolvable host, but it is: no.such.host.invalid" \
            in err, err
    finally:
        configs(*one, "--alter", "--delete-config", "connection_creation_rate")
        configs(*default, "--alter", "--delete-config", "connection_creation_rate")
