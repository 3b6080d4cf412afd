"""Principals per listener protocol (DefaultKafkaPrincipalBuilder, SslPrincipalMapper) and KIP-368 timing."""

import pytest

from broker.security import sasl
from broker.security.acl import KafkaPrincipal
from broker.security.principal import ANONYMOUS, SslPrincipalMapper, build_principal, rfc2253_name

# ssl.getpeercert()["subject"] for C=US, O=Acme, OU=ServiceUsers, CN=app1 (most significant first)
SUBJECT = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),),
           (("organizationalUnitName", "ServiceUsers"),), (("commonName", "app1"),))


def test_rfc2253_like_java():
    assert rfc2253_name(SUBJECT) == "CN=app1,OU=ServiceUsers,O=Acme\\, Inc.,C=US"
    assert rfc2253_name(((("commonName", " a=b#"),),)) == "CN=\\ a\\=b\\#"
    assert rfc2253_name(((("commonName", "x"), ("userId", "7")),)) == "CN=x+UID=7"
    # emailAddress has no RFC 2253 keyword: Java writes the OID and the DER IA5String in hex
    assert rfc2253_name(((("emailAddress", "a@b"),),)) == "1.2.840.113549.1.9.1=#1603614062"


def test_mapping_rules_kip371_examples():
    dn = "CN=app1,OU=ServiceUsers,O=Acme\\, Inc.,C=US"
    assert SslPrincipalMapper().name(dn) == dn
    rules = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U, RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT")
    assert rules.name(dn) == "APP1"
    assert rules.name("CN=bob,OU=Eng,O=x") == "bob@eng"
    assert rules.name("O=x") == "O=x"
    with pytest.raises(ValueError, match="No rules apply to O=x"):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=x")
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/L junk, DEFAULT x")


def test_build_principal_per_protocol():
    assert build_principal("PLAINTEXT") == ANONYMOUS == KafkaPrincipal("User", "ANONYMOUS")
    assert build_principal("SSL") == ANONYMOUS
    assert build_principal("SASL_SSL", "alice", SUBJECT) == KafkaPrincipal.user("alice")
    assert str(build_principal("ssl", peer_subject=SUBJECT)) == "User:CN=app1,OU=ServiceUsers,O=Acme\\, Inc.,C=US"
    with pytest.raises(ValueError):
        build_principal("SASL_PLAINTEXT")


def test_session_lifetime_and_expiry():
    assert sasl.session_lifetime_ms(1000, None) == 0
    assert sasl.session_lifetime_ms(1000, 0) == 0
    assert sasl.session_lifetime_ms(1000, 60_000) == 60_000
    assert sasl.session_lifetime_ms(1000, 60_000, credential_expiration_ms=31_000) == 30_000
    assert sasl.session_lifetime_ms(1000, None, credential_expiration_ms=500) == 0
    assert not sasl.session_expired(1000, 0, 10**12)
    assert not sasl.session_expired(1000, 60_000, 61_000)
    assert sasl.session_expired(1000, 60_000, 61_001)


def test_reauthentication_keeps_mechanism_and_principal():
    sasl.check_reauthentication("PLAIN", "User:alice", "PLAIN", "User:alice")
    with pytest.raises(sasl.SaslAuthenticationException, match="not supported for re-authentication"):
        sasl.check_reauthentication("PLAIN", "User:alice", "SCRAM-SHA-512")
    with pytest.raises(sasl.SaslAuthenticationException, match="Cannot change principals"):
        sasl.check_reauthentication("PLAIN", "User:alice", "PLAIN", "User:bob")
    e = sasl.SaslException("secret detail")
    assert "secret" not in sasl.client_error_message(e, "PLAIN", reauthenticating=True)
    assert "during re-authentication" in sasl.client_error_message(e, "PLAIN", reauthenticating=True)
