"""SaslHandshake (17) and SaslAuthenticate (36): Kafka's SaslServerAuthenticator as request handlers.

The connection's `ConnectionSession` (ctx.session) holds the exchange; the server refuses every other request
before it completes (broker.network.sasl_session). After a SaslHandshake v0 the tokens come bare, without
SaslAuthenticate framing (`raw_token`); librdkafka checks that v0 is advertised before it uses SASL at all.
"""

from __future__ import annotations

import logging
import struct

from broker.errors import ErrorCode
from broker.network.sasl_session import ConnectionSession
from broker.protocol.api import ApiSpec, RequestContext
from broker.security import plain, sasl, scram
from broker.security.sasl import SaslException, SaslServer
from broker.security.scram_sasl import ScramSaslServer

log = logging.getLogger(__name__)
SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY = 17, 36


def _session(ctx: RequestContext) -> ConnectionSession | None:
    session = ctx.session
    ok = isinstance(session, ConnectionSession) and session.is_sasl and session.security is not None
    return session if ok else None


def new_sasl_server(ctx: RequestContext, session: ConnectionSession, mechanism: str) -> SaslServer:
    """The server for a mechanism: PLAIN checks the listener's `user_<name>` JAAS options, SCRAM the stored
    credentials (/config/users, or the standalone broker's local metadata)."""
    if mechanism == sasl.PLAIN:
        entry = session.spec.jaas[mechanism] if session.spec is not None else None
        return plain.PlainSaslServer(plain.jaas_password_lookup(entry.options if entry else {}))
    assert session.security is not None   # _session() checked it
    return ScramSaslServer(scram.SCRAM_MECHANISMS[mechanism], session.security.credentials.lookup)


async def handle_sasl_handshake(ctx: RequestContext, req) -> dict:
    session = _session(ctx)
    if session is None:   # Kafka's KafkaApis on a non-SASL listener
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": ()}
    enabled = session.spec.mechanisms if session.spec is not None else []
    try:
        mechanism = sasl.select_mechanism(req.mechanism, enabled)
    except sasl.UnsupportedSaslMechanismException:
        log.debug("SASL mechanism %r requested on listener %s is not enabled", req.mechanism, session.listener)
        session.close_after_response = True   # SaslServerAuthenticator closes after answering
        return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": tuple(enabled)}
    if session.authenticated and session.mechanism and mechanism != session.mechanism:
        session.close_after_response = True   # KIP-368: a re-authentication keeps the mechanism
        return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": (session.mechanism,)}
    session.sasl_server = new_sasl_server(ctx, session, mechanism)
    session.mechanism = mechanism
    session.handshake_version = ctx.api_version
    return {"error_code": ErrorCode.none, "mechanisms": tuple(enabled)}


async def handle_sasl_authenticate(ctx: RequestContext, req) -> dict:
    session = _session(ctx)
    server = session.sasl_server if session is not None else None
    if session is None or server is None:
        if session is not None:
            session.close_after_response = True
        return {"error_code": ErrorCode.illegal_sasl_state, "error_message": "Unexpected SaslAuthenticate request",
                "auth_bytes": b"", "session_lifetime": 0}
    reauth = session.authenticated
    previous = str(session.principal)
    try:
        challenge = server.evaluate_response(bytes(req.auth_bytes))
        if not server.is_complete():
            return {"error_code": ErrorCode.none, "error_message": None, "auth_bytes": challenge,
                    "session_lifetime": 0}
        user = server.authorization_id()
        if reauth:
            sasl.check_reauthentication(session.mechanism, previous, session.mechanism, f"User:{user}")
    except SaslException as exc:
        log.info("failed authentication with %s (%s) on listener %s: %s", ctx.client_host, session.mechanism,
                 session.listener, exc)
        _count(ctx, session, success=False)
        session.close_after_response = True
        return {"error_code": exc.error_code, "auth_bytes": b"", "session_lifetime": 0,
                "error_message": sasl.client_error_message(exc, session.mechanism, reauth)}
    assert session.security is not None
    now = session.clock_ms()
    expiry = getattr(server, "token_expiry_timestamp_ms", None)
    lifetime = sasl.session_lifetime_ms(now, session.security.reauth_ms, expiry) if ctx.api_version >= 1 else 0
    session.complete(user, lifetime)
    _count(ctx, session, success=True)
    return {"error_code": ErrorCode.none, "error_message": None, "auth_bytes": challenge,
            "session_lifetime": lifetime}


def raw_token(session: ConnectionSession, token: bytes, client_host: str) -> bytes:
    """One bare SASL token after a SaslHandshake v0: the size-prefixed challenge to send back. A failure closes
    the connection without an answer, as Kafka does for v0 clients (ConnectionError)."""
    server = session.sasl_server
    assert server is not None
    try:
        challenge = server.evaluate_response(token)
        if server.is_complete():
            session.complete(server.authorization_id(), 0)
            _count(None, session, success=True)
    except SaslException as exc:
        log.info("failed authentication with %s (%s, v0 handshake) on listener %s: %s", client_host,
                 session.mechanism, session.listener, exc)
        _count(None, session, success=False)
        raise ConnectionError("SASL authentication failed") from None
    return struct.pack(">i", len(challenge)) + challenge


def _count(ctx: RequestContext | None, session: ConnectionSession, success: bool) -> None:
    observer = session.security.auth_observer if session.security is not None else None
    if observer is not None:
        observer.authentication(session.listener, success)


APIS = [
    ApiSpec(SASL_HANDSHAKE_KEY, 0, 1, handle_sasl_handshake),
    ApiSpec(SASL_AUTHENTICATE_KEY, 0, 2, handle_sasl_authenticate),
]
