"""Opening a listener with a security protocol: SASL_PLAINTEXT on the server's raw-socket accept loop,
SSL and SASL_SSL as asyncio TLS servers whose connections the server then serves like any other."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.network.listeners import ListenerSpec
from broker.network.sasl_session import ConnectionSession

if TYPE_CHECKING:
    from broker.network.connection import Connection
    from broker.server import KafkaServer

log = logging.getLogger(__name__)
TLS_HANDSHAKE_TIMEOUT_S = 10.0


async def open_listener(server: KafkaServer, spec: ListenerSpec,
                        bind: Callable[[str, int], socket.socket]) -> tuple[socket.socket, int]:
    """Bind `spec` and start accepting on it: (the listening socket `stop` closes, the bound port)."""
    sock = bind(spec.host, spec.port)
    port = sock.getsockname()[1]
    if spec.ssl_context is None:
        loop = server._accept_loop(sock, spec)
    else:
        loop = _accept_tls(server, spec, sock)
    server._extra_tasks.append(asyncio.create_task(loop, name=f"accept-{spec.name}"))
    return sock, port


async def _accept_tls(server: KafkaServer, spec: ListenerSpec, listener: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()
    while True:
        sock, addr = await loop.sock_accept(listener)
        protected = await server.wait_for_connection_slot(spec)   # as the plaintext acceptor does
        task = asyncio.create_task(_serve_tls(server, spec, sock, addr[0], protected))
        tasks.add(task)   # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(tasks.discard)


async def _serve_tls(server: KafkaServer, spec: ListenerSpec, sock: socket.socket, host: str,
                     protected: bool = False) -> None:
    """One TLS connection: its handshake (a failure closes only it; a TLS protocol error counts as a failed
    authentication, as Kafka counts an SslAuthenticationException), then served until it closes."""
    if not server.admit(sock, host, spec, protected):
        return
    try:
        conn = await _handshake(server, spec, sock, host)
    except BaseException:   # the broker stopping during the handshake
        sock.close()
        server.release(spec, host)
        raise
    if conn is None:
        sock.close()
        server.release(spec, host)
        return
    await server.serve_connection(conn, host, counted=True)   # released by the server when it closes


async def _handshake(server: KafkaServer, spec: ListenerSpec, sock: socket.socket, host: str) -> Connection | None:
    """The connection once its TLS handshake is done; None when it failed."""
    from broker.network.tls import StreamConnection

    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    observer = server.security.auth_observer
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock, ssl=spec.ssl_context,
                                                          ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S)
    except (ssl.SSLError, OSError, TimeoutError, ConnectionError) as e:
        log.info("TLS handshake with %s on listener %s failed: %r", host, spec.name, e)
        # Kafka counts an SslAuthenticationException (a TLS protocol error: plaintext bytes, an untrusted peer),
        # not an EOF during the handshake (an IOException): a port probe that connects and closes is no failure.
        if observer is not None and isinstance(e, ssl.SSLError) and not isinstance(e, ssl.SSLEOFError):
            observer.authentication(spec.name, False)
        return None
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    if spec.protocol == "SSL" and observer is not None:   # Kafka counts a completed TLS handshake
        observer.authentication(spec.name, True)
    conn = StreamConnection(reader, writer, loop)
    conn.session = ConnectionSession(spec.name, spec.protocol, spec, server.security, peer_subject=conn.peer_subject())
    return conn
