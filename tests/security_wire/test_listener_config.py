"""Listener configuration as Kafka parses it, the broker registration's endpoints, and inter-broker security."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.controller import zk_paths as zp
from broker.metadata import BrokerInfo
from broker.network.client_security import client_security, inter_broker_listener
from broker.network.listeners import listener_specs, parse_protocol_map, registered_listeners

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret";')


def _config(tmp_path, **props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"log.dirs": str(tmp_path), **props})


def test_default_map_and_custom_names(tmp_path):
    assert parse_protocol_map(None)["SASL_SSL"] == "SASL_SSL"
    cfg = _config(tmp_path, **{"listeners": "CLIENT://127.0.0.1:9092,REPL://127.0.0.1:9093",
                               "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPL:SASL_PLAINTEXT",
                               "advertised.listeners": "CLIENT://kafka.example:19092,REPL://10.0.0.1:9093",
                               "sasl.enabled.mechanisms": "PLAIN",
                               "listener.name.repl.plain.sasl.jaas.config": PLAIN_JAAS,
                               "inter.broker.listener.name": "REPL",
                               "sasl.mechanism.inter.broker.protocol": "PLAIN"})
    specs = listener_specs(cfg)
    assert [(s.name, s.protocol, s.advertised_host, s.advertised_port) for s in specs] == [
        ("CLIENT", "PLAINTEXT", "kafka.example", 19092), ("REPL", "SASL_PLAINTEXT", "10.0.0.1", 9093)]
    assert registered_listeners(cfg) == (("CLIENT", "PLAINTEXT", "kafka.example", 19092),
                                         ("REPL", "SASL_PLAINTEXT", "10.0.0.1", 9093))
    inter = inter_broker_listener(cfg, specs)
    sec = client_security(cfg, inter)
    assert inter.name == "REPL" and sec is not None
    assert (sec.mechanism, sec.username, sec.password, sec.ssl_context) == ("PLAIN", "admin", "admin-secret", None)


def test_the_default_single_plaintext_listener_registers_as_before(tmp_path):
    cfg = _config(tmp_path)
    assert registered_listeners(cfg) == ()
    assert client_security(cfg, inter_broker_listener(cfg)) is None


@pytest.mark.parametrize("props,message", [
    ({"listeners": "CLIENT://127.0.0.1:9092"}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "PLAIN"},
     "has no listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"),
    ({"listeners": "SSL://127.0.0.1:9092"}, "needs ssl.keystore.location"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "inter.broker.listener.name": "REPL"}, "must be a listener"),
    ({"listeners": "X://127.0.0.1:9092", "listener.security.protocol.map": "X:TLS"}, "protocol.map"),
])
def test_bad_listener_configs_are_refused(tmp_path, props, message):
    with pytest.raises(ConfigError, match=message):
        listener_specs(_config(tmp_path, **props))


def test_registration_carries_every_endpoint():
    listeners = (("CLIENT", "SASL_SSL", "h1", 9094), ("REPL", "SSL", "h2", 9095))
    data = zp.encode_broker(zp.BrokerRegistration(3, "h1", 9094, None, listeners))
    reg = zp.decode_broker(3, data)
    assert reg.listeners == listeners and (reg.host, reg.port) == ("h1", 9094)
    info = BrokerInfo(3, reg.host, reg.port, None, reg.listeners)
    assert info.endpoint("repl") == ("h2", 9095) and info.endpoint("OTHER") is None
    assert BrokerInfo(1, "h", 1).endpoint("PLAINTEXT") == ("h", 1)
    plain = zp.decode_broker(1, zp.encode_broker(zp.BrokerRegistration(1, "h", 9092)))
    assert plain.listeners == (("PLAINTEXT", "PLAINTEXT", "h", 9092),)
