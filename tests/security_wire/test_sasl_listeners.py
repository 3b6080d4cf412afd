"""SASL and TLS listeners end to end: confluent-kafka over SASL_PLAINTEXT/SASL_SSL/SSL, the SASL state machine on
the wire, bad input on each port, and the socket-server-metrics authentication counters."""

from __future__ import annotations

import socket
import ssl
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from common.polling import wait_until
from kafkascope.local.wire import WireClient
from tests.security_wire.conftest import ADMIN, ADMIN_PW, SCRAM_PW, SCRAM_USER

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36


def _roundtrip(conf: dict, topic: str, n: int = 5) -> list[bytes]:
    """Produce n records and consume them back with the same client settings."""
    p = Producer({**conf, "message.timeout.ms": 15000})
    for i in range(n):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(20) == 0
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(60):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == n:
                break
    finally:
        c.close()
    return got


@pytest.mark.parametrize("listener,mechanism,user,password", [
    ("SASL_PLAINTEXT", "PLAIN", ADMIN, ADMIN_PW),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", SCRAM_USER, SCRAM_PW),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW),
    ("SASL_SSL", "PLAIN", ADMIN, ADMIN_PW),
    ("SASL_SSL", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW),
    ("SSL", None, None, None),
])
def test_confluent_kafka_produces_and_consumes(secured, listener, mechanism, user, password):
    conf = secured.client_conf(listener, mechanism, user, password) if mechanism else secured.client_conf(listener)
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    assert _roundtrip(conf, topic) == [f"v{i}".encode() for i in range(5)]


def test_metadata_advertises_the_listener_connected_on(secured):
    admin = AdminClient(secured.client_conf("SASL_PLAINTEXT", "PLAIN", ADMIN, ADMIN_PW))
    md = admin.list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", secured.ports["SASL_PLAINTEXT"])]


def test_wrong_password_is_an_authentication_error(secured):
    errors: list[KafkaError] = []
    p = Producer({**secured.client_conf("SASL_PLAINTEXT", "SCRAM-SHA-512", SCRAM_USER, "wrong"),
                  "error_cb": errors.append, "log_level": 0})
    for _ in range(100):
        p.poll(0.1)
        if errors:
            break
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors[0].str()


def _handshake(w: WireClient, mechanism: str):
    return w.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})


def test_wrong_plain_password_answers_58_with_kafkas_message_then_closes(secured):
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert _handshake(w, "PLAIN").error_code == ErrorCode.none
        resp = w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0nope"})
        assert resp.error_code == ErrorCode.sasl_authentication_failed
        assert resp.error_message == "Authentication failed: Invalid username or password"
        assert w.is_closed_by_peer()


def test_plain_exchange_on_the_wire_then_requests_are_served(secured):
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        hs = _handshake(w, "PLAIN")
        assert hs.error_code == ErrorCode.none
        assert set(hs.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
        resp = w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{ADMIN}\0{ADMIN_PW}".encode()})
        assert resp.error_code == ErrorCode.none
        assert resp.session_lifetime.total_seconds() == 600   # connections.max.reauth.ms (KIP-368)
        md = w.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False})
        assert md.brokers[0].port == secured.ports["SASL_PLAINTEXT"]


def test_unknown_mechanism_answers_33_with_the_enabled_list(secured):
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        resp = _handshake(w, "GSSAPI")
        assert resp.error_code == ErrorCode.unsupported_sasl_mechanism
        assert set(resp.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}


def test_a_request_before_authentication_closes_the_connection(secured):
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert w.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
                      ).error_code == ErrorCode.none
        w.send(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                              "include_topic_authorized_operations": False})
        assert w.is_closed_by_peer()
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:   # SaslAuthenticate without a handshake, too
        w.send(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0a\0b"})
        assert w.is_closed_by_peer()


def test_truncated_scram_exchange_fails_and_closes(secured):
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert _handshake(w, "SCRAM-SHA-256").error_code == ErrorCode.none
        first = w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,n={SCRAM_USER},r=abcdefgh".encode()})
        assert first.error_code == ErrorCode.none and first.auth_bytes.startswith(b"r=abcdefgh")
        bad = w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"c=biws,r=abcdefgh"})
        assert bad.error_code == ErrorCode.sasl_authentication_failed
        assert w.is_closed_by_peer()


def _still_serves(port: int) -> None:
    with WireClient(port) as w:
        assert w.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
                      ).error_code == ErrorCode.none


def test_tls_client_hello_on_plaintext_port_closes_only_that_connection(secured):
    for listener in ("PLAINTEXT", "SASL_PLAINTEXT"):
        raw = socket.create_connection(("127.0.0.1", secured.ports[listener]), timeout=10)
        ctx = ssl.create_default_context(cafile=str(secured.certs["ca"]))
        with pytest.raises((ssl.SSLError, OSError)):
            ctx.wrap_socket(raw, server_hostname="localhost")
        raw.close()
        _still_serves(secured.ports[listener])


