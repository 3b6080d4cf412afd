"""What the network server tells an observer (the broker's metrics) about connections and requests.

The server owns the stamps; the observer only reads them. Kept apart from both so that neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class RequestTiming:
    """One request as the server saw it, reused for every request of a connection.

    Stamps are ``time.perf_counter()`` seconds: t0 the frame is fully read, t1 the handler starts, t2 it returns,
    t3 the response is encoded, t4 its last byte is handed to the kernel. t1 and t2 stay 0.0 when no handler ran
    (an ApiVersions answered with the v0 error body). `remote_s` is the time the handler spent parked in the
    purgatory; `body` and `result` are the parsed request and the response body (None until known).
    """

    __slots__ = ("api_key", "version", "t0", "t1", "t2", "t3", "t4", "remote_s", "body", "result", "phase",
                 "throttle_ms")

    def __init__(self) -> None:
        self.api_key = -1
        self.version = 0
        self.t0 = self.t1 = self.t2 = self.t3 = self.t4 = 0.0
        self.remote_s = 0.0
        self.throttle_ms = 0   # the client-quota throttle the answer carried (RequestMetrics ThrottleTimeMs)
        self.body: Any = None
        self.result: dict | None = None
        self.phase = 0  # 0 reading, 1 in the handler, 2 writing the response

    def start(self, api_key: int, version: int) -> None:
        """A new request whose frame was read at t0: forget the previous request's other values."""
        self.api_key, self.version = api_key, version
        self.t1 = self.t2 = self.t3 = self.t4 = self.remote_s = 0.0
        self.throttle_ms = 0
        self.body = self.result = None
        self.phase = 1


class ConnectionObserver(Protocol):
    """Told about the requests of one connection, in order."""

    def request_done(self, timing: RequestTiming) -> None:
        """A request answered (or, for Produce acks=0, served), on the loop turn after its last byte was sent."""

    def closed(self) -> None:
        """The connection is gone."""


class RequestObserver(Protocol):
    """Told about the server's connections and requests; every call is on the event loop and must not block."""

    def connection_opened(self) -> ConnectionObserver:
        """A connection was accepted: the observer of its requests."""

    def request_failed(self, api_key: int, code: int) -> None:
        """A request answered by closing the connection (unsupported version, invalid request, handler failure)."""

    def acceptor_blocked(self, ns: int, listener: str) -> None:
        """The accept loop of `listener` waited `ns` nanoseconds (a creation rate, or a connection slot)."""


class AuthenticationObserver(Protocol):
    """Told about authentications on the listeners (socket-server-metrics' authentication counters)."""

    def watch_authentication(self, listeners: list[str]) -> None:
        """The listeners whose authentications will be reported (their counters exist from the start)."""

    def authentication(self, listener: str, success: bool) -> None:
        """A SaslAuthenticate (or a TLS handshake on an SSL listener) succeeded or failed."""

    def watch_certificates(self, not_after: dict[str, Callable[[], float | None]]) -> None:
        """Each TLS listener's server certificate expiry (epoch seconds, read when asked: a keystore update
        changes it), for certificate-expiry alerts."""
