"""One client connection's socket: reading whole request frames (large ones into anonymous mappings), writing
responses with sendmsg and sendfile. The server (broker/server.py) decides what to do with each frame."""

from __future__ import annotations

import asyncio
import mmap
import os
import socket
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.log.segment import FileRegion
from broker.memory_pool import MemoryPool
from broker.network.send_batch import send_batch

if TYPE_CHECKING:
    from broker.network.sasl_session import ConnectionSession
    from broker.observer import RequestTiming

_RECV_CHUNK = 256 * 1024
_IOV_MAX = 512
_LAZY_BUFFER_BYTES = 1 << 20
# File regions up to this size are read (pread) and sent with the rest of the response in one sendmsg: one TCP
# segment and one wake-up of the reader (a caught-up follower or consumer fetching a few KiB), where
# sendmsg + sendfile + sendmsg put three segments on the wire under TCP_NODELAY. Larger regions keep sendfile.
INLINE_REGION_BYTES = 64 * 1024
# Responses up to this size are joined into one buffer and sent with the others of the loop's turn
# (broker/network/send_batch.py); larger ones, not waiting on a single event, are sent at once without a copy.
BATCHED_RESPONSE_BYTES = 256 * 1024


def _read_region(region: FileRegion) -> bytes:
    data = region.read_bytes()
    if len(data) != region.length:
        raise OSError("segment file ended inside a fetched region")
    return data


