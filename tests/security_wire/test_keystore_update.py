"""Certificate rotation without a restart (KIP-226 keystore updates) on a real standalone broker: an alter of
`listener.name.ssl.ssl.keystore.location` through the Admin API changes the certificate new TLS connections get
and the expiry metric, open connections keep working, a store rewritten in place is taken when an alter names it
again, refused stores change nothing, and the dynamic value survives a restart."""

from __future__ import annotations

import json
import shutil
import ssl
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from common.polling import wait_for_port
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from tests.interop.conftest import apache_kafka_or_skip, config_command
from tests.security_wire.rotation import certificate_pem, certs_or_skip, issue

KEY = "listener.name.ssl.ssl.keystore.location"


class Rotating:
    def __init__(self, proc: BrokerProcess, ssl_port: int, certs: dict[str, Path], d: Path) -> None:
        self.proc, self.ssl_port, self.certs, self.dir = proc, ssl_port, certs, d

    def served(self) -> str:
        """The certificate a new TLS connection is shown."""
        return ssl.get_server_certificate(("127.0.0.1", self.ssl_port), timeout=10)

    def not_after_metric(self) -> float:
        port = self.proc.props["prometheus.listener"].rsplit(":", 1)[1]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                    if line.startswith("kafkascope_network_tlscertificate_notafterseconds") and 'listener="SSL"' in line)

    def alter(self, **configs: str | None) -> None:
        """IncrementalAlterConfigs of broker 0 (None deletes); KafkaException on refusal."""
        admin = AdminClient({"bootstrap.servers": self.proc.bootstrap})
        entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.DELETE if v is None
                               else AlterConfigOpType.SET) for k, v in configs.items()]
        admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.BROKER, "0",
                                                        incremental_configs=entries)])[
            ConfigResource(ConfigResource.Type.BROKER, "0")].result(30)

    def refused(self, error: str = "INVALID_REQUEST", **configs: str | None) -> str:
        with pytest.raises(KafkaException) as e:
            self.alter(**configs)
        err = e.value.args[0]
        assert err.name() == error, err
        return err.str()


def _expiry(pem: str) -> float:
    return ssl.cert_time_to_seconds(_decode(pem)["notAfter"])


def _decode(pem: str) -> dict:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
        f.write(pem)
        f.flush()
        return ssl._ssl._test_decode_cert(f.name)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def rotating(tmp_path_factory):
    d = tmp_path_factory.mktemp("keystore-update")
    certs = certs_or_skip(d)
    ssl_port = free_port()
    proc = BrokerProcess(d, port=free_port(), prometheus_listener=f"127.0.0.1:{free_port()}")
    proc.props.update({"listeners": f"PLAINTEXT://127.0.0.1:{proc.port},SSL://127.0.0.1:{ssl_port}",
                       "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["server"]),
                       "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"])})
    with proc:
        wait_for_port("127.0.0.1", ssl_port, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        yield Rotating(proc, ssl_port, certs, d)


def _tls_producer(r: Rotating) -> Producer:
    return Producer({"bootstrap.servers": f"127.0.0.1:{r.ssl_port}", "security.protocol": "SSL",
                     "ssl.ca.location": str(r.certs["ca"]), "acks": "all"})


def _produce(p: Producer, value: bytes) -> None:
    errors: list = []
    p.produce("rotation", value, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(30) == 0 and errors == [None], errors


def test_rotation_takes_effect_for_new_connections(rotating):
    r = rotating
    assert r.served() == certificate_pem(r.certs["server"])
    assert r.not_after_metric() == _expiry(r.served())
    producer = _tls_producer(r)
    _produce(producer, b"before")

    rotated = issue(r.certs, r.dir / "rotated.pem", days=30)
    r.alter(**{KEY: str(rotated)})
    assert r.served() == certificate_pem(rotated)
    assert r.not_after_metric() == _expiry(certificate_pem(rotated)) > _expiry(certificate_pem(r.certs["server"]))
    _produce(producer, b"after")          # the connection opened before the rotation still works
    _produce(_tls_producer(r), b"new")    # and a new one verifies the new certificate


def test_rewritten_in_place_is_taken_when_named_again(rotating):
    r = rotating
    live = r.dir / "live.pem"
    shutil.copy(issue(r.certs, r.dir / "first.pem", days=10), live)
    r.alter(**{KEY: str(live)})
    first = r.served()
    shutil.copy(issue(r.certs, r.dir / "second.pem", days=20), live)
    assert r.served() == first             # a file rewritten is not watched
    r.alter(**{KEY: str(live)})            # the same value again: Kafka reloads a modified store
    assert r.served() == certificate_pem(r.dir / "second.pem") != first


def test_refused_stores_change_nothing(rotating):
    r = rotating
    before = r.served()
    other = issue(r.certs, r.dir / "other.pem", subject="/CN=other-host")
    assert r.refused(**{KEY: str(other)}) == (   # Kafka 3.9.2's words, recorded from a real broker
        "Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of "
        "SSLFactory failed: org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName does not "
        "match:  existing={alias=kafka, DN=CN=localhost}, new={alias=kafka, DN=CN=other-host} for configuration "
        "Invalid dynamic configuration")
    missing = r.dir / "missing.pem"
    assert r.refused(**{KEY: str(missing)}) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of "
        "SSLFactory failed: org.apache.kafka.common.errors.InvalidConfigurationException: Failed to load PEM SSL "
        f"keystore {missing} for configuration Invalid dynamic configuration")
    encrypted = issue(r.certs, r.dir / "encrypted.pem", key_password="abc")
    assert r.refused("INVALID_CONFIG", **{KEY: str(encrypted), "listener.name.ssl.ssl.key.password": "abc"}) == (
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): Password encoder secret not "
        "configured")
    assert r.refused(ssl_keystore_location=str(other)) == (
        "These security configs can be dynamically updated only per-listener using the listener prefix: "
        "HashSet(ssl.keystore.location)")
    assert r.served() == before
    live = r.dir / "in-place.pem"   # a store rewritten in place with another subject, then named again
    shutil.copy(issue(r.certs, r.dir / "good.pem", days=12), live)
    r.alter(**{KEY: str(live)})
    shutil.copy(other, live)
    assert r.refused("INVALID_CONFIG", **{KEY: str(live)}) == (
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): Validation of dynamic config "
        "update of SSLFactory failed: org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName "
        "does not match:  existing={alias=kafka, DN=CN=localhost}, new={alias=kafka, DN=CN=other-host}")
    assert r.served() == certificate_pem(r.dir / "good.pem")


