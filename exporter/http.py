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
import socket
import ssl
import threading
from collections.abc import Callable, Generator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from exporter.web_config import UNAUTHORIZED, UNAUTHORIZED_HEADERS, WebConfig, authorized

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


def _header(head: bytes, name: str) -> str | None:
    """One header's value from a raw request head (the first line is the request line)."""
    prefix = name.lower().encode() + b":"
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(prefix):
            return line[len(prefix):].strip().decode("latin-1")
    return None


class MetricsHTTPServer:
    """`web_config` (exporter.web_config, the exporter-toolkit's web.config.file): TLS and basic auth; None: neither."""

    def __init__(self, render: Callable[[], bytes], host: str = "127.0.0.1", port: int = 0,
                 web_config: WebConfig | None = None,
                 render_steps: Callable[[], Generator[float | None, None, bytes]] | None = None) -> None:
        self._render = render
        # The page made in steps, the loop serving between them (exporter.collector.render_steps): a broker's
        # scrape would otherwise hold its event loop for the whole render.
        self._render_steps = render_steps
        self.host = host
        self.port = port
        self.web_config = web_config
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        ctx = self.web_config.ssl_context() if self.web_config is not None else None
        self._server = await asyncio.start_server(self._handle, self.host, self.port, ssl=ctx)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _stepped(self) -> Callable[[], tuple[bytes, str]]:
        """The page made by `render_steps`, awaiting a loop turn between steps; as a render for `respond`, which
        turns a failure into a 500."""
        assert self._render_steps is not None
        steps = self._render_steps()
        clock = asyncio.get_running_loop().time
        pauses = Pauses()
        try:
            while True:
                start = clock()
                share = next(steps)
                # As long again for the loop's other work: a request needs a few loop turns to be answered, and
                # with a step in every turn it waited several steps (at 10,000 partitions a p99 of 50-70 ms).
                # A step may yield a smaller share (exporter.collector.NAMING_PAUSE_SHARE).
                paused = clock()
                await asyncio.sleep(pauses.after_step(paused - start, 1.0 if share is None else share))
                pauses.paused(clock() - paused)
        except StopIteration as done:
            page: bytes = done.value
            return lambda: (page, CONTENT_TYPE)
        except Exception as e:
            failure = e

            def failed() -> tuple[bytes, str]:
                raise failure
            return failed

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split()
                method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
                keep_alive = b"connection: close" not in head.lower()
                extra = ""
                if not authorized(self.web_config, _header(head, "Authorization")):
                    code, body, ctype = UNAUTHORIZED
                    extra = "".join(f"{k}: {v}\r\n" for k, v in UNAUTHORIZED_HEADERS)
                else:
                    path = path.split("?", 1)[0]
                    render = (await self._stepped() if self._render_steps is not None and method in ("GET", "HEAD")
                              and path in ("/metrics", "/") else lambda: (self._render(), CONTENT_TYPE))
                    code, body, ctype = respond(method, path, render)
                status = f"{code} {HTTPStatus(code).phrase}"
                hdr = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}"
                       f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n").encode()
                writer.write(hdr)
                if method != "HEAD":
                    await _write_body(writer, body)
                await writer.drain()
                if not keep_alive:
                    break
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError, asyncio.LimitOverrunError, ssl.SSLError):
            pass
        finally:
            writer.close()


WRITE_CHUNK = 1 << 20   # bytes of a body handed to the transport at once
PAUSE_AFTER_S = 0.001   # a render step at least this long is followed by as long a pause for the loop's other work


class Pauses:
    """How long to pause after each step of a render so that the loop has as much time for its other work as the
    render took. A pause under `PAUSE_AFTER_S` is one loop turn (epoll's timeout is whole milliseconds). A pause
    that ran over (rounded up to the millisecond, or the loop busy) counts toward the next, up to `PAUSE_AFTER_S`:
    uncounted, the overrun made a first scrape of 10,000 partitions 2.6 times its render rather than 2."""

    def __init__(self) -> None:
        self.owed = 0.0  # render time not yet matched by a pause (below 0: paused ahead)

    def after_step(self, spent: float, share: float = 1.0) -> float:
        """The pause to take after a step that took `spent` seconds and asks `share` of that for the loop's other
        work (0: one loop turn)."""
        self.owed += spent * share
        return self.owed if self.owed >= PAUSE_AFTER_S else 0.0

    def paused(self, took: float) -> None:
        """The pause just taken lasted `took` seconds."""
        self.owed = max(self.owed - took, -PAUSE_AFTER_S)


async def _write_body(writer: asyncio.StreamWriter, body: bytes) -> None:
    """`body` in slices, draining between them: a 10,000-partition page is 7 MB, and a transport write copies what
    the socket does not take at once, in one piece on the event loop."""
    view = memoryview(body)
    for start in range(0, len(view), WRITE_CHUNK):
        writer.write(view[start:start + WRITE_CHUNK])
        await writer.drain()


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
                   other: Callable[[str, str], Response] | None = None, name: str = "metrics-http",
                   web_config: WebConfig | None = None) -> ThreadingHTTPServer:
    """Serve /metrics on host:port (0: any free port) from a daemon thread; `shutdown()` the result to stop.

    `exposition(accept_header)` gives (body, content type). Requests for other paths go to `other(method, url)`
    when given (and then "/" is theirs too), else get /metrics' 404/405. `web_config`: TLS and basic auth for
    every route (exporter.web_config).
    """
    ctx = web_config.ssl_context() if web_config is not None else None

    class Handler(BaseHTTPRequestHandler):
        # With TLS, a client that stalls in the handshake holds only its own thread, and not forever.
        timeout = 30 if ctx is not None else None

        def _route(self) -> None:
            path = self.path.split("?", 1)[0]
            if not authorized(web_config, self.headers.get("Authorization")):
                self._send(*UNAUTHORIZED, extra=UNAUTHORIZED_HEADERS)
                return
            if other is not None and path != "/metrics":
                code, body, ctype = other(self.command, self.path)
            else:
                code, body, ctype = respond(self.command, path, lambda: exposition(self.headers.get("Accept", "")))
            extra: tuple[tuple[str, str], ...] = ()
            if code == 200 and path == "/metrics" and "gzip" in self.headers.get("Accept-Encoding", ""):
                body = gzip.compress(body)   # as prometheus-client's server: scrapes of big pages stay small
                extra = (("Content-Encoding", "gzip"),)
            self._send(code, body, ctype, extra=extra)

        def _send(self, code: int, body: bytes, ctype: str, extra: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            for k, v in extra:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_DELETE = _route

        def log_message(self, fmt: str, *args: object) -> None:
            pass   # scrapes every few seconds would flood the service's log

    server = _Server((host, port), Handler)
    if ctx is not None:
        # The handshake happens on the handler's thread at its first read, not in the accept loop.
        server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name=name).start()
    return server


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        # A failed TLS handshake or a dropped client closes that connection only; no traceback on stderr.
        log.debug("http connection from %s failed", client_address, exc_info=True)
