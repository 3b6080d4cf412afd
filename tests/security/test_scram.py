"""SCRAM: RFC 5802/7677 vectors, Kafka's credential string and ZooKeeper format, full exchanges."""

import base64
import json

import pytest

from broker.config_entity import desanitize, sanitize
from broker.security import scram
from broker.security.sasl import (
    IllegalSaslStateException,
    SaslAuthenticationException,
    SaslException,
    client_error_message,
)
from broker.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    Alteration,
    ScramMechanism,
    credential_from_string,
    credential_to_string,
    generate_credential,
)
from broker.security.scram_sasl import (
    DelegationToken,
    ScramSaslClient,
    ScramSaslServer,
    escape_saslname,
    unescape_saslname,
)

# RFC 5802 section 5 (SCRAM-SHA-1) and RFC 7677 section 3 (SCRAM-SHA-256): user "user", password "pencil".
RFC = {
    "sha1": dict(
        client_first="n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        server_nonce="3rfcNHYJY1ZVvWVs7j",
        salt="QSXCR+Q6sek8bf92",
        server_first="r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        client_final="c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        server_final="v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
    ),
    "sha256": dict(
        client_first="n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        salt="W22ZaJ0SNY7soEsUEjb6gQ==",
        server_first="r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        client_final="c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        server_final="v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ),
}
SCRAM_SHA_1 = ScramMechanism("SCRAM-SHA-1", "sha1", 4096, 0)   # RFC 5802's hash; not a Kafka mechanism
RFC_MECHS = {"sha1": SCRAM_SHA_1, "sha256": SCRAM_SHA_256}


def _store(mech, user, password, iterations=4096, salt=None):
    cred = generate_credential(mech, password, iterations, salt)
    return lambda u, m: cred if (u, m) == (user, mech.mechanism_name) else None


@pytest.mark.parametrize("vector", ["sha1", "sha256"])
def test_server_reproduces_rfc_exchange(vector):
    v, mech = RFC[vector], RFC_MECHS[vector]
    server = ScramSaslServer(mech, _store(mech, "user", "pencil", salt=base64.b64decode(v["salt"])),
                             nonce_factory=lambda: v["server_nonce"])
    assert server.evaluate_response(v["client_first"].encode()).decode() == v["server_first"]
    assert not server.is_complete()
    assert server.evaluate_response(v["client_final"].encode()).decode() == v["server_final"]
    assert server.is_complete() and server.authorization_id() == "user"


@pytest.mark.parametrize("vector", ["sha1", "sha256"])
def test_client_reproduces_rfc_exchange(vector):
    v, mech = RFC[vector], RFC_MECHS[vector]
    client_nonce = v["client_first"].rsplit("r=", 1)[1]
    client = ScramSaslClient(mech, "user", "pencil", nonce_factory=lambda: client_nonce)
    assert client.first().decode() == v["client_first"]
    assert client.respond(v["server_first"].encode()).decode() == v["client_final"]
    assert client.respond(v["server_final"].encode()) == b"" and client.complete


def test_rfc_proof_with_a_wrong_password_is_refused():
    v = RFC["sha256"]
    server = ScramSaslServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, "user", "pencil2",
                                                   salt=base64.b64decode(v["salt"])),
                             nonce_factory=lambda: v["server_nonce"])
    server.evaluate_response(v["client_first"].encode())
    with pytest.raises(SaslException, match="Invalid client credentials") as e:
        server.evaluate_response(v["client_final"].encode())
    assert not isinstance(e.value, SaslAuthenticationException)   # detail hidden from the client
    assert client_error_message(e.value, "SCRAM-SHA-256") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    with pytest.raises(IllegalSaslStateException):
        server.evaluate_response(b"anything")


def _exchange(mech, store, user, password, **client_kw):
    server = ScramSaslServer(mech, store)
    client = ScramSaslClient(mech, user, password, **client_kw)
    final = client.respond(server.evaluate_response(client.first()))
    client.respond(server.evaluate_response(final))
    return server, client