def test_dynamic_store_survives_a_restart_and_its_removal_restores_the_static_one(rotating):
    r = rotating
    kept = issue(r.certs, r.dir / "kept.pem", days=40)
    r.alter(**{KEY: str(kept)})
    r.proc.stop()
    r.proc.start()
    wait_for_port("127.0.0.1", r.ssl_port, lambda: r.proc.proc is not None and r.proc.proc.poll() is None, 10)
    assert r.served() == certificate_pem(kept)
    r.alter(**{KEY: None})
    assert r.served() == certificate_pem(r.certs["server"])


def test_passwords_are_stored_encrypted_and_described_as_null(tmp_path):
    """With password.encoder.secret, a key password is taken with its encrypted key, kept encrypted in the
    broker's metadata, never described, and decoded again after a restart."""
    certs = certs_or_skip(tmp_path)
    ssl_port = free_port()
    proc = BrokerProcess(tmp_path, port=free_port(), prometheus_listener=f"127.0.0.1:{free_port()}")
    proc.props.update({"listeners": f"PLAINTEXT://127.0.0.1:{proc.port},SSL://127.0.0.1:{ssl_port}",
                       "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["server"]),
                       "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"]),
                       "password.encoder.secret": "s3cret-for-test"})
    with proc:
        wait_for_port("127.0.0.1", ssl_port, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        r = Rotating(proc, ssl_port, certs, tmp_path)
        encrypted = issue(certs, tmp_path / "encrypted.pem", key_password="abc", days=9)
        r.alter(**{KEY: str(encrypted), "listener.name.ssl.ssl.key.password": "abc"})
        assert r.served() == certificate_pem(encrypted)
        state = json.loads((tmp_path / "logs" / "__cluster_metadata.json").read_text())
        kept = state["broker_configs"]["0"]["listener.name.ssl.ssl.key.password"]
        assert kept.startswith("keyFactoryAlgorithm:PBKDF2WithHmacSHA512,") and "encryptedPassword:" in kept
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        res = ConfigResource(ConfigResource.Type.BROKER, "0")
        entry = admin.describe_configs([res])[res].result(30)["listener.name.ssl.ssl.key.password"]
        assert (entry.value, entry.is_sensitive) == (None, True)
        described = admin.describe_configs([res])[res].result(30)[KEY]
        assert [(s.name, s.value) for s in described.synonyms.values()] == [
            (KEY, str(encrypted)), ("ssl.keystore.location", str(certs["server"]))]
        apache_kafka_or_skip()   # kafka-configs.sh prints what Kafka 3.9.2 printed for the same alter
        assert config_command(proc.bootstrap)("--entity-type", "brokers", "--entity-name", "0",
                                              "--describe").stdout.splitlines() == [
            "Dynamic configs for broker 0 are:",
            "  listener.name.ssl.ssl.key.password=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:"
            "listener.name.ssl.ssl.key.password=null}",
            f"  {KEY}={encrypted} sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{KEY}={encrypted}, "
            f"STATIC_BROKER_CONFIG:ssl.keystore.location={certs['server']}}}"]
        proc.stop()
        proc.start()
        wait_for_port("127.0.0.1", ssl_port, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        assert r.served() == certificate_pem(encrypted)   # the key password decoded again at start
