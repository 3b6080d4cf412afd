"""Replay fuzzed frames at a broker over many connections and tell whether it stayed up.

Each worker owns one connection at a time. After every fuzzed frame it sends an ApiVersions probe on the same
connection: brokers answer in order, so the probe's answer proves the fuzzed frame was fully handled (answered
or not: Produce with acks=0 has no answer). A connection the broker closes is counted and replaced; one that
stays silent past the response timeout (a long poll with a fuzzed max wait) is abandoned. If the broker stops
accepting connections the run stops and the last frames of every connection are kept as crash suspects.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROBE_CORRELATION_ID = 0x7EADBEEF
# ApiVersions v0 (legacy header v1): api_key 18, version 0, correlation id, client id "fuzz-probe"
_PROBE = struct.pack(">hhih", 18, 0, PROBE_CORRELATION_ID, 10) + b"fuzz-probe"
PROBE_FRAME = struct.pack(">i", len(_PROBE)) + _PROBE


@dataclass
class FuzzStats:
    sent: int = 0
    answered: int = 0  # the frame got a response before the probe's
    handled_silently: int = 0  # no response of its own, but the probe after it was answered
    closed_by_broker: int = 0  # the broker closed the connection (Kafka's answer to an unparseable frame)
    abandoned: int = 0  # no probe answer within the timeout (parked long poll); connection dropped
    broker_down: bool = False
    suspects: list[bytes] = field(default_factory=list)
    elapsed_s: float = 0.0

    def summary(self) -> str:
        return (f"{self.sent} frames in {self.elapsed_s:.1f} s: {self.answered} answered, "
                f"{self.handled_silently} handled without a response, {self.closed_by_broker} connections "
                f"closed by the broker, {self.abandoned} abandoned after the timeout; broker "
                f"{'DOWN' if self.broker_down else 'up'}")


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def _await_probe(reader: asyncio.StreamReader) -> int:
    """Responses read until the probe's; returns how many came before it."""
    before = 0
    for _ in range(3):  # a fuzzed frame yields at most one response before the probe's
        frame = await _read_frame(reader)
        if struct.unpack_from(">i", frame, 0)[0] == PROBE_CORRELATION_ID:
            return before
        before += 1
    raise ConnectionError("more responses than requests")


class _Worker:
    def __init__(self, host: str, port: int, stats: FuzzStats, timeout_s: float, keep: int) -> None:
        self.host, self.port, self.stats, self.timeout_s = host, port, stats, timeout_s
        self.recent: deque[bytes] = deque(maxlen=keep)
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.conn is None:
            self.conn = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 5.0)
        return self.conn

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn[1].close()
            self.conn = None

    async def send(self, framed: bytes, claims_more: bool) -> None:
        self.recent.append(framed)
        reader, writer = await self._connect()
        self.stats.sent += 1
        try:
            writer.write(framed)
            if claims_more:  # the broker waits for bytes that never come: end our side so it sees EOF
                writer.write_eof()
            else:
                writer.write(PROBE_FRAME)
            await writer.drain()
            if claims_more:
                await asyncio.wait_for(reader.read(), self.timeout_s)
                self.stats.closed_by_broker += 1
                self._drop()
                return
            before = await asyncio.wait_for(_await_probe(reader), self.timeout_s)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            self.stats.closed_by_broker += 1
            self._drop()
            return
        except TimeoutError:
            self.stats.abandoned += 1
            self._drop()
            return
        if before:
            self.stats.answered += 1
        else:
            self.stats.handled_silently += 1


async def probe_answer(host: str, port: int) -> bytes:
    """The broker's answer to an ApiVersions v0 probe on a fresh connection (the response frame)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(PROBE_FRAME)
        await writer.drain()
        return await _read_frame(reader)
    finally:
        writer.close()


async def broker_answers(host: str, port: int, timeout_s: float = 5.0) -> bool:
    """True when a fresh connection gets an answer to ApiVersions."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError):
        return False
    try:
        writer.write(PROBE_FRAME)
        await writer.drain()
        return await asyncio.wait_for(_await_probe(reader), timeout_s) == 0
    except (OSError, TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        return False
    finally:
        writer.close()


async def replay(host: str, port: int, frames: Iterable[tuple[bytes, bool]], connections: int = 16,
                 timeout_s: float = 1.0, keep: int = 4) -> FuzzStats:
    """Send every frame, `connections` at a time; stop early if the broker goes down."""
    stats = FuzzStats()
    started = time.monotonic()
    source: Iterator[tuple[bytes, bool]] = iter(frames)
    workers = [_Worker(host, port, stats, timeout_s, keep) for _ in range(connections)]

    async def run(worker: _Worker) -> None:
        for framed, claims_more in source:  # shared iterator: each frame goes to one worker
            if stats.broker_down:
                return
            try:
                await worker.send(framed, claims_more)
            except (OSError, TimeoutError):  # cannot connect
                if not await broker_answers(host, port):
                    stats.broker_down = True
                    return
        worker._drop()

    await asyncio.gather(*(run(w) for w in workers))
    if not stats.broker_down and not await broker_answers(host, port):
        stats.broker_down = True
    if stats.broker_down:
        stats.suspects = [f for w in workers for f in w.recent]
    stats.elapsed_s = time.monotonic() - started
    return stats


def save_suspects(stats: FuzzStats, directory: Path) -> list[Path]:
    """Write the crash suspects as corpus files (size-prefixed frames, as sent)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, frame in enumerate(stats.suspects):
        path = directory / f"suspect-{i:03d}.bin"
        path.write_bytes(frame)
        paths.append(path)
    return paths
