"""Handler registry: one async handler per API key serves every advertised version of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.broker import Broker

Handler = Callable[["RequestContext", Any], Awaitable[dict | None]]


@dataclass(frozen=True)
class ApiSpec:
    api_key: int
    min_version: int
    max_version: int
    handle: Handler


HANDLERS: dict[int, ApiSpec] = {}


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


def handler(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Register `fn` as the handler of `api_key`, advertised for [min_version, max_version].

    A handler returns the response body as a dict of kio field names, or None for "no response"
    (Produce with acks=0).
    """

    def register(fn: Handler) -> Handler:
        if api_key in HANDLERS:
            raise RuntimeError(f"api key {api_key} registered twice")
        HANDLERS[api_key] = ApiSpec(api_key, min_version, max_version, fn)
        return fn

    return register


def load_handlers() -> dict[int, ApiSpec]:
    """Import every handler module so that its @handler registrations run."""
    from broker.protocol.handlers import (  # noqa: F401
        admin,
        api_versions,
        cluster_admin,
        fetch,
        groups,
        metadata,
        produce,
    )

    return HANDLERS
