"""The network edge: TCP framing, per-connection ordering, connection limits, request dispatch.

Sockets are driven directly (not through asyncio streams) so that large Produce frames are received into
one buffer and Fetch responses are written straight from the buffers read from the log, without the copies and
buffer compaction that StreamReader/StreamWriter do; small responses go out with the others of the loop's turn in
one system call (broker/network/send_batch.py).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections.abc import Callable
from functools import partial
from time import perf_counter, perf_counter_ns
from typing import TYPE_CHECKING

from broker.errors import ErrorCode, InvalidRequest
from broker.memory_pool import MemoryPool
from broker.network.connection import Connection
from broker.network.listeners import ListenerSpec, ServerSecurity, rewrite_endpoints
from broker.network.sasl_session import ConnectionSession
from broker.observer import AuthenticationObserver, ConnectionObserver, RequestObserver, RequestTiming
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.codec import UnparseableRequest, encode_response, parse_request
from broker.protocol.handlers.api_versions import API_VERSIONS_KEY, unsupported_version_body
from broker.quota.connection_limits import ConnectionCounts, ConnectionLimits
from broker.quota.throttle import Throttle, skips_request_quota
from common.log_budget import LogBudget

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)
_ENDPOINT_APIS = frozenset((3, 10, 60))  # Metadata, FindCoordinator, DescribeCluster


def _sent(watcher: ConnectionObserver, timing: RequestTiming) -> None:
    """A response's last byte is with the kernel (or, for acks=0, none is due): stamp and record the request."""
    timing.t4 = perf_counter()
    timing.phase = 0
    watcher.request_done(timing)
    timing.body = timing.result = None  # a Fetch result holds log buffers: let them go now


class _EarlyAnswer:
    """One request's response sent before its handler returns: a Fetch or an acks=all Produce completed inside the
    purgatory's notify, as Kafka's DelayedFetch and DelayedProduce answer from the thread that appended or moved
    the high watermark. A response too large for the send batch is kept and written when the handler returns."""

    __slots__ = ("conn", "watcher", "timing", "queued", "response", "throttle")

    def __init__(self, conn: Connection, watcher: ConnectionObserver | None, timing: RequestTiming | None) -> None:
        self.conn, self.watcher, self.timing = conn, watcher, timing
        self.queued = False
        self.response: bytes | list | None = None
        self.throttle: Throttle | None = None   # a client-quota throttle: the connection is muted after the answer

    def on_sent(self) -> Callable[[], None] | None:
        timing = self.timing
        if timing is None or self.watcher is None:
            return None
        timing.t3 = perf_counter()
        timing.phase = 2
        return partial(_sent, self.watcher, timing)

    def send(self, response: bytes | list | None) -> None:
        if response is None:
            return
        if self.conn.queue(response, self.on_sent()):
            self.queued = True
        else:
            self.response = response


def _not_after_of(spec: ListenerSpec) -> Callable[[], float | None]:
    """The listener's certificate expiry as it is when asked (a keystore update replaces it)."""
    return lambda: spec.cert_not_after


