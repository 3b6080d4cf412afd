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
    # Set by the server: sends a result now, before the handler returns (a Fetch or a Produce completed inside the
    # purgatory's notify, as Kafka's delayed operations complete in the notifying thread). None: the handler
    # returns its result. Called with the context: a hook holding the context would be a reference cycle, which
    # keeps every request's objects alive until the cyclic collector runs (and stops the loop while it does).
    send_now: Callable[[RequestContext, dict], None] | None = None
    responded: bool = False  # answered through `respond`: the handler's return value is then ignored
    request_size: int = 0  # the request's bytes (a Produce's bandwidth against its client quota)
    throttle_ms: int = 0  # the largest client-quota throttle so far, and its quota manager (broker/quota/)
    throttled_by: Any = None

    def respond(self, result: dict) -> None:
        """Answer now (only when `send_now` is set); raises what encoding or queueing the answer raised."""
        assert self.send_now is not None
        self.send_now(self, result)
        self.responded = True


class Completion:
    """A parked request's answer given inside the purgatory's notify (`RequestContext.respond`), as Kafka's
    DelayedOperation.onComplete runs in the notifying thread. The notifier never sees a failure: it is kept and
    raised in the handler when it resumes, which closes the connection as a failed write does."""

    __slots__ = ("_ctx", "_failure")

    def __init__(self, ctx: RequestContext) -> None:
        self._ctx = ctx
        self._failure: Exception | None = None

    @property
    def possible(self) -> bool:
        """Whether the server takes answers before the handler returns (a connection it serves)."""
        return self._ctx.send_now is not None

    def give(self, build: Callable[[], dict]) -> None:
        """Build the answer and hand it to the server now."""
        try:
            self._ctx.respond(build())
        except Exception as e:   # not built or not queued
            self._failure = e

    def settled(self) -> bool:
        """In the resumed handler: True if the answer was given; raises what giving it failed with."""
        if self._failure is not None:
            raise self._failure
        return self._ctx.responded
