"""The network edge: TCP framing, per-connection ordering, connection limits, request dispatch."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import Counter
from typing import TYPE_CHECKING

from broker.protocol.api import HANDLERS, RequestContext, load_handlers
from broker.protocol.codec import UnparseableRequest, encode_response, parse_request
from broker.protocol.handlers.api_versions import API_VERSIONS_KEY, unsupported_version_body

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)
_WRITE_HIGH_WATER = 4 << 20


class KafkaServer:
    """Serves Kafka requests strictly in order per connection, as clients require (protocol.md §1.6.2)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config
        self._server: asyncio.base_events.Server | None = None
        self._per_ip: Counter[str] = Counter()
        self._connections: set[asyncio.StreamWriter] = set()
        load_handlers()

    async def start(self) -> int:
        lst = self.config.listener
        self._server = await asyncio.start_server(self._serve, lst.host or "127.0.0.1", lst.port,
                                                  reuse_address=True, limit=1 << 20)
        return self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._connections):
            w.close()
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        host = peer[0]
        if (len(self._connections) >= self.config.max_connections
                or self._per_ip[host] >= self.config.max_connections_per_ip):
            log.warning("connection from %s refused: connection limit reached", host)
            writer.close()
            return
        self._connections.add(writer)
        self._per_ip[host] += 1
        try:
            await self._loop(reader, writer, host)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except UnparseableRequest as e:
            log.warning("closing connection from %s: %s", host, e)
        except asyncio.CancelledError:
            pass  # broker shutdown
        finally:
            self._connections.discard(writer)
            self._per_ip[host] -= 1
            if self._per_ip[host] <= 0:
                del self._per_ip[host]
            writer.close()

    async def _loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        max_size = self.config.socket_request_max_bytes
        while True:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            if size < 8 or size > max_size:
                log.warning("closing connection from %s: request size %d outside [8, %d] "
                            "(socket.request.max.bytes)", host, size, max_size)
                return
            frame = await reader.readexactly(size)
            response = await self.dispatch(frame, host)
            if response is not None:
                writer.write(response)
                if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                    await writer.drain()

    async def dispatch(self, frame: bytes, client_host: str) -> bytes | None:
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
        spec = HANDLERS.get(api_key)
        if api_key == API_VERSIONS_KEY and (spec is None or api_version > spec.max_version):
            return encode_response(API_VERSIONS_KEY, 0, correlation_id, unsupported_version_body())
        if spec is None or not spec.min_version <= api_version <= spec.max_version:
            raise UnparseableRequest(f"unsupported api_key={api_key} version={api_version}")
        header, body = parse_request(frame)
        ctx = RequestContext(self.broker, api_key, api_version, correlation_id, header.client_id, client_host)
        try:
            result = await spec.handle(ctx, body)
        except Exception:
            log.exception("handler for api_key=%d v%d failed", api_key, api_version)
            raise UnparseableRequest("handler failure") from None
        if result is None:
            return None
        if isinstance(result, bytes):  # pre-encoded body (hot paths encode by hand)
            return result
        return encode_response(api_key, api_version, correlation_id, result)
