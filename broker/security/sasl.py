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


# ---------------------------------------------------------------- re-authentication (KIP-368)

def session_lifetime_ms(authentication_end_ms: int, connections_max_reauth_ms: int | None,
                        credential_expiration_ms: int | None = None) -> int:
    """SaslAuthenticateResponse.session_lifetime_ms as SaslServerAuthenticator computes it: the shorter of
    `connections.max.reauth.ms` and the credential's remaining life (a delegation token's), 0 for none."""
    max_reauth_set = connections_max_reauth_ms is not None and connections_max_reauth_ms > 0
    if credential_expiration_ms is None and not max_reauth_set:
        return 0
    if credential_expiration_ms is None:
        lifetime = connections_max_reauth_ms or 0
    elif not max_reauth_set:
        lifetime = credential_expiration_ms - authentication_end_ms
    else:
        lifetime = min(credential_expiration_ms - authentication_end_ms, connections_max_reauth_ms or 0)
    return max(lifetime, 0)


def session_expired(authentication_end_ms: int, lifetime_ms: int, now_ms: int) -> bool:
    """KafkaChannel.serverAuthenticationSessionExpired: past its lifetime, a connection that sends anything
    but a new SaslHandshake is closed (and counted in expired-connections-killed-count)."""
    return lifetime_ms > 0 and now_ms - (authentication_end_ms + lifetime_ms) > 0


def check_reauthentication(previous_mechanism: str, previous_principal: str,
                           mechanism: str, principal: str | None = None) -> None:
    """A re-authentication keeps the mechanism and the principal (SaslServerAuthenticator.ReauthInfo)."""
    if mechanism != previous_mechanism:
        raise SaslAuthenticationException(
            f"SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of "
            f"mechanism '{previous_mechanism}'")
    if principal is not None and principal != previous_principal:
        raise SaslAuthenticationException(
            f"Cannot change principals during re-authentication from {previous_principal} to {principal}")
