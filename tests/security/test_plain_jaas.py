"""PLAIN (RFC 4616, Kafka's PlainSaslServer rules) and sasl.jaas.config parsing/key resolution."""

import pytest

from broker.security import sasl
from broker.security.plain import PlainSaslServer, jaas_password_lookup, plain_client_response
from broker.security.sasl import IllegalSaslStateException, SaslAuthenticationException
from common import jaas
from common.jaas import JaasConfigError, parse_jaas_config, parse_single_module, server_jaas_config

# The issue's broker config, verbatim.
BROKER_PROPS = {
    "listener.name.sasl_ssl.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";',
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "sasl.jaas.config": "ignored.Module required;",
}


def test_issue_config_resolves_per_listener_and_mechanism():
    plain = server_jaas_config(BROKER_PROPS, "SASL_SSL", "PLAIN")
    assert plain is not None and plain.login_module == jaas.PLAIN_LOGIN_MODULE
    assert plain.control_flag == "REQUIRED"
    assert plain.options == {"username": "admin", "password": "admin-secret",
                             "user_admin": "admin-secret", "user_alice": "alice-secret"}
    assert jaas.login_credentials(plain) == ("admin", "admin-secret")
    scram = server_jaas_config(BROKER_PROPS, "sasl_ssl", "SCRAM-SHA-512")
    assert scram == jaas.JaasEntry(jaas.SCRAM_LOGIN_MODULE, "REQUIRED", {})
    assert server_jaas_config(BROKER_PROPS, "SASL_SSL", "SCRAM-SHA-256") is None
    assert server_jaas_config(BROKER_PROPS, "OTHER", "PLAIN") is None   # bare sasl.jaas.config ignored
    assert jaas.listener_jaas_key("SASL_SSL", "SCRAM-SHA-512") == \
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"


def test_quotes_escapes_comments_and_bare_words():
    [e] = parse_jaas_config(
        "a.b.C Optional /* c */ k1=\"x\\\"y\\\\z\\n\" k2='s q;' // tail\n k3=bare-word_1.x k4=\"\" k5=\"\\101\";")
    assert e.control_flag == "OPTIONAL"
    assert e.options == {"k1": 'x"y\\z\n', "k2": "s q;", "k3": "bare-word_1.x", "k4": "", "k5": "A"}


def test_multiple_modules_and_errors():
    assert len(parse_jaas_config("A required; B sufficient x=\"1\";")) == 2
    with pytest.raises(JaasConfigError, match="contains 2 login modules, should be 1"):
        parse_single_module("A required; B sufficient;")
    cases = {
        "": "Login module not specified",
        "A": "control flag not specified",
        "A maybe;": "Invalid login module control flag 'maybe'",
        "A required k;": "Value not specified for key 'k'",
        "A required k=123;": "Value not specified for key 'k'",   # StreamTokenizer reads a number
        'A required k="v"': "not terminated by semi-colon",
    }
    for text, message in cases.items():
        with pytest.raises(JaasConfigError, match=message):
            parse_jaas_config(text)


def _server():
    entry = server_jaas_config(BROKER_PROPS, "SASL_SSL", "PLAIN")
    assert entry is not None
    return PlainSaslServer(jaas_password_lookup(entry.options))


def test_plain_success_and_authzid_rule():
    s = _server()
    assert s.evaluate_response(plain_client_response("alice", "alice-secret")) == b""
    assert s.is_complete() and s.authorization_id() == "alice"
    with pytest.raises(IllegalSaslStateException):
        s.evaluate_response(plain_client_response("alice", "alice-secret"))
    s = _server()
    s.evaluate_response(plain_client_response("alice", "alice-secret", authzid="alice"))
    assert s.authorization_id() == "alice"
    with pytest.raises(SaslAuthenticationException, match="authorization id that is different"):
        _server().evaluate_response(plain_client_response("alice", "alice-secret", authzid="admin"))


@pytest.mark.parametrize("token,message", [
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0mallory\0alice-secret", "Invalid username or password"),
    (b"\0username\0", "password not specified"),
    (b"\0\0pw", "username not specified"),
    (b"alice\0alice-secret", "expected 3 tokens, got 2"),
    (b"\0alice\0alice-secret\0extra", "expected 3 tokens, got 4"),
    (b"\0password\0alice-secret", "Invalid username or password"),   # "user_password" is no option
])
def test_plain_failures_reach_the_client(token, message):
    s = _server()
    with pytest.raises(SaslAuthenticationException, match=message) as e:
        s.evaluate_response(token)
    assert sasl.client_error_message(e.value, "PLAIN") == str(e.value)
    assert not s.is_complete()


def test_handshake_mechanism_choice():
    enabled = sasl.parse_enabled_mechanisms("PLAIN, SCRAM-SHA-512")
    assert enabled == ["PLAIN", "SCRAM-SHA-512"]
    assert sasl.select_mechanism("SCRAM-SHA-512", enabled) == "SCRAM-SHA-512"
    with pytest.raises(sasl.UnsupportedSaslMechanismException, match="Unsupported SASL mechanism plain"):
        sasl.select_mechanism("plain", enabled)
    assert sasl.parse_enabled_mechanisms(None) == ["GSSAPI"]
