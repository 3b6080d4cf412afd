"""What SASL servers share: Kafka's two failure kinds, the client-visible message, and the handshake choice.

Kafka's SaslServerAuthenticator sends a `SaslAuthenticationException`'s message to the client as it is, but
replaces a plain `SaslException`'s (which may say whether a user exists) with a fixed sentence. Both answer
SASL_AUTHENTICATION_FAILED (58) in SaslAuthenticate; an unknown mechanism in SaslHandshake answers
UNSUPPORTED_SASL_MECHANISM (33).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


class SaslException(Exception):
    """A failure whose detail stays in the broker's log (javax.security.sasl.SaslException)."""

    error_code = SASL_AUTHENTICATION_FAILED


class SaslAuthenticationException(SaslException):
    """A failure whose message goes to the client (org.apache.kafka...SaslAuthenticationException)."""


class IllegalSaslStateException(SaslAuthenticationException):
    """A token after the exchange finished or failed (Kafka's IllegalSaslStateException)."""

    error_code = ILLEGAL_SASL_STATE


class UnsupportedSaslMechanismException(Exception):
    """SaslHandshake named a mechanism the listener does not enable."""

    def __init__(self, mechanism: str, enabled: Sequence[str]) -> None:
        # Kafka's message, sent in the handshake response's error path.
        super().__init__(f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self.enabled = list(enabled)


class SaslServer(Protocol):
    """The part of javax.security.sasl.SaslServer the broker drives."""

    mechanism: str

    def evaluate_response(self, response: bytes) -> bytes: ...

    def is_complete(self) -> bool: ...

    def authorization_id(self) -> str: ...


def client_error_message(exc: SaslException, mechanism: str, reauthenticating: bool = False) -> str:
    """The error_message Kafka puts in SaslAuthenticateResponse for this failure."""
    if isinstance(exc, SaslAuthenticationException):
        return str(exc)
    # Kafka hides SaslException detail: "it may contain sensitive data like the existence of the user".
    what = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


def select_mechanism(requested: str, enabled: Sequence[str]) -> str:
    """SaslHandshake: the requested mechanism if enabled (exact, case-sensitive as Kafka compares)."""
    if requested not in enabled:
        raise UnsupportedSaslMechanismException(requested, enabled)
    return requested


def parse_enabled_mechanisms(value: str | None) -> list[str]:
    """`sasl.enabled.mechanisms` (a comma list; Kafka's default is GSSAPI, which we do not offer)."""
    if value is None:
        return ["GSSAPI"]
    return [m.strip() for m in value.split(",") if m.strip()]
