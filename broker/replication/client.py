"""A minimal asyncio Kafka client for broker-to-broker requests (follower Fetch, OffsetForLeaderEpoch)."""

from __future__ import annotations

import asyncio
import io
import struct
from typing import TYPE_CHECKING, Any

from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build, request_class, response_class

if TYPE_CHECKING:
    from broker.network.client_security import ClientSecurity


class BrokerConnection:
    """One connection to another broker; requests are sent one at a time."""

    def __init__(self, host: str, port: int, client_id: str, security: ClientSecurity | None = None) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.security = security  # TLS and SASL for the inter-broker listener (None: PLAINTEXT)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    async def connect(self, timeout_s: float) -> None:
        ctx = self.security.ssl_context if self.security is not None else None
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 20, ssl=ctx,
                                    server_hostname=self.host if ctx is not None else None), timeout_s)
        if self.security is not None:
            await self.security.authenticate(self, timeout_s)

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    async def request(self, api_key: int, version: int, body: dict[str, Any], timeout_s: float) -> Any:
        """Send one request and return the decoded kio response body."""
        correlation_id = self.next_correlation_id()
        cls: Any = request_class(api_key, version)  # a kio entity class
        header_cls = cls.__header_schema__
        out = io.BytesIO()
        out.write(b"\0\0\0\0")
        entity_writer(header_cls)(out, build(header_cls, {
            "request_api_key": api_key, "request_api_version": version,
            "correlation_id": correlation_id, "client_id": self.client_id}))
        entity_writer(cls)(out, build(cls, body))
        frame = out.getbuffer()
        struct.pack_into(">i", frame, 0, len(frame) - 4)
        return await self.exchange(frame, correlation_id, api_key, version, timeout_s)

    async def exchange(self, frame: bytes | memoryview, correlation_id: int, api_key: int, version: int,
                       timeout_s: float) -> Any:
        """Send an encoded request frame (size prefix included, e.g. fetch_request's) and return the decoded kio
        response body. One deadline for the whole answer (asyncio.timeout: no task per read, as wait_for made)."""
        assert self._reader is not None and self._writer is not None
        self._writer.write(frame)
        await self._writer.drain()
        async with asyncio.timeout(timeout_s):
            size = struct.unpack(">i", await self._reader.readexactly(4))[0]
            data = await self._reader.readexactly(size)
        resp_cls: Any = response_class(api_key, version)
        header, n = entity_reader(resp_cls.__header_schema__)(data, 0)
        if header.correlation_id != correlation_id:
            raise ConnectionError(f"correlation id {header.correlation_id} != {correlation_id}")
        response: Any
        response, _ = entity_reader(resp_cls)(data, n)
        return response

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
