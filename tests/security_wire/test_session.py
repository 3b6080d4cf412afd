"""ConnectionSession: what a SASL connection may send before and after authenticating, KIP-368 expiry, and the
principal of a TLS client certificate."""

from __future__ import annotations

from types import SimpleNamespace

from broker.network.sasl_session import ConnectionSession
from broker.security.principal import SslPrincipalMapper

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36


def test_sasl_connection_accepts_only_the_handshake_until_authenticated():
    now = [1_000]
    s = ConnectionSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", clock_ms=lambda: now[0])
    assert s.accepts(API_VERSIONS) and s.accepts(SASL_HANDSHAKE)
    assert not s.accepts(METADATA) and not s.accepts(SASL_AUTHENTICATE)   # no handshake yet
    s.sasl_server = SimpleNamespace()  # type: ignore[assignment]
    assert s.accepts(SASL_AUTHENTICATE) and not s.accepts(METADATA)
    s.complete("alice", lifetime_ms=5_000)
    assert str(s.principal) == "User:alice" and s.accepts(METADATA)
    now[0] += 5_001   # past the session lifetime: only a re-authentication is served
    assert not s.accepts(METADATA) and s.accepts(SASL_HANDSHAKE)


def test_plaintext_is_anonymous_and_unrestricted():
    s = ConnectionSession()
    assert str(s.principal) == "User:ANONYMOUS" and s.accepts(METADATA) and s.authenticated


def test_ssl_principal_from_the_client_certificate_through_the_mapping_rules():
    subject = ((("organizationalUnitName", "test"),), (("commonName", "Client1"),))
    security = SimpleNamespace(principal_mapper=SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/L,DEFAULT"))
    s = ConnectionSession("SSL", "SSL", security=security, peer_subject=subject)  # type: ignore[arg-type]
    assert str(s.principal) == "User:client1"
    assert str(ConnectionSession("SSL", "SSL", peer_subject=subject).principal) == "User:CN=Client1,OU=test"
    assert str(ConnectionSession("SSL", "SSL").principal) == "User:ANONYMOUS"


