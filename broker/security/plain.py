"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer and PlainServerCallbackHandler do it.

The client sends `authzid NUL authcid NUL passwd` once; the server answers an empty token or fails.
Passwords come from the listener's PlainLoginModule options `user_<name>="<password>"`. Every failure is a
SaslAuthenticationException, so its message reaches the client.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from broker.security.sasl import PLAIN, IllegalSaslStateException, SaslAuthenticationException

JAAS_USER_PREFIX = "user_"


def jaas_password_lookup(options: Mapping[str, str]) -> Callable[[str], str | None]:
    """PlainServerCallbackHandler's source of passwords: the `user_<name>` JAAS options."""
    return lambda username: options.get(JAAS_USER_PREFIX + username)


def _tokens(response: str) -> list[str]:
    """PlainSaslServer.extractTokens: split on NUL into at most 4 parts; exactly 3 are valid."""
    tokens = response.split("\0", 3)
    if len(tokens) != 3:
        raise SaslAuthenticationException(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens


class PlainSaslServer:
    """One connection's PLAIN server; `passwords(username)` gives the expected password or None."""

    mechanism = PLAIN

    def __init__(self, passwords: Callable[[str], str | None]) -> None:
        self._passwords = passwords
        self._complete = False
        self._authorization_id = ""

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise IllegalSaslStateException("Unexpected challenge in Sasl server state COMPLETE")
        authzid, username, password = _tokens(response.decode("utf-8", errors="replace"))
        if not username:
            raise SaslAuthenticationException("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationException("Authentication failed: password not specified")
        expected = self._passwords(username)
        # Constant-time like Kafka's MessageDigest.isEqual; an unknown user fails with the same message.
        if expected is None or not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            raise SaslAuthenticationException("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationException(
                "Authentication failed: Client requested an authorization id that is different from username")
        self._authorization_id = username
        self._complete = True
        return b""

    def is_complete(self) -> bool:
        return self._complete

    def authorization_id(self) -> str:
        if not self._complete:
            raise IllegalSaslStateException("Authentication exchange has not completed")
        return self._authorization_id


def plain_client_response(username: str, password: str, authzid: str = "") -> bytes:
    """What Kafka's PLAIN client sends (authzid empty, as the JDK's PlainClient does)."""
    return f"{authzid}\0{username}\0{password}".encode()
