"""Opening a listener with a security protocol: SASL_PLAINTEXT on the server's raw-socket accept loop,
SSL and SASL_SSL as asyncio TLS servers whose connections the server then serves like any other."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.network.listeners import ListenerSpec
from broker.network.sasl_session import ConnectionSession

if TYPE_CHECKING:
    from broker.server import KafkaServer

log = logging.getLogger(__name__)
TLS_HANDSHAKE_TIMEOUT_S = 10.0


async def open_listener(server: KafkaServer, spec: ListenerSpec,
                        bind: Callable[[str, int], socket.socket]) -> tuple[socket.socket | asyncio.AbstractServer, int]:
    """Bind `spec` and start accepting on it: (what `stop` closes, the bound port)."""
    sock = bind(spec.host, spec.port)
    port = sock.getsockname()[1]
    if spec.ssl_context is None:
        server._extra_tasks.append(asyncio.create_task(server._accept_loop(sock, spec), name=f"accept-{spec.name}"))
        return sock, port
    tls = await asyncio.start_server(lambda r, w: _serve_tls(server, spec, r, w), sock=sock, ssl=spec.ssl_context,
                                     ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S)
    return tls, port


async def _serve_tls(server: KafkaServer, spec: ListenerSpec,
                     reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One TLS connection, after its handshake: served until it closes."""
    from broker.network.tls import StreamConnection

    peer = writer.get_extra_info("peername")
    host = peer[0] if peer else "unknown"
    if not server.admits(host):
        writer.close()
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    observer = server.security.auth_observer
    if spec.protocol == "SSL" and observer is not None:   # Kafka counts a completed TLS handshake
        observer.authentication(spec.name, True)
    conn = StreamConnection(reader, writer, asyncio.get_running_loop())
    conn.session = ConnectionSession(spec.name, spec.protocol, spec, server.security, peer_subject=conn.peer_subject())
    await server.serve_connection(conn, host)
