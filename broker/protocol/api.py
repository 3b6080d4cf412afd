"""What a request handler is: one async handler per API key serves every advertised version of it.

A handler returns the response body as a dict of kio field names, or None for "no response" (Produce with acks=0).
Each handler module lists its ApiSpecs in ``APIS``; ``broker.protocol.routes.handler_table`` joins them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.security.acl import KafkaPrincipal
from broker.security.principal import ANONYMOUS

if TYPE_CHECKING:
    from broker.broker import Broker

Handler = Callable[["RequestContext", Any], Awaitable[dict | None]]


@dataclass(frozen=True)
class ApiSpec:
    """`handle` serves `api_key` for every version in [min_version, max_version]."""

    api_key: int
    min_version: int
    max_version: int
    handle: Handler


@dataclass
class RequestContext:
    """What a handler may know about the request besides its body."""

    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    remote_s: float = 0.0  # time parked in the purgatory (RequestMetrics RemoteTimeMs)
    principal: KafkaPrincipal = ANONYMOUS  # who the connection authenticated as (User:ANONYMOUS by default)
    listener: str = "PLAINTEXT"  # the listener name the connection came in on
    security_protocol: str = "PLAINTEXT"  # that listener's protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    session: Any = None  # the connection's broker.network.sasl_session.ConnectionSession (None: in-process)
    # Set by the server: answer with this result now, before the handler returns (a Fetch or a Produce completed
    # inside the purgatory's notify, as Kafka's delayed operations complete in the notifying thread). None: return
    # the result.
    respond: Callable[[dict], None] | None = None
    responded: bool = False  # respond was called; the handler's return value is then ignored
