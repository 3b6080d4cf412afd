"""Serving ``GET /metrics``: one routing rule, on the owner's event loop or in a thread of its own.

`MetricsHTTPServer` runs on an asyncio loop (the broker): rendering there means the registry is read by the same
thread that records into it, so nothing needs locking on the recording path. `serve_threaded` is the same endpoint
for services without a loop (xmonitor, the lag monitor), on a ThreadingHTTPServer; it may carry other routes (the
lag monitor's Burrow API) and negotiates format and gzip as prometheus-client's own server does.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Response = tuple[int, bytes, str]   # status, body, content type


def respond(method: str, path: str, render: Callable[[], tuple[bytes, str]]) -> Response:
    """The /metrics endpoint's answer to one request (`path` without its query string)."""
    if method not in ("GET", "HEAD"):
        return 405, b"", "text/plain"
    if path not in ("/metrics", "/"):
        return 404, b"not found\n", "text/plain"
    try:
        body, ctype = render()
    except Exception:
        log.exception("metrics render failed")
        return 500, b"render failed\n", "text/plain"
    return 200, body, ctype


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
                code, body, ctype = respond(method, path.split("?", 1)[0], lambda: (self._render(), CONTENT_TYPE))
                status = f"{code} {HTTPStatus(code).phrase}"
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


def registry_exposition(registry: CollectorRegistry) -> Callable[[str], tuple[bytes, str]]:
    """A prometheus-client registry rendered in the format the scraper's Accept header asks for."""
    def render(accept: str) -> tuple[bytes, str]:
        encoder, ctype = choose_encoder(accept)
        return encoder(registry), ctype
    return render


def text_exposition(render: Callable[[], str]) -> Callable[[str], tuple[bytes, str]]:
    """Text already in the Prometheus exposition format (0.0.4)."""
    return lambda _accept: (render().encode(), CONTENT_TYPE)


def serve_threaded(exposition: Callable[[str], tuple[bytes, str]], host: str, port: int, *,
                   other: Callable[[str, str], Response] | None = None, name: str = "metrics-http"
                   ) -> ThreadingHTTPServer:
    """Serve /metrics on host:port (0: any free port) from a daemon thread; `shutdown()` the result to stop.

    `exposition(accept_header)` gives (body, content type). Requests for other paths go to `other(method, url)`
    when given (and then "/" is theirs too), else get /metrics' 404/405.
    """
    class Handler(BaseHTTPRequestHandler):
        def _route(self) -> None:
            path = self.path.split("?", 1)[0]
            if other is not None and path != "/metrics":
                code, body, ctype = other(self.command, self.path)
            else:
                code, body, ctype = respond(self.command, path, lambda: exposition(self.headers.get("Accept", "")))
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            if code == 200 and path == "/metrics" and "gzip" in self.headers.get("Accept-Encoding", ""):
                body = gzip.compress(body)   # as prometheus-client's server: scrapes of big pages stay small
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_DELETE = _route

        def log_message(self, fmt: str, *args: object) -> None:
            pass   # scrapes every few seconds would flood the service's log

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name=name).start()
    return server