@pytest.mark.parametrize("mech", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_full_exchange_both_kafka_mechanisms(mech):
    user = "al,i=ce"   # needs =2C / =3D escaping both ways
    server, client = _exchange(mech, _store(mech, user, "alice-secret"), user, "alice-secret")
    assert server.is_complete() and client.complete
    assert server.authorization_id() == user


def test_wrong_password_unknown_user_and_wrong_mechanism_fail():
    store = _store(SCRAM_SHA_512, "alice", "alice-secret")
    with pytest.raises(SaslException, match="Invalid client credentials"):
        _exchange(SCRAM_SHA_512, store, "alice", "nope")
    with pytest.raises(SaslException, match="Invalid user credentials"):
        _exchange(SCRAM_SHA_512, store, "bob", "alice-secret")
    with pytest.raises(SaslException, match="Invalid user credentials"):   # only a SHA-512 credential
        _exchange(SCRAM_SHA_256, store, "alice", "alice-secret")


def test_client_first_grammar():
    store = _store(SCRAM_SHA_256, "user", "pencil")
    for bad in [b"p=tls-unique,,n=user,r=abc", b"y,,n=user,r=abc", b"n,,n=user", b"n,,n=us=er,r=abc",
                b"n,,n=user,r=a b", b""]:
        with pytest.raises(SaslException):
            ScramSaslServer(SCRAM_SHA_256, store).evaluate_response(bad)
    # an authzid other than the user is refused with a message the client sees
    with pytest.raises(SaslAuthenticationException, match="authorization id that is different"):
        ScramSaslServer(SCRAM_SHA_256, store).evaluate_response(b"n,a=admin,n=user,r=abc")
    # unknown extensions are ignored, as Kafka does
    out = ScramSaslServer(SCRAM_SHA_256, store, nonce_factory=lambda: "S").evaluate_response(
        b"n,,n=user,r=abc,foo=bar")
    assert out.startswith(b"r=abcS,s=")


def test_final_message_checks_nonce_and_channel_binding():
    mech = SCRAM_SHA_256
    store = _store(mech, "user", "pencil")
    server = ScramSaslServer(mech, store)
    client = ScramSaslClient(mech, "user", "pencil")
    final = client.respond(server.evaluate_response(client.first()))
    tampered = final.replace(b"c=biws", b"c=eSws")
    with pytest.raises(SaslException, match="channel binding"):
        server.evaluate_response(tampered)
    server = ScramSaslServer(mech, store)
    client = ScramSaslClient(mech, "user", "pencil")
    final = client.respond(server.evaluate_response(client.first()))
    with pytest.raises(SaslException, match="nonce"):
        server.evaluate_response(final.replace(b",p=", b"x,p="))
    # Kafka 3.9 checks endsWith (librdkafka < 2.6.1 repeats its nonce in front): a prefix passes the nonce
    # check, and the proof, computed over the message the client really sent, decides.
    server = ScramSaslServer(mech, store)
    client = ScramSaslClient(mech, "user", "pencil")
    final = client.respond(server.evaluate_response(client.first()))
    with pytest.raises(SaslException, match="Invalid client credentials"):
        server.evaluate_response(final.replace(b",r=", b",r=x"))


def test_too_few_iterations_are_refused_by_server_and_client():
    store = _store(SCRAM_SHA_256, "user", "pencil", iterations=1000)
    with pytest.raises(SaslException, match="less than the minimum 4096"):
        ScramSaslServer(SCRAM_SHA_256, store).evaluate_response(b"n,,n=user,r=abc")
    client = ScramSaslClient(SCRAM_SHA_256, "user", "pencil", nonce_factory=lambda: "abc")
    client.first()
    with pytest.raises(SaslException, match="less than the minimum"):
        client.respond(b"r=abcdef,s=QSXCR+Q6sek8bf92,i=1000")


def test_client_rejects_bad_server_signature_and_error():
    server = ScramSaslServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, "user", "pencil"))
    client = ScramSaslClient(SCRAM_SHA_256, "user", "pencil")
    client.respond(server.evaluate_response(client.first()))
    with pytest.raises(SaslException, match="Invalid server signature"):
        client.respond(b"v=" + base64.b64encode(bytes(32)))
    with pytest.raises(SaslException, match="failed with error: invalid-proof"):
        client.respond(b"e=invalid-proof")


def test_tokenauth_refused_without_token_support_and_owner_with_it():
    mech = SCRAM_SHA_512
    store = _store(mech, "alice", "alice-secret")
    with pytest.raises(SaslException, match="Invalid tokenId : alice"):
        _exchange(mech, store, "alice", "alice-secret", extensions={"tokenauth": "true"})
    token = DelegationToken("bob", generate_credential(mech, "hmac-of-token"), 12345)
    server = ScramSaslServer(mech, store, tokens=lambda tid: token if tid == "tok1" else None)
    client = ScramSaslClient(mech, "tok1", "hmac-of-token", extensions={"tokenauth": "true"})
    client.respond(server.evaluate_response(client.respond(server.evaluate_response(client.first()))))
    assert server.authorization_id() == "bob" and server.token_authenticated
    assert server.token_expiry_timestamp_ms == 12345


def test_saslname_escaping():
    assert escape_saslname("a=b,c") == "a=3Db=2Cc"
    assert unescape_saslname("a=3Db=2Cc") == "a=b,c"
    with pytest.raises(SaslException):
        unescape_saslname("a=3E")


def test_credential_derivation_matches_rfc7677_keys():
    # From RFC 7677's exchange: the proof XOR ClientSignature is ClientKey, so StoredKey = H(ClientKey)
    # must verify; we check the derived keys by reproducing the RFC's server signature independently.
    v = RFC["sha256"]
    cred = generate_credential(SCRAM_SHA_256, "pencil", 4096, base64.b64decode(v["salt"]))
    auth = (v["client_first"][3:] + "," + v["server_first"] + "," + v["client_final"].rsplit(",p=", 1)[0]).encode()
    assert "v=" + base64.b64encode(SCRAM_SHA_256.hmac(cred.server_key, auth)).decode() == v["server_final"]


