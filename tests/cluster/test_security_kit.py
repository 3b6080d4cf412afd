"""The security kit without servers: issue 15's server.properties key for key, client.properties in Kafka's Java
names, and a kit directory kept across runs (same passwords, certificates renewed only when they run out)."""

from __future__ import annotations

import shutil
import stat

import pytest

from common import client_properties
from kafkascope.local import security
from kafkascope.local.security import SecurityKit
from tests.security_wire.test_issue_config import ISSUE_CONFIG

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed")


def _issue_config(kit: SecurityKit, sasl_ssl: int, plain: int) -> dict[str, str]:
    text = ISSUE_CONFIG.format(server_pem=kit.certs["server"], ca_pem=kit.certs["ca"], sasl_ssl=sasl_ssl, plain=plain)
    return dict(line.split("=", 1) for line in text.replace("\\\n", "").splitlines())


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> SecurityKit:
    d = tmp_path_factory.mktemp("kit")
    saved = d / "security"
    saved.mkdir()
    (saved / security.KIT_FILE).write_text('{"admin_password": "admin-secret"}')
    return SecurityKit.load_or_create(saved, days=2, plain_users={"alice": "alice-secret"})


def test_server_properties_are_the_issue_example(kit):
    assert kit.server_properties(9094, plaintext_port=9092) == _issue_config(kit, 9094, 9092)


def test_the_launcher_gets_no_plaintext_listener(kit):
    props = kit.server_properties(9094)
    assert props["listeners"] == "SASL_SSL://127.0.0.1:9094"
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL"
    assert {k: v for k, v in props.items() if k not in ("listeners", "listener.security.protocol.map")} == {
        k: v for k, v in _issue_config(kit, 9094, 9092).items()
        if k not in ("listeners", "listener.security.protocol.map")}


def test_client_properties_in_kafka_java_names(kit, tmp_path):
    path = kit.write_client_properties(tmp_path / "admin.properties")
    assert dict(line.split("=", 1) for line in path.read_text().splitlines()) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
                            'password="admin-secret";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(kit.certs["ca"]),
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # what our tools make of it (common/client_properties): the same login for librdkafka
    assert client_properties.load(path) == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                                            "sasl.username": "admin", "sasl.password": "admin-secret",
                                            "ssl.ca.location": str(kit.certs["ca"])}
    plain = kit.client_properties("bob", "bob-pw", "PLAIN")
    assert plain["sasl.jaas.config"] == ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'username="bob" password="bob-pw";')


def test_key_store_is_pkcs8_key_then_chain(kit):
    pem = kit.certs["server"].read_text()
    blocks = [line for line in pem.splitlines() if line.startswith("-----BEGIN")]
    assert blocks == ["-----BEGIN PRIVATE KEY-----", "-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----"]
    assert pem.rstrip().endswith(kit.certs["ca"].read_text().rstrip())
    assert stat.S_IMODE(kit.certs["server"].stat().st_mode) == 0o600


def test_a_kit_is_kept_across_runs_and_renewed_when_expiring(tmp_path):
    first = SecurityKit.load_or_create(tmp_path / "s", days=3)
    assert len(first.admin_password) >= 16
    ca = first.certs["ca"].read_bytes()
    again = SecurityKit.load_or_create(tmp_path / "s")
    assert again.admin_password == first.admin_password and again.certs["ca"].read_bytes() == ca
    short = SecurityKit.load_or_create(tmp_path / "short", days=1)  # valid for less than the day asked for
    short_ca = short.certs["ca"].read_bytes()
    assert SecurityKit.load_or_create(tmp_path / "short").certs["ca"].read_bytes() != short_ca


def test_a_broken_kit_file_is_a_clear_error(tmp_path):
    (tmp_path / security.KIT_FILE).write_text("{}")
    with pytest.raises(security.SecurityKitError, match="not a security kit"):
        SecurityKit.load_or_create(tmp_path)