def test_plaintext_bytes_on_tls_port_close_only_that_connection(secured):
    for listener in ("SASL_SSL", "SSL"):
        with WireClient(secured.ports[listener]) as w:
            w.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            assert w.is_closed_by_peer()
    _still_serves(secured.ports["PLAINTEXT"])
    ctx = ssl.create_default_context(cafile=str(secured.certs["ca"]))
    with socket.create_connection(("127.0.0.1", secured.ports["SSL"]), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"\0\0\0\x0a" + bytes.fromhex("0012000000000001ffff"))   # ApiVersions v0, null client id
        assert len(tls.recv(4)) == 4


def test_metrics_count_successful_and_failed_authentications(secured):
    name_ok, name_bad = "successful_authentication_total", "failed_authentication_total"
    ok0, bad0 = secured.metric(name_ok, "SASL_PLAINTEXT"), secured.metric(name_bad, "SASL_PLAINTEXT")
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        _handshake(w, "PLAIN")
        assert w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{ADMIN}\0{ADMIN_PW}".encode()}).error_code == 0
    for _ in range(2):
        with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
            _handshake(w, "PLAIN")
            w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0nope"})
    assert secured.metric(name_ok, "SASL_PLAINTEXT") == ok0 + 1
    assert secured.metric(name_bad, "SASL_PLAINTEXT") == bad0 + 2


def test_ssl_client_certificate_is_accepted_when_requested(secured):
    conf = {**secured.client_conf("SSL"), "ssl.certificate.location": str(secured.certs["client_cert"]),
            "ssl.key.location": str(secured.certs["client_key"])}
    topic = f"mtls-{uuid.uuid4().hex[:8]}"
    assert _roundtrip(conf, topic, n=2) == [b"v0", b"v1"]


def _plain_login(w: WireClient, user: str, password: str):
    assert _handshake(w, "PLAIN").error_code == ErrorCode.none
    return w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})


def test_reauthentication_keeps_the_principal(secured):
    """KIP-368: an authenticated connection may authenticate again as the same principal, not as another."""
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert _plain_login(w, ADMIN, ADMIN_PW).error_code == ErrorCode.none
        assert _plain_login(w, ADMIN, ADMIN_PW).error_code == ErrorCode.none
        resp = _plain_login(w, "alice", "alice-secret")
        assert resp.error_code == ErrorCode.sasl_authentication_failed
        assert resp.error_message == "Cannot change principals during re-authentication from User:admin to User:alice"
        assert w.is_closed_by_peer()


def test_failed_tls_handshakes_count_as_failed_authentications(secured):
    before = secured.metric("failed_authentication_total", "SSL")
    with WireClient(secured.ports["SSL"]) as w:
        w.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert w.is_closed_by_peer()
    assert secured.metric("failed_authentication_total", "SSL") == before + 1


def test_certificate_expiry_is_exposed(secured):
    """The TLS listeners' server certificate notAfter, for an expiring-certificate alert (the test CA signs for 2
    days)."""
    for listener in ("SASL_SSL", "SSL"):
        not_after = secured.metric("kafkascope_network_tlscertificate_notafterseconds", listener)
        assert 1.5 * 86400 < not_after - time.time() < 2.5 * 86400


def test_v0_handshake_then_bare_tokens(secured):
    """SaslHandshake v0: the tokens that follow are size-prefixed bytes without a request header."""
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert w.call(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == ErrorCode.none
        w.send_raw(f"\0{ADMIN}\0{ADMIN_PW}".encode())
        assert w.recv_frame() == b""   # PLAIN's empty challenge: authenticated
        md = w.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False})
        assert md.brokers[0].port == secured.ports["SASL_PLAINTEXT"]
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as w:
        assert w.call(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == ErrorCode.none
        w.send_raw(b"\0a\0b")   # shorter than any request: still a token, and a wrong one
        assert w.is_closed_by_peer()


def test_connection_count_per_listener(secured):
    """Each listener counts its own connections (other tests' clients may still be closing: bounds, not equality)."""
    plain_before = secured.metric("connection_count", "PLAINTEXT")
    with WireClient(secured.ports["SASL_PLAINTEXT"]) as a, WireClient(secured.ports["SASL_PLAINTEXT"]) as b:
        for w in (a, b):   # answered: the broker has accepted both
            w.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        during = secured.metric("connection_count", "SASL_PLAINTEXT")
        assert during >= 2
        assert secured.metric("connection_count", "PLAINTEXT") <= plain_before
    wait_until(lambda: secured.metric("connection_count", "SASL_PLAINTEXT") <= during - 2, 10,
               what="both SASL_PLAINTEXT connections counted closed")
