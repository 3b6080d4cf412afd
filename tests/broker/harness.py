"""A whole standalone broker driven in process, on a manual clock: handler tests without a process, a socket or a
sleep.

Requests are encoded with kio (header included) and handed, as bytes, to an in-memory connection that the broker's
`KafkaServer` serves exactly as it serves an accepted socket (frame size check, request memory pool, validation,
decoding, handler, encoding, close on a bad frame). The event loop's time *is* the manual clock, so every timer the
broker sets (Fetch max_wait in the purgatory, the group coordinator's rebalance delay and session timeouts, the
retention and ISR loops) fires only when the test advances the clock.

    with Harness(tmp_path) as h:
        resp = h.request(3, 12, {"topics": None, "allow_auto_topic_creation": False, ...})
        pending = h.send(1, 12, {... "max_wait": 500, "min_bytes": 1 ...})   # parks in the purgatory
        h.advance(500)
        resp = pending.result()
"""

from __future__ import annotations

import asyncio
import io
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kio.serial import entity_reader, entity_writer

from broker.broker import Broker
from broker.config import BrokerConfig
from broker.log.segment import FileRegion
from broker.network.connection import Connection
from broker.protocol.codec import build, request_class, response_class
from common.clock import ManualClock

_MAX_STEPS = 100_000  # callbacks run while settling; more means something spins without waiting


class ManualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose time is a ManualClock's monotonic seconds: `asyncio.sleep` and `wait_for` timeouts
    fire only once the clock reaches them. Idleness is read from the loop's ready queue and timer heap (private,
    but stable since Python 3.4, and what fake-time plugins read too)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        super().__init__()

    def time(self) -> float:
        return self.clock.monotonic()

    def next_timer(self) -> float | None:
        """When the earliest live timer is due (loop time), None without timers."""
        live = [h.when() for h in self._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return min(live, default=None)

    def busy(self) -> bool:
        """A callback is ready or a timer is due: running the loop now would do something."""
        due = self.next_timer()
        # asyncio fires a timer once it is due within the clock's resolution: so does this test.
        return bool(self._ready) or (due is not None and due < self.time() + self._clock_resolution)  # type: ignore[attr-defined]

    def settle(self, max_steps: int = _MAX_STEPS) -> None:
        """Run until nothing is left to do without time passing."""
        async def until_idle() -> None:
            for _ in range(max_steps):
                await asyncio.sleep(0)  # our own step goes to the back of the ready queue
                if not self.busy():
                    return
            raise AssertionError(f"the loop did not go idle within {max_steps} steps")
        self.run_until_complete(until_idle())


class ConnectionClosed(AssertionError):
    """The broker closed the connection instead of answering (Kafka's answer to a frame it cannot serve)."""


class _ClientEnd:
    """Stands in for the socket (and the loop's socket calls) that `Connection` reads from: bytes the test wrote."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._more = asyncio.Event()
        self.eof = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        self._more.set()

    def shutdown(self) -> None:
        self.eof = True
        self._more.set()

    async def _ready(self) -> None:
        while not self._buf and not self.eof:
            self._more.clear()
            await self._more.wait()

    async def sock_recv(self, _sock: object, n: int) -> bytes:
        await self._ready()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out  # b"" at end of stream, as a closed socket reads

    async def sock_recv_into(self, _sock: object, view: memoryview) -> int:
        await self._ready()
        n = min(len(view), len(self._buf))
        view[:n] = self._buf[:n]
        del self._buf[:n]
        return n


class _MemoryConnection(Connection):
    """The broker's Connection reading from a `_ClientEnd`; what it writes is collected instead of sent (file
    regions read into memory), one response frame per write."""

    def __init__(self, end: _ClientEnd) -> None:
        super().__init__(None, end)  # type: ignore[arg-type]  # reads go through `end` (_fill, _recv_into)
        self._end = end
        self.written: list[bytes] = []
        self.closed = False
        self.on_write = lambda: None

    async def _fill(self, need: int) -> None:
        while len(self._buf) < need:
            data = await self._end.sock_recv(None, 256 * 1024)
            if not data:
                raise ConnectionError("closed by client")
            self._buf += data

    async def _recv_into(self, view: memoryview) -> int:
        return await self._end.sock_recv_into(None, view)

    async def write(self, data: bytes | list[bytes | memoryview | FileRegion],
                    on_sent: Callable[[], None] | None = None) -> None:
        self.queue(data, on_sent)

    def queue(self, data: bytes | list[bytes | memoryview | FileRegion],
              on_sent: Callable[[], None] | None = None) -> bool:
        """Collected at once (a Fetch completed inside the purgatory's notify writes through here)."""
        parts = [data] if isinstance(data, bytes | bytearray) else data
        try:
            self.written.append(b"".join(p.read_bytes() if isinstance(p, FileRegion) else bytes(p) for p in parts))
        finally:
            for p in parts:
                if isinstance(p, FileRegion):
                    p.release()
        self.on_write()
        if on_sent is not None:   # as the loop's send batch does: after the other answers of this turn
            asyncio.get_running_loop().call_soon(on_sent)
        return True

    def close(self) -> None:
        self.closed = True


class Pending:
    """A request sent and maybe not yet answered (parked in the purgatory, a JoinGroup awaiting the rebalance)."""

    def __init__(self, client: Client, api_key: int, version: int, correlation_id: int) -> None:
        self._client = client
        self.api_key, self.version, self.correlation_id = api_key, version, correlation_id
        self.frame: bytes | None = None  # the response frame, size prefix included

    def done(self) -> bool:
        return self.frame is not None

    def result(self) -> Any:
        """The decoded response body (kio dataclass); fails if the request is still waiting or was refused."""
        if self.frame is None:
            if self._client.closed:
                raise ConnectionClosed(f"api_key={self.api_key} v{self.version}: connection closed by the broker")
            raise AssertionError(f"api_key={self.api_key} v{self.version} not answered yet: advance the clock?")
        return decode_response(self.frame, self.api_key, self.version, self.correlation_id)


def encode_request(api_key: int, version: int, correlation_id: int, body: dict[str, Any] | Any,
                   client_id: str | None = "harness") -> bytes:
    """One request frame as a client sends it: int32 size, header, body."""
    cls = request_class(api_key, version)
    out = io.BytesIO()
    hdr_cls = cls.__header_schema__
    entity_writer(hdr_cls)(out, build(hdr_cls, {"request_api_key": api_key, "request_api_version": version,
                                                "correlation_id": correlation_id, "client_id": client_id}))
    entity_writer(cls)(out, build(cls, body))
    frame = out.getvalue()
    return struct.pack(">i", len(frame)) + frame


def decode_response(frame: bytes, api_key: int, version: int, correlation_id: int) -> Any:
    """Decode a response frame (size prefix included), checking its size, correlation id and that no bytes trail."""
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4, f"size prefix {size}, frame {len(frame) - 4} bytes"
    cls = response_class(api_key, version)
    hdr, n = entity_reader(cls.__header_schema__)(frame, 4)
    body, m = entity_reader(cls)(frame, 4 + n)
    assert 4 + n + m == len(frame), "trailing bytes in response"
    assert hdr.correlation_id == correlation_id, (hdr.correlation_id, correlation_id)
    return body


class Client:
    """One client connection to the harness broker. Requests on it are answered in order, as on a socket."""

    def __init__(self, harness: Harness, host: str) -> None:
        self._h = harness
        self._end = _ClientEnd()
        self._conn = _MemoryConnection(self._end)
        self._conn.on_write = self._answer
        self._waiting: list[Pending] = []
        self._corr = 0

        async def accepted() -> None:  # the server starts its task on the running loop, as when it accepts
            harness.broker.server.serve_connection(self._conn, host)
        harness.loop.run_until_complete(accepted())
        harness.settle()

    @property
    def closed(self) -> bool:
        """The broker closed this connection (it does so on a frame it cannot serve)."""
        return self._conn.closed

    def _answer(self) -> None:
        frame = self._conn.written[-1]
        (corr,) = struct.unpack_from(">i", frame, 4)
        # Responses come in request order: requests before the answered one got none (acks=0 Produce). A frame
        # nobody waits for answers bytes sent with send_bytes; it stays in responses(). Nothing is raised here:
        # this runs inside the broker's write, which would report it as a broker failure.
        for i, p in enumerate(self._waiting):
            if p.correlation_id == corr:
                p.frame = frame
                del self._waiting[:i + 1]
                return

    def send(self, api_key: int, version: int, body: dict[str, Any] | Any, client_id: str | None = "harness"
             ) -> Pending:
        """Send a request and run the broker until it has nothing left to do; the answer may still be pending."""
        self._corr += 1
        pending = Pending(self, api_key, version, self._corr)
        self._waiting.append(pending)
        self.send_bytes(encode_request(api_key, version, self._corr, body, client_id))
        return pending

    def request(self, api_key: int, version: int, body: dict[str, Any] | Any, client_id: str | None = "harness"
                ) -> Any:
        """Send a request and return its decoded answer, which must come without the clock moving."""
        return self.send(api_key, version, body, client_id).result()

    def send_bytes(self, data: bytes) -> None:
        """Raw bytes onto the connection (size prefixes included), then run the broker until idle."""
        self._end.feed(data)
        self._h.settle()

    def responses(self) -> list[bytes]:
        """Every response frame written on this connection so far, size prefix included."""
        return list(self._conn.written)

    def disconnect(self) -> None:
        self._end.shutdown()
        self._h.settle()


class Harness:
    """A standalone broker (LocalMetadata, logs under `data_dir`) on a ManualClock, with no listening socket.
    `props` are broker properties (dots or underscores: ``group_initial_rebalance_delay_ms=0``); all are Kafka's
    defaults but `offsets.topic.num.partitions`, 1 unless given: creating its 50 logs would be most of a test's time."""

    def __init__(self, data_dir: Path, clock: ManualClock | None = None, **props: object) -> None:
        self.clock = clock or ManualClock()
        self.loop = ManualTimeLoop(self.clock)
        cfg = BrokerConfig.from_properties({"log.dirs": str(data_dir), "listeners": "PLAINTEXT://127.0.0.1:9092",
                                            "offsets.topic.num.partitions": "1",
                                            **{k.replace("_", "."): str(v) for k, v in props.items()}})
        self.loop.run_until_complete(self._start(cfg))
        self.client = self.connect()

    async def _start(self, cfg: BrokerConfig) -> None:
        self.broker = Broker(cfg, self.clock)  # built on the loop: its asyncio objects bind to it
        await self.broker.start(listen=False)

    def connect(self, host: str = "127.0.0.1") -> Client:
        """A new client connection, from `host` (what the broker records as the client's address)."""
        return Client(self, host)

    def settle(self) -> None:
        """Run the broker until it waits only for time to pass (or for clients)."""
        self.loop.settle()

    def advance(self, ms: float) -> None:
        """Move the clock by `ms`, stopping at every timer due on the way so each fires at its own time."""
        target = self.clock.monotonic() + ms / 1000
        self.settle()
        while (due := self.loop.next_timer()) is not None and due <= target:
            self.clock.advance(max(due - self.clock.monotonic(), 0) * 1000)
            self.settle()
        self.clock.advance(max(target - self.clock.monotonic(), 0) * 1000)
        self.settle()

    # The default connection's methods, so that simple tests read h.request(...).
    def send(self, api_key: int, version: int, body: dict[str, Any] | Any, client_id: str | None = "harness"
             ) -> Pending:
        return self.client.send(api_key, version, body, client_id)

    def request(self, api_key: int, version: int, body: dict[str, Any] | Any, client_id: str | None = "harness"
                ) -> Any:
        return self.client.request(api_key, version, body, client_id)

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.broker.stop())
        finally:
            self.loop.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
