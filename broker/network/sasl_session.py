"""One connection's authentication state: its listener, its principal, and the SASL exchange in progress.

Kafka's SaslServerAuthenticator: on a SASL listener, before authentication completes, only ApiVersions,
SaslHandshake and then SaslAuthenticate are accepted; anything else is an IllegalSaslStateException and the
connection is closed. A failed SaslAuthenticate is answered, then the connection is closed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.security import principal as principals
from broker.security.acl import KafkaPrincipal
from broker.security.sasl import SaslServer

if TYPE_CHECKING:
    from broker.network.listeners import ListenerSpec, ServerSecurity

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
PRE_AUTH_APIS = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))


class ConnectionSession:
    """Who a connection is; PLAINTEXT (and the in-process harness) sessions are authenticated ANONYMOUS."""

    def __init__(self, listener: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT",
                 spec: ListenerSpec | None = None, security: ServerSecurity | None = None,
                 peer_subject: object = None, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.listener = listener
        self.security_protocol = security_protocol
        self.spec = spec
        self.security = security
        self.clock_ms = clock_ms
        self.principal: KafkaPrincipal = principals.ANONYMOUS
        self.authenticated = not security_protocol.startswith("SASL_")
        if security_protocol == "SSL" and peer_subject:
            mapper = security.principal_mapper if security is not None else None
            self.principal = principals.build_principal(  # the certificate's subject, mapped (KIP-371)
                "SSL", peer_subject=peer_subject, mapper=mapper)  # type: ignore[arg-type]
        self.sasl_server: SaslServer | None = None
        self.mechanism = ""
        self.handshake_version = -1
        self.authenticated_at_ms = 0
        self.lifetime_ms = 0
        self.close_after_response = False

    @property
    def is_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def raw_tokens(self) -> bool:
        """After a SaslHandshake v0 the client sends bare SASL tokens (size-prefixed, no request header)."""
        return self.handshake_version == 0 and self.sasl_server is not None and not self.authenticated

    def accepts(self, api_key: int) -> bool:
        """Whether a request may be served now; False closes the connection (IllegalSaslStateException)."""
        if not self.is_sasl:
            return True
        if self.authenticated and self.expired() and api_key != SASL_HANDSHAKE:
            return False   # KIP-368: past its session lifetime only a re-authentication is served
        if self.authenticated:
            return True
        if api_key == SASL_AUTHENTICATE:
            return self.sasl_server is not None
        return api_key in PRE_AUTH_APIS

    def expired(self) -> bool:
        return self.lifetime_ms > 0 and self.clock_ms() - (self.authenticated_at_ms + self.lifetime_ms) > 0

    def complete(self, authorization_id: str, lifetime_ms: int) -> None:
        """The SASL exchange succeeded: the principal is User:<authorization id>."""
        self.principal = principals.build_principal(self.security_protocol, authorization_id)
        self.authenticated = True
        self.authenticated_at_ms = self.clock_ms()
        self.lifetime_ms = lifetime_ms
        self.sasl_server = None
