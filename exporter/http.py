"""A tiny asyncio HTTP endpoint serving ``GET /metrics`` on the owner's event loop.

Rendering on the event loop (not in prometheus-client's HTTP thread) means the registry is read by the same thread
that records into it, so nothing needs locking on the recording path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsHTTPServer:
    def __init__(self, render: Callable[[], bytes], host: str = "127.0.0.1", port: int = 0) -> None:
        self._render = render
        self.host = host
        self.port = port
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split()
                method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
                keep_alive = b"connection: close" not in head.lower()
                path = path.split("?", 1)[0]
                if method not in ("GET", "HEAD"):
                    status, body, ctype = "405 Method Not Allowed", b"", "text/plain"
                elif path in ("/metrics", "/"):
                    try:
                        status, body, ctype = "200 OK", self._render(), CONTENT_TYPE
                    except Exception:
                        log.exception("metrics render failed")
                        status, body, ctype = "500 Internal Server Error", b"render failed\n", "text/plain"
                else:
                    status, body, ctype = "404 Not Found", b"not found\n", "text/plain"
                hdr = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                       f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n").encode()
                writer.write(hdr if method == "HEAD" else hdr + body)
                await writer.drain()
                if not keep_alive:
                    break
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