class Connection:
    """One client socket: framed reads and gathered writes on the event loop."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.sock = sock
        self.loop = loop
        self._buf = bytearray()
        self.timing: RequestTiming | None = None  # set while an observer watches
        self.session: ConnectionSession | None = None  # its listener and principal (None: PLAINTEXT, anonymous)
        self._fd = -1   # registered with the loop's selector while >= 0
        self._waiter: asyncio.Future[None] | None = None
        self._direct = False   # a large frame's body is being received straight into its own buffer
        self._unsent: memoryview | None = None   # the queued response's bytes the kernel has not taken yet
        self._on_sent: Callable[[], None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._send_error: OSError | None = None
        # When a request last arrived or was done: the least recent goes first at max.connections, and one
        # idle for connections.max.idle.ms is closed.
        self.last_active = time.monotonic()

    async def _fill(self, need: int) -> None:
        while len(self._buf) < need:
            try:
                data = self.sock.recv(_RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                await self._readable()   # the selector callback has read what arrived into the buffer
                continue
            if not data:
                raise ConnectionError("closed by client")
            self._buf += data

    async def _recv_into(self, view: memoryview) -> int:
        while True:
            try:
                return self.sock.recv_into(view)
            except (BlockingIOError, InterruptedError):
                await self._readable()

    async def _readable(self) -> None:
        """Wait until the selector reports the socket readable. The socket stays registered between requests
        (`loop.sock_recv` registers and unregisters it on every wait: two epoll_ctl calls and a few callback
        objects for each request the broker waits for)."""
        if self._fd < 0:
            self._fd = self.sock.fileno()
            self.loop.add_reader(self._fd, self._on_readable)
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _on_readable(self) -> None:
        """The selector's callback. It reads what arrived into the read-ahead buffer (bounded): the selector is
        level-triggered and would report unread bytes on every turn, also while a request is being served."""
        waiter = self._waiter
        if not self._direct and len(self._buf) < _RECV_CHUNK:
            try:
                data = self.sock.recv(_RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                return   # reported before the task read the bytes itself
            except OSError:
                data = b""
            if data:
                self._buf += data
            else:
                self._unwatch()   # end of stream or an error: the task meets it on its next recv
        elif waiter is None:
            self._unwatch()   # read-ahead full: watch again when the task next waits
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._fd >= 0:
            self.loop.remove_reader(self._fd)
            self._fd = -1

    async def read_frame(self, max_size: int, pool: MemoryPool, min_size: int = 8) -> bytes | memoryview:
        """The next request frame (without its size prefix); ValueError if its size is out of bounds.

        The frame's bytes are taken from `pool` (queued.max.request.bytes) before its buffer exists; the
        caller releases them once the request is handled. Small frames come out of the read-ahead buffer;
        the rest of a large frame (a Produce) is received straight into its own buffer, so its bytes are
        copied once, by the kernel.
        """
        self.last_active = time.monotonic()   # the previous request is done: idle from here
        await self._fill(4)
        self.last_active = time.monotonic()
        (size,) = struct.unpack_from(">i", self._buf, 0)
        if size < min_size or size > max_size:
            raise ValueError(f"request size {size} outside [{min_size}, {max_size}] (socket.request.max.bytes)")
        await pool.acquire(size)
        try:
            return await self._read_body(size)
        except BaseException:
            pool.release(size)
            raise

    async def _read_body(self, size: int) -> bytes | memoryview:
        have = len(self._buf) - 4
        if have >= size:
            whole = bytes(memoryview(self._buf)[4:4 + size])
            del self._buf[:4 + size]
            return whole
        # An anonymous mapping's pages exist only once written: a client that announces 100 MB and sends
        # 10 bytes costs 10 bytes, where bytearray(size) would zero-fill (and keep resident) all of it.
        frame: mmap.mmap | bytearray = mmap.mmap(-1, size) if size >= _LAZY_BUFFER_BYTES else bytearray(size)
        view = memoryview(frame)
        view[:have] = memoryview(self._buf)[4:]
        self._buf.clear()
        self._direct = True
        try:
            while have < size:
                n = await self._recv_into(view[have:])
                if n == 0:
                    raise ConnectionError("closed by client")
                have += n
        finally:
            self._direct = False
        return view.toreadonly()  # kio's reader takes read-only buffers only

    async def write(self, data: bytes | list[bytes | memoryview | FileRegion],
                    on_sent: Callable[[], None] | None = None) -> None:
        """Write `data` after everything written before; `on_sent` is called once its last byte is with the kernel.

        A response of up to BATCHED_RESPONSE_BYTES is joined into one buffer and queued in the loop's send batch,
        to go out with the others written in this turn: it returns at once. A larger one, or any write while an
        earlier one is still unsent, is sent here: buffers gathered with sendmsg, file regions over
        INLINE_REGION_BYTES with sendfile (neither copied in user space), smaller regions read into the buffers.
        """
        if self._send_error is not None:
            raise self._send_error
        if self.queue(data, on_sent):
            return
        parts = [data] if isinstance(data, bytes | bytearray) else data
        try:
            await self._drain()
            await self._write_now(parts)
        finally:
            for part in parts:
                if isinstance(part, FileRegion):
                    part.release()
        if on_sent is not None:
            on_sent()

    def queue(self, data: bytes | list[bytes | memoryview | FileRegion],
              on_sent: Callable[[], None] | None = None) -> bool:
        """`write`'s synchronous part: a response of up to BATCHED_RESPONSE_BYTES (file regions up to
        INLINE_REGION_BYTES read into it) is queued in the loop's send batch when nothing is unsent before it.
        False, with `data` untouched: it must go through `write`."""
        parts = [data] if isinstance(data, bytes | bytearray) else data
        if self._send_error is not None or self._unsent is not None:
            return False
        size = 0
        for p in parts:
            if isinstance(p, FileRegion):
                if p.length > INLINE_REGION_BYTES:
                    return False
                size += p.length
            else:
                size += len(p)
        if size > BATCHED_RESPONSE_BYTES:
            return False
        try:
            joined = b"".join([_read_region(p) if isinstance(p, FileRegion) else p for p in parts])
        finally:
            for p in parts:
                if isinstance(p, FileRegion):
                    p.release()
        self._unsent, self._on_sent = memoryview(joined), on_sent
        send_batch(self.loop).send(self.sock, joined, self._batched)
        return True

    def _batched(self, result: int) -> None:
        """The send batch's report for this connection's queued response."""
        if result < 0:
            self._fail(OSError(-result, os.strerror(-result)))
        elif self._unsent is not None and result < len(self._unsent):
            self._unsent = self._unsent[result:]
            self.loop.add_writer(self.sock.fileno(), self._send_rest)   # the rest when the peer has read
        else:
            self._unsent = None
            self._sent()

    def _send_rest(self) -> None:
        assert self._unsent is not None   # registered only while a rest is unsent
        try:
            sent = self.sock.send(self._unsent)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.loop.remove_writer(self.sock.fileno())
            self._fail(e)
            return
        self._unsent = self._unsent[sent:]
        if not self._unsent:
            self.loop.remove_writer(self.sock.fileno())
            self._unsent = None
            self._sent()

    def _sent(self) -> None:
        on_sent, self._on_sent = self._on_sent, None
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if on_sent is not None:
            on_sent()

    def _fail(self, error: OSError) -> None:
        """A failed send: this connection is done for (the next read or write raises it)."""
        self._send_error, self._unsent, self._on_sent = error, None, None
        for waiter in (self._drained, self._waiter):
            if waiter is not None and not waiter.done():
                waiter.set_exception(error)

    async def _drain(self) -> None:
        """Wait until the queued response, if any, is wholly with the kernel."""
        while self._unsent is not None:
            self._drained = self.loop.create_future()
            try:
                await self._drained
            finally:
                self._drained = None

    async def _write_now(self, parts: list) -> None:
        pending: list[memoryview] = []
        for part in parts:
            if isinstance(part, FileRegion) and part.length <= INLINE_REGION_BYTES:
                pending.append(memoryview(_read_region(part)))
            elif isinstance(part, FileRegion):
                await self._send_buffers(pending)
                pending = []
                await self._send_file(part)
            elif len(part):
                pending.append(memoryview(part).cast("B"))
        await self._send_buffers(pending)

    async def _send_file(self, region: FileRegion) -> None:
        offset, end = region.position, region.position + region.length
        out = self.sock.fileno()
        while offset < end:
            try:
                sent = os.sendfile(out, region.fd, offset, end - offset)
            except BlockingIOError:
                await self._writable()
                continue
            if sent == 0:
                raise OSError("segment file ended inside a fetched region")
            offset += sent

    async def _send_buffers(self, views: list[memoryview]) -> None:
        while views:
            try:
                sent = self.sock.sendmsg(views[:_IOV_MAX])
            except BlockingIOError:
                sent = 0
            while sent and views:
                if sent >= len(views[0]):
                    sent -= len(views.pop(0))
                else:
                    views[0] = views[0][sent:]
                    sent = 0
            if views:
                await self._writable()

    async def _writable(self) -> None:
        fut = self.loop.create_future()
        fd = self.sock.fileno()
        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        self.loop.add_writer(fd, ready)
        try:
            await fut
        finally:
            self.loop.remove_writer(fd)

    def close(self) -> None:
        self._unwatch()
        if self._unsent is not None and (fd := self.sock.fileno()) >= 0:
            # A response still queued (a failed SASL exchange's answer, written just before the close) or its
            # rest: the kernel takes what it can now; the batch skips a closed socket.
            self.loop.remove_writer(fd)
            try:
                whole = self.sock.send(self._unsent) == len(self._unsent)
            except OSError:
                whole = False
            if whole:
                self._unsent = None
                self._sent()   # its request is recorded before the connection's close is
        self._unsent, self._on_sent = None, None
        try:
            self.sock.close()
        except OSError:
            pass
