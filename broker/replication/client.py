"""A minimal asyncio Kafka client for broker-to-broker requests (follower Fetch, OffsetForLeaderEpoch, SASL).

The connection is an asyncio `Protocol` that cuts the byte stream into response frames itself. A request's answer
either resolves the future `exchange` awaits, or, for a follower's chained fetches, goes to a callback inside
`data_received` (`send_then`): the follower appends what came and sends its next Fetch before the event loop
moves on, as Kafka's ReplicaFetcherThread does in one thread, with no task resumed in between.
"""

from __future__ import annotations

import asyncio
import io
import struct
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build, request_class, response_class

if TYPE_CHECKING:
    from broker.network.client_security import ClientSecurity

_SIZE = struct.Struct(">i")
# An answer is a frame or why none will come (the connection closed or broke).
Answer = bytes | Exception
OnAnswer = Callable[[Answer], None]


class _FrameProtocol(asyncio.Protocol):
    """Response frames off the stream, each to the one taker waiting for it (requests go one at a time)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._taker: OnAnswer | None = None
        self._lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def take_next(self, taker: OnAnswer) -> None:
        """`taker` gets the next frame, or the reason none will come."""
        if self._lost is not None:
            taker(self._lost)
        else:
            self._taker = taker

    def data_received(self, data: bytes) -> None:
        buf = self._buffer
        if not buf and len(data) >= 4 and _SIZE.unpack_from(data)[0] == len(data) - 4:
            self._deliver(data[4:])   # the common case: one whole answer, copied once
            return
        buf += data
        while len(buf) >= 4 and self._lost is None:
            size = _SIZE.unpack_from(buf)[0]
            if size < 0:
                self._fail(ConnectionError(f"negative response size {size}"))
                return
            if len(buf) < 4 + size:
                return
            frame = bytes(buf[4:4 + size])
            del buf[:4 + size]
            self._deliver(frame)

    def _deliver(self, frame: bytes) -> None:
        taker, self._taker = self._taker, None
        if taker is None:
            self._fail(ConnectionError("a response nothing was asked for"))
        else:
            taker(frame)

    def _fail(self, error: Exception) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.connection_lost(error)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost is None:
            self._lost = ConnectionError(f"connection lost: {exc}" if exc else "connection closed by the peer")
        taker, self._taker = self._taker, None
        if taker is not None:
            taker(self._lost)


class BrokerConnection:
    """One connection to another broker; requests are sent one at a time."""

    def __init__(self, host: str, port: int, client_id: str, security: ClientSecurity | None = None) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.security = security  # TLS and SASL for the inter-broker listener (None: PLAINTEXT)
        self._protocol: _FrameProtocol | None = None
        self._correlation_id = 0

    async def connect(self, timeout_s: float) -> None:
        ctx = self.security.ssl_context if self.security is not None else None
        loop = asyncio.get_running_loop()
        _, self._protocol = await asyncio.wait_for(loop.create_connection(
            _FrameProtocol, self.host, self.port, ssl=ctx, server_hostname=self.host if ctx is not None else None),
            timeout_s)
        if self.security is not None:
            await self.security.authenticate(self, timeout_s)

    @property
    def connected(self) -> bool:
        p = self._protocol
        return p is not None and p.transport is not None and not p.transport.is_closing()

    def socket(self) -> Any:
        """The connected socket (its options), or None."""
        p = self._protocol
        return None if p is None or p.transport is None else p.transport.get_extra_info("socket")

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
        response body, within `timeout_s`."""
        fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.send_then(frame, partial(_settle, fut))
        async with asyncio.timeout(timeout_s):
            answer = await fut
        return decode_response(answer, correlation_id, api_key, version)

    def send_then(self, frame: bytes | memoryview, on_answer: OnAnswer) -> None:
        """Send a request frame; `on_answer` is called inside `data_received` with the answer's frame, or with the
        exception that ends the connection. It must not raise."""
        p = self._protocol
        if p is None or p.transport is None:
            raise ConnectionError("not connected")
        p.take_next(on_answer)
        p.transport.write(frame)

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._protocol = None


def _settle(fut: asyncio.Future[Answer], answer: Answer) -> None:
    if not fut.done():   # not timed out
        fut.set_result(answer)


def decode_response(answer: Answer, correlation_id: int, api_key: int, version: int) -> Any:
    """The kio response body of an answer frame; raises the connection's failure, or a mismatched answer's."""
    if isinstance(answer, Exception):
        raise answer
    resp_cls: Any = response_class(api_key, version)
    header, n = entity_reader(resp_cls.__header_schema__)(answer, 0)
    if header.correlation_id != correlation_id:
        raise ConnectionError(f"correlation id {header.correlation_id} != {correlation_id}")
    response: Any
    response, _ = entity_reader(resp_cls)(answer, n)
    return response