class KafkaServer:
    """Serves Kafka requests strictly in order per connection, as clients require (the Kafka protocol guide:
    requests on one TCP connection are processed in the order they are sent).

    `handlers` is the handler table (broker.protocol.routes); `security` the listeners and what their SASL/TLS
    connections share; `observer`, if any, is told about every connection and request, `auth_observer` about
    every authentication (both: the broker's metrics)."""

    def __init__(self, broker: Broker, handlers: dict[int, ApiSpec],
                 security: ServerSecurity, observer: RequestObserver | None = None,
                 auth_observer: AuthenticationObserver | None = None) -> None:
        self.broker = broker
        self.config = broker.config
        self.handlers = handlers
        self._bad_frame_log = LogBudget(broker.clock)   # a client looping bad frames cannot fill the disk
        self._observer = observer
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task | None = None
        self._idle_task: asyncio.Task | None = None
        self.security = security
        secured = [spec.name for spec in security.listeners if spec.protocol != "PLAINTEXT"]
        if secured and auth_observer is not None:
            security.auth_observer = auth_observer
            auth_observer.watch_authentication(secured)
            auth_observer.watch_certificates({s.name: _not_after_of(s) for s in security.listeners
                                              if s.cert_not_after is not None})
        self.ports: dict[str, int] = {}  # listener name -> bound port
        self._extra: list[socket.socket] = []  # listeners after the first
        self._extra_tasks: list[asyncio.Task] = []
        self.counts = ConnectionCounts([spec.name for spec in security.listeners],
                                       broker.fetchers.inter_broker_listener)
        self._connections: dict[Connection, asyncio.Task] = {}
        self._closing: set[Connection] = set()   # cancelled over max.connections, not yet ended
        self._slot_freed = asyncio.Event()
        self.request_pool = MemoryPool(self.config.queued_max_request_bytes)

    @staticmethod
    def _bind(host: str, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in (host or "") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host or "127.0.0.1", port))
        sock.listen(1024)
        sock.setblocking(False)
        return sock

    async def start(self) -> int:
        """Open every listener; the first one's port is returned (the broker's registered endpoint)."""
        first, *others = self.security.listeners
        if first.protocol == "PLAINTEXT":
            self._listener = sock = self._bind(first.host, first.port)
            self._accept_task = asyncio.create_task(self._accept_loop(sock, first), name="accept")
            self.ports[first.name] = sock.getsockname()[1]
        else:
            others.insert(0, first)
        for spec in others:
            await self._open_secured(spec)
        if self.config.connections_max_idle_ms >= 0:
            self._idle_task = asyncio.create_task(self.close_idle_connections(), name="idle-connections")
        return self.ports[first.name]

    async def _open_secured(self, spec: ListenerSpec) -> None:
        """A listener with a security protocol (broker.network.listeners)."""
        from broker.network import accept

        server, port = await accept.open_listener(self, spec, self._bind)
        self._extra.append(server)
        self.ports[spec.name] = port

    async def close_idle_connections(self) -> None:
        """Close every connection idle (no request arriving, none being answered) for connections.max.idle.ms, as
        Kafka's Selector does, looking a few times per idle period (at most every second)."""
        idle_s = self.config.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(1.0, max(idle_s / 4, 0.01)))
            deadline = time.monotonic() - idle_s
            for conn in [c for c in self._connections if c.last_active < deadline and c not in self._closing]:
                self._close(conn, "idle for more than connections.max.idle.ms")

    async def stop(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        if self._accept_task is not None:
            self._accept_task.cancel()
        if self._listener is not None:
            self._listener.close()
        for server in self._extra:
            server.close()
        for t in self._extra_tasks:
            t.cancel()
        tasks = list(self._connections.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def listener_connection_count(self, listener: str) -> int:
        """Open connections on one listener (socket-server-metrics connection-count per listener)."""
        return sum(1 for c in self._connections if c.session is not None and c.session.listener == listener)

    def _in_phase(self, phase: int) -> int:
        return sum(1 for c in self._connections if c.timing is not None and c.timing.phase == phase)

    @property
    def request_queue_size(self) -> int:
        """Requests read and not yet answered (being handled, incl. parked in the purgatory); observed only."""
        return self._in_phase(1)

    @property
    def response_queue_size(self) -> int:
        """Encoded responses still being written to the socket; observed connections only."""
        return self._in_phase(2)

    async def _accept_loop(self, listener: socket.socket | None = None, spec: ListenerSpec | None = None) -> None:
        loop = asyncio.get_running_loop()
        while True:
            listening = listener or self._listener
            assert listening is not None  # both callers pass the socket they opened
            sock, addr = await loop.sock_accept(listening)
            host = addr[0]
            protected = await self.wait_for_connection_slot(spec)
            if not self.admit(sock, host, spec, protected):
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(sock, loop)
            if spec is not None:
                conn.session = ConnectionSession(spec.name, spec.protocol, spec, self.security)
            self.serve_connection(conn, host, counted=True)

    async def wait_for_connection_slot(self, spec: ListenerSpec | None) -> bool:
        """Kafka's ConnectionQuotas.waitForConnectionSlot for a connection just accepted on `spec`: count it against
        the creation rates (max.connection.creation.rate, the listener's) and, over a rate, hold the acceptor for
        the throttle time; then wait for a free slot under the listener's and the broker's max.connections. True
        when the listener is protected (the inter-broker one, with others beside it): the broker-wide limits do
        not count the brokers' own connections (an address's rate still does, as in Kafka)."""
        listener = self._listener_name(spec)
        protected = self.counts.protected(listener)
        ms = self.broker.quotas.connections.on_accept(protected, listener)
        start, blocked = perf_counter_ns(), bool(ms)
        if ms:
            await asyncio.sleep(ms / 1000)
        while not self.counts.slot_available(listener):  # ends as connections close or the limits rise
            blocked = True
            self._slot_freed.clear()
            await self._slot_freed.wait()
        if blocked and self._observer is not None:
            self._observer.acceptor_blocked(perf_counter_ns() - start, listener)
        return protected

    def _listener_name(self, spec: ListenerSpec | None) -> str:
        return spec.name if spec is not None else self.security.listeners[0].name

    def _connection_listener(self, conn: Connection) -> str:
        """The listener a connection came in on (an in-process harness's connection: the first)."""
        return self._listener_name(conn.session.spec if conn.session is not None else None)

    def admit(self, sock: socket.socket, host: str, spec: ListenerSpec | None, protected: bool) -> bool:
        """After the acceptor's wait: whether to serve a connection just accepted. One over its address's rate is
        closed after its throttle time, one over its address's limit at once; a served one is counted."""
        if self._throttled(sock, host, protected, spec):
            return False
        if not self._take(spec, host):
            sock.close()
            return False
        return True

    def _throttled(self, sock: socket.socket, host: str, protected: bool,
                   spec: ListenerSpec | None) -> bool:
        """Whether `host` is over its connection creation rate (KIP-612): the connection is then left unread and
        closed once its throttle time has passed, as Kafka's acceptor treats a throttled one (DelayedCloseSocket)."""
        ms = self.broker.quotas.connections.on_connection(host, protected, self._listener_name(spec))
        if ms:
            asyncio.get_running_loop().call_later(ms / 1000, sock.close)
        return bool(ms)

    def _take(self, spec: ListenerSpec | None, host: str) -> bool:
        """Count a connection accepted on `spec` from `host`, unless `host` is at its limit (max.connections.per.ip
        or its override): False, and the caller closes it. Counted from here until it ends or `release` (a TLS connection
        during its handshake too, as Kafka counts it from the accept)."""
        if not self.counts.admits(host):   # Kafka's words (TooManyConnectionsException)
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     host, self.counts.limits.ip_max(host))
            return False
        listener = self._listener_name(spec)
        self.counts.inc(listener, host)
        if self.counts.protected(listener):
            self.close_excess_connections()
        return True

    def release(self, spec: ListenerSpec | None, host: str) -> None:
        """Uncount a connection `admit` counted that is not going to be served (a failed TLS handshake)."""
        self.counts.dec(self._listener_name(spec), host)
        self._slot_freed.set()

    def apply_connection_limits(self, limits: ConnectionLimits) -> None:
        """New max.connections values: waiting acceptors look again, connections over a lowered limit close."""
        self.counts.limits = limits
        self._slot_freed.set()
        self.close_excess_connections()

    def close_excess_connections(self) -> None:
        """Over max.connections (a protected listener's connections, or a lowered limit): close the least recently
        active connections of the other listeners (Kafka's Processor.closeExcessConnections). A connection being
        closed still counts until its task ends; it is not picked twice."""
        excess = self.counts.excess() - len(self._closing)
        if excess <= 0:
            return
        others = [c for c in self._connections
                  if c not in self._closing and not self.counts.protected(self._connection_listener(c))]
        for conn in sorted(others, key=lambda c: c.last_active)[:excess]:
            self._close(conn, f"max.connections={self.counts.limits.max_connections} reached")

    def _close(self, conn: Connection, why: str) -> None:
        """End a served connection from outside its task; it counts until the task has ended."""
        log.info("closing a connection from the broker side: %s", why)
        self._closing.add(conn)
        self._connections[conn].cancel()

    def serve_connection(self, conn: Connection, host: str, counted: bool = False) -> asyncio.Task:
        """Serve an accepted connection until it closes. The accept loop's; an in-process test harness hands its
        in-memory connections here too (not `counted` by `admit`), so their requests take the very path socket
        requests take."""
        if not counted:
            self.counts.inc(self._connection_listener(conn), host)
        task = self._connections[conn] = asyncio.create_task(self._serve(conn, host))
        return task

    async def _serve(self, conn: Connection, host: str) -> None:
        watcher = self._observer.connection_opened() if self._observer is not None else None
        if watcher is not None:
            conn.timing = RequestTiming()
        try:
            while True:
                raw = conn.session is not None and conn.session.raw_tokens   # a bare SASL token may be short
                frame = await conn.read_frame(self.config.socket_request_max_bytes, self.request_pool, 1 if raw else 8)
                try:
                    await self._serve_one(conn, frame, host, watcher)
                finally:
                    self.request_pool.release(len(frame))
        except (ConnectionError, OSError):
            pass
        except (ValueError, UnparseableRequest) as e:
            left_out = self._bad_frame_log.take()
            if left_out is not None:
                log.warning("closing connection from %s: %s%s", host, e,
                            f" ({left_out} such closes not logged before this one)" if left_out else "")
        except asyncio.CancelledError:
            pass  # broker shutdown
        except Exception:  # a bug; the traceback is logged and only this connection is lost
            log.exception("unexpected failure on a connection from %s", host)
        finally:
            self._connections.pop(conn, None)
            self._closing.discard(conn)
            self.counts.dec(self._connection_listener(conn), host)
            self._slot_freed.set()
            conn.close()
            if watcher is not None:
                asyncio.get_running_loop().call_soon(watcher.closed)   # after the last request's record

    async def _serve_one(self, conn: Connection, frame: bytes | memoryview, host: str,
                         watcher: ConnectionObserver | None) -> None:
        timing = conn.timing if watcher is not None else None  # stamped only while someone watches
        session = conn.session
        if session is not None and session.raw_tokens:   # after a SaslHandshake v0: a bare SASL token, no request
            from broker.protocol.handlers.sasl_auth import raw_token

            await conn.write(raw_token(session, bytes(frame), host))
            return
        if timing is not None:
            timing.t0 = perf_counter()
        early = _EarlyAnswer(conn, watcher, timing)
        response = await self.dispatch(frame, host, timing, session, early)
        # Recorded once the response is with the kernel, which for a batched response is after the loop's whole
        # batch went out: the handlers woken together with this one (the other follower, the consumer after the
        # producer) are not answered behind this one's bookkeeping.
        if not early.queued:
            on_sent = early.on_sent()
            if response is not None:
                await conn.write(response, on_sent)
            elif on_sent is not None:
                on_sent()
        if watcher is not None:
            conn.timing = RequestTiming()   # the record of this request keeps the old one
        if session is not None and session.close_after_response:
            raise ConnectionError("closed after a failed SASL exchange")
        if early.throttle is not None:
            await self._mute(early.throttle)

    async def _mute(self, throttle: Throttle) -> None:
        """Read nothing more from the connection until the throttle ends (Kafka mutes a throttled channel after
        sending its response); the throttled client sees its throttle time in the response meanwhile."""
        try:
            await asyncio.sleep(max(0.0, throttle.until - self.broker.clock.monotonic()))
        finally:
            throttle.manager.throttle_done()

    def _encode(self, ctx: RequestContext, timing: RequestTiming | None, result: dict | None) -> bytes | list | None:
        """The handler's result as the response frame (None: no response), stamped as the handler's end."""
        if timing is not None:
            timing.t2, timing.result, timing.remote_s = perf_counter(), result, ctx.remote_s
        if result is None:
            return None
        session = ctx.session
        if session is not None and session.spec is not None and ctx.api_key in _ENDPOINT_APIS:
            rewrite_endpoints(result, session.spec, self.security.listeners[0], self.broker.metadata.brokers(),
                              self.broker.node_id)
        return encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, result)

    def _send_now(self, timing: RequestTiming | None, early: _EarlyAnswer, ctx: RequestContext,
                  result: dict) -> None:
        """RequestContext.send_now: encode and send now; the handler's return value is then ignored."""
        early.send(self._encode(ctx, timing, result))

    def _failed(self, timing: RequestTiming | None, api_key: int, code: int) -> None:
        if timing is not None and self._observer is not None:
            self._observer.request_failed(api_key, code)

    async def dispatch(self, frame: bytes | memoryview, client_host: str, timing: RequestTiming | None = None,
                       session: ConnectionSession | None = None, early: _EarlyAnswer | None = None
                       ) -> bytes | list | None:
        """Serve one request frame; with `timing` (observed), stamp the handler's start and end into it.
        `session` is the connection's authentication state (None: PLAINTEXT, User:ANONYMOUS). With `early`, the
        handler may answer before it returns (RequestContext.respond): the answer is queued there, and what could
        not be queued (too large for the send batch) is returned instead."""
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
        if timing is not None:
            timing.start(api_key, api_version)
        spec = self.handlers.get(api_key)
        if api_key == API_VERSIONS_KEY and (spec is None or api_version > spec.max_version):
            return encode_response(API_VERSIONS_KEY, 0, correlation_id, unsupported_version_body(self.handlers))
        if spec is None or not spec.min_version <= api_version <= spec.max_version:
            self._failed(timing, api_key, ErrorCode.unsupported_version)
            raise UnparseableRequest(f"unsupported api_key={api_key} version={api_version}")
        if session is not None and not session.accepts(api_key):  # Kafka's IllegalSaslStateException
            raise UnparseableRequest(f"unexpected api_key={api_key} before SASL authentication completed")
        try:
            header, body = parse_request(frame)
        except UnparseableRequest:
            self._failed(timing, api_key, ErrorCode.invalid_request)
            raise
        ctx = RequestContext(self.broker, api_key, api_version, correlation_id, header.client_id, client_host)
        if session is not None:
            ctx.principal, ctx.listener, ctx.session = session.principal, session.listener, session
            ctx.security_protocol = session.security_protocol
        if timing is not None:
            timing.body, timing.t1 = body, perf_counter()
        if early is not None:
            ctx.send_now = partial(self._send_now, timing, early)
        ctx.request_size = len(frame)
        quotas = self.broker.quotas
        started = perf_counter_ns() if quotas.enabled else 0
        try:
            result = await spec.handle(ctx, body)
            if quotas.enabled:
                throttle = quotas.finish(ctx, perf_counter_ns() - started if started else 0,
                                         None if ctx.responded else result, skips_request_quota(api_key, body))
                if throttle is not None and timing is not None:
                    timing.throttle_ms = throttle.ms
                if early is not None:
                    early.throttle = throttle
                elif throttle is not None:
                    throttle.manager.throttle_done()   # an in-process dispatch: no connection to mute
            if ctx.responded:
                return early.response if early is not None else None   # None: queued already
            return self._encode(ctx, timing, result)
        except InvalidRequest as e:
            self._failed(timing, api_key, ErrorCode.invalid_request)
            raise UnparseableRequest(f"api_key={api_key} v{api_version}: {e.message}") from None
        except Exception:
            # A bug, not bad input (the frame parsed): keep the traceback, close only this connection.
            log.exception("serving api_key=%d v%d failed", api_key, api_version)
            self._failed(timing, api_key, ErrorCode.unknown_server_error)
            raise UnparseableRequest("handler failure") from None
