"""The TLS connection (asyncio streams) under the server's Connection interface: an answer completed inside the
purgatory's notify must not take the send batch's path, which writes to the raw socket beneath TLS (the secured
cluster's fetches were answered in plaintext inside the TLS stream)."""

import asyncio
import socket

from broker.network.tls import StreamConnection


async def test_a_stream_connection_refuses_the_raw_send_batch_and_writes_through_its_stream():
    a, b = socket.socketpair()
    try:
        reader, writer = await asyncio.open_connection(sock=a)
        conn = StreamConnection(reader, writer, asyncio.get_running_loop())
        sent: list[str] = []
        assert conn.queue(b"answer", lambda: sent.append("queued")) is False
        await asyncio.sleep(0)   # a queued batch would have gone out on this turn
        await conn.write(b"answer", lambda: sent.append("written"))
        b.settimeout(5)
        assert b.recv(100) == b"answer" and sent == ["written"]
        conn.close()
    finally:
        b.close()