def test_credential_string_is_kafkas_format():
    cred = scram.ScramCredential(b"salt", b"\x01\x02", b"\xff", 8192)
    text = credential_to_string(cred)
    assert text == "salt=c2FsdA==,stored_key=AQI=,server_key=/w==,iterations=8192"
    assert credential_from_string(text) == cred
    for bad in ["salt=c2FsdA==,stored_key=AQI=,server_key=/w==", "salt=c2FsdA==,stored_key=AQI=,server_key=/w==,"
                "iterations=x", "salt=***,stored_key=AQI=,server_key=/w==,iterations=1"]:
        with pytest.raises(ValueError, match="Credentials not valid"):
            credential_from_string(bad)


def test_zookeeper_user_config():
    cred = generate_credential(SCRAM_SHA_512, "alice-secret")
    data = scram.with_credential(None, SCRAM_SHA_512, cred)
    assert json.loads(data) == {"version": 1, "config": {"SCRAM-SHA-512": credential_to_string(cred)}}
    assert data.startswith(b'{"version":1,"config":{"SCRAM-SHA-512":"salt=')
    with_quota = b'{"version":1,"config":{"producer_byte_rate":"1024","SCRAM-SHA-512":"' + \
        credential_to_string(cred).encode() + b'"}}'
    assert scram.credentials_from_user_config(with_quota) == {"SCRAM-SHA-512": cred}
    removed = json.loads(scram.with_credential(with_quota, SCRAM_SHA_512, None))
    assert removed["config"] == {"producer_byte_rate": "1024"}
    assert scram.user_config_path("alice") == "/config/users/alice"
    assert sanitize("user 1*@x~") == "user%201%2A%40x%7E"   # what Kafka's Sanitizer writes
    assert desanitize(sanitize("CN=a b,O=c")) == "CN=a b,O=c"


def test_generated_credential_verifies_and_salt_is_kafka_style():
    cred = generate_credential(SCRAM_SHA_512, "pw")
    assert cred.iterations == 4096 and len(cred.stored_key) == 64 and len(cred.server_key) == 64
    assert cred.salt.decode().isalnum()   # a base-36 string's bytes, as ScramFormatter makes it
    assert generate_credential(SCRAM_SHA_512, "pw").salt != cred.salt
    assert scram.secure_random_string(lambda bits: 36 ** 2 + 35) == "10z"


def test_salted_password_upsertion_equals_password_credential():
    salt = b"fixed"
    salted = scram.salted_password(SCRAM_SHA_256, "pw", salt, 4096)
    assert scram.credential_from_salted_password(SCRAM_SHA_256, salt, salted, 4096) == \
        generate_credential(SCRAM_SHA_256, "pw", 4096, salt)


def test_parse_kafka_configs_scram_value():
    assert scram.parse_scram_config_value("[iterations=8192,password=a,b]") == (8192, "a,b")
    assert scram.parse_scram_config_value("[password=alice-secret]") == (4096, "alice-secret")
    with pytest.raises(ValueError):
        scram.parse_scram_config_value("[iterations=8192]")


def test_validate_alterations():
    existing = {("alice", "SCRAM-SHA-512")}
    exists = lambda u, m: (u, m.mechanism_name) in existing   # noqa: E731
    res = scram.validate_alterations([
        Alteration("alice", 2),                                        # delete existing
        Alteration("bob", 2),                                          # delete missing
        Alteration("carol", 1, 1000, b"s", b"p"),                      # too few
        Alteration("dave", 1, 20000, b"s", b"p"),                      # too many
        Alteration("erin", 9, 4096, b"s", b"p"),                       # unknown mechanism
        Alteration("frank", 1, 4096, b"s", b"p"), Alteration("frank", 1),   # one mechanism twice
        Alteration("", 1, 4096, b"s", b"p"),
        Alteration("gina", 2, 4096, b"s", b"p"),
        Alteration("hank", 1, 4096, b"s", b"p"), Alteration("hank", 2, 4096, b"s", b"p"),  # two mechanisms
    ], exists)
    # Kafka 3.9 with ZooKeeper (ZkAdminManager) refuses a repeated (user, mechanism) pair, not a repeated user.
    assert {u: c for u, (c, _) in res.items()} == {
        "alice": 0, "bob": 91, "carol": 93, "dave": 93, "erin": 33, "frank": 92, "": 93, "gina": 0, "hank": 0}


def test_describe_users():
    cred = scram.ScramCredential(b"s", b"k", b"v", 8192)
    creds = {"alice": {"SCRAM-SHA-512": cred, "SCRAM-SHA-256": cred}, "bob": {}}
    assert scram.describe_users(None, creds) == [("alice", 0, None, [(1, 8192), (2, 8192)])]
    res = scram.describe_users(["bob", "carol", "alice", "carol"], creds)
    assert [(u, code) for u, code, _, _ in res] == [("bob", 91), ("carol", 92), ("alice", 0)]


def test_credential_store_failure_is_a_sasl_failure():
    def broken(user, mech):
        raise OSError("zookeeper down")
    with pytest.raises(SaslException, match="Credentials could not be obtained"):
        ScramSaslServer(SCRAM_SHA_256, broken).evaluate_response(b"n,,n=user,r=abc")
