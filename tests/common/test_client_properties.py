"""Kafka (Java) client properties turned into librdkafka settings: common/client_properties.py."""

from __future__ import annotations

import pytest

from common.client_properties import ClientPropertiesError, librdkafka_config, load
from common.java_properties import parse_properties

SCRAM_FILE = """\
# as written for kafka-topics.sh --command-config
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" \\
    password="al:ice=secret";
ssl.truststore.type=PEM
ssl.truststore.location=/etc/kafka/ca.pem
ssl.endpoint.identification.algorithm=
client.id: ops-tools
"""


def test_java_scram_file_becomes_librdkafka_settings(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text(SCRAM_FILE)
    assert load(path) == {
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": "al:ice=secret",
        "ssl.ca.location": "/etc/kafka/ca.pem", "ssl.endpoint.identification.algorithm": "none",
        "client.id": "ops-tools"}


def test_librdkafka_names_pass_through_unchanged():
    props = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": "u",
             "sasl.password": "p", "ssl.ca.location": "/ca.pem"}
    assert librdkafka_config(props) == props


def test_plain_login_module_and_pem_key_store():
    out = librdkafka_config({
        "security.protocol": "SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" '
                            'password="b";',
        "ssl.keystore.type": "PEM", "ssl.keystore.location": "/client.pem", "ssl.key.password": "kp"})
    assert out["sasl.username"] == "a" and out["sasl.password"] == "b"
    assert out["ssl.key.location"] == out["ssl.certificate.location"] == "/client.pem"
    assert out["ssl.key.password"] == "kp" and "ssl.keystore.type" not in out


def test_pkcs12_key_store_is_handed_to_librdkafka():
    out = librdkafka_config({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12",
                             "ssl.keystore.password": "pw"})
    assert out == {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "pw"}


@pytest.mark.parametrize("props, names", [
    ({"ssl.truststore.location": "/t.jks"}, "JKS trust store"),             # Java's default store type
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"}, "JKS key store"),
    ({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}, "OAuthBearerLoginModule"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config":
      "org.apache.kafka.common.security.scram.ScramLoginModule required username=a password=b;"},
     "does not match sasl.mechanism=PLAIN"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": "PlainLoginModule required username=a"}, "semi-colon"),
])
def test_what_librdkafka_cannot_do_is_an_error_naming_the_property(props, names):
    with pytest.raises(ClientPropertiesError, match=names):
        librdkafka_config(props)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ClientPropertiesError, match="cannot read .*nope.properties"):
        load(tmp_path / "nope.properties")


def test_properties_syntax():
    assert parse_properties("a=1\n  # c\n! c\nb : 2\nc 3\nd=x\\\n  y\n") == {"a": "1", "b": "2", "c": "3", "d": "xy"}
