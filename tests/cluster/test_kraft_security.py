"""A secured KRaft cluster's configuration without a JVM (kafkascope/local/kraft_security.py): SASL_SSL client and
CONTROLLER listeners, StandardAuthorizer, the admin's SCRAM credential as kafka-storage format's --add-scram.
tests/interop/test_security_interop.py runs the real Kafka 4.1 cluster (slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from common import client_properties
from kafkascope.local import kraft_security, security
from kafkascope.local.kraft import BROKER, CONTROLLER, KRaftLauncher, NodePlan, attach, node_props
from kafkascope.local.security import SecurityKit, SecurityKitError

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed")


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> SecurityKit:
    d = tmp_path_factory.mktemp("kraft-kit") / "security"
    d.mkdir()
    (d / security.KIT_FILE).write_text('{"admin_password": "admin-Secret_1"}')
    return SecurityKit.load_or_create(d, days=2)


def test_combined_node_listeners_are_sasl_ssl(kit):
    sec = kraft_security.node_security_props(kit)
    props = node_props(NodePlan(0, (BROKER, CONTROLLER), 9092, 9093), "0@127.0.0.1:9093", {"log.dirs": "/d"}, sec)
    assert props["listeners"] == "SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:9092"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["sasl.mechanism.inter.broker.protocol"] == "PLAIN"
    assert props["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-512"
    # Kafka's default controller mechanism is GSSAPI: a secured quorum must name the one it uses
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["listener.name.controller.sasl.enabled.mechanisms"] == "PLAIN"
    jaas = props["listener.name.controller.plain.sasl.jaas.config"]
    assert 'username="admin" password="admin-Secret_1"' in jaas and 'user_admin="admin-Secret_1"' in jaas
    assert props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"].endswith("ScramLoginModule required;")
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["super.users"] == "User:admin" and props["allow.everyone.if.no.acl.found"] == "false"
    assert props["ssl.keystore.location"] == str(kit.certs["server"])
    assert props["ssl.truststore.location"] == str(kit.certs["ca"])


def test_controller_and_broker_only_nodes(kit):
    sec = kraft_security.node_security_props(kit)
    controller = node_props(NodePlan(3, (CONTROLLER,), None, 9093), "3@127.0.0.1:9093", {}, sec)
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:9093"
    assert controller["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL"
    assert "advertised.listeners" not in controller and "inter.broker.listener.name" not in controller
    broker = node_props(NodePlan(0, (BROKER,), 9094, None), "3@127.0.0.1:9093", {}, sec)
    assert broker["listeners"] == "SASL_SSL://127.0.0.1:9094"
    # it has no controller listener, but logs in to the controllers with the CONTROLLER entries
    assert broker["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL"
    assert "listener.name.controller.plain.sasl.jaas.config" in broker


def test_the_users_overrides_win_over_the_security_entries(kit):
    sec = kraft_security.node_security_props(kit)
    props = node_props(NodePlan(0, (BROKER, CONTROLLER), 9092, 9093), "0@127.0.0.1:9093",
                       {"allow.everyone.if.no.acl.found": "true"}, sec)
    assert props["allow.everyone.if.no.acl.found"] == "true"


def test_format_adds_the_admins_scram_credential(kit):
    assert kraft_security.format_args(kit) == [
        "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-Secret_1,iterations=8192]"]
    odd = SecurityKit(kit.directory, "pass,word=x")
    with pytest.raises(SecurityKitError, match="--add-scram"):
        kraft_security.format_args(odd)


def test_prepare_writes_secured_configs_and_client_properties(tmp_path, monkeypatch):
    formatted: list[list[Path]] = []
    monkeypatch.setattr(KRaftLauncher, "_format", lambda self, configs, timeout_s=180.0: formatted.append(configs))
    launcher = KRaftLauncher(tmp_path, brokers=2, controllers=1, security="sasl_ssl",
                             broker_props={"num.partitions": 3}).prepare()
    assert len(formatted) == 1 and len(formatted[0]) == 3
    for cfg in formatted[0]:
        props = client_properties.read(cfg)
        assert props["authorizer.class.name"] == kraft_security.AUTHORIZER
        assert props["listener.security.protocol.map"].startswith("CONTROLLER:SASL_SSL")
        assert "PLAINTEXT" not in props["listeners"] and "zookeeper.connect" not in props
        assert props["num.partitions"] == "3"
    client = client_properties.read(tmp_path / "security" / "client.properties")
    assert client["security.protocol"] == "SASL_SSL" and client["sasl.mechanism"] == "SCRAM-SHA-512"
    assert json.loads((tmp_path / "cluster.json").read_text())["security"] == "sasl_ssl"
    assert launcher.kit().usage(launcher.bootstrap).startswith(
        "security: SASL_SSL (PLAIN, SCRAM-SHA-512), org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    again = attach(tmp_path)   # as `kafkascope cluster status` sees it
    assert isinstance(again, KRaftLauncher) and again.security == "sasl_ssl"
    assert again.client_security() is not None and again.client_security().mechanism == "PLAIN"
