"""TLS connections: asyncio's SSL transport under the same interface as the server's raw-socket Connection.

A TLS listener is an asyncio server with the listener's SSLContext; a failed handshake (plaintext bytes on
the TLS port) closes only that connection, inside asyncio, before the broker sees it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from broker.log.segment import FileRegion
from broker.network.connection import Connection


class StreamConnection(Connection):
    """A connection read and written through asyncio streams (TLS): file regions are read into memory, since
    sendfile cannot encrypt."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(writer.get_extra_info("socket"), loop)
        self.reader, self.writer = reader, writer

    async def _fill(self, need: int) -> None:
        while len(self._buf) < need:
            data = await self.reader.read(256 * 1024)
            if not data:
                raise ConnectionError("closed by client")
            self._buf += data

    async def _read_body(self, size: int) -> bytes:
        """The frame's body through the TLS stream (read_frame has checked its size and reserved the memory)."""
        await self._fill(4 + size)
        frame = bytes(memoryview(self._buf)[4:4 + size])
        del self._buf[:4 + size]
        return frame

    async def write(self, data: bytes | list[bytes | memoryview | FileRegion],
                    on_sent: Callable[[], None] | None = None) -> None:
        parts = [data] if isinstance(data, bytes | bytearray) else data
        try:
            for p in parts:
                self.writer.write(p.read_bytes() if isinstance(p, FileRegion) else bytes(p))
        finally:
            for p in parts:
                if isinstance(p, FileRegion):
                    p.release()
        await self.writer.drain()
        if on_sent is not None:
            on_sent()

    def queue(self, data: bytes | list[bytes | memoryview | FileRegion],
              on_sent: Callable[[], None] | None = None) -> bool:
        """Never: the loop's send batch writes to the raw socket, under TLS. An answer completed inside the
        purgatory's notify is written through `write` when its handler returns."""
        return False

    def close(self) -> None:
        self.writer.close()

    def peer_subject(self) -> object:
        """The client certificate's subject (ssl.client.auth=required|requested), or None."""
        cert = self.writer.get_extra_info("peercert")
        return cert.get("subject") if cert else None
