"""Connection's reads over a real socket pair on the real event loop: the socket stays registered with the
selector between requests (no register/unregister per request), bytes that arrive while a request is being served
are read ahead without the loop spinning, and frames come out whole whatever their size and pieces."""

import asyncio
import socket
import struct

import pytest

from broker.memory_pool import MemoryPool
from broker.network import connection
from broker.network.connection import Connection

MAX = 200 * 1024 * 1024


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


class CountingLoop:
    """Counts the selector registrations a Connection makes on the running loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.added, self.removed, self.callbacks = loop, 0, 0, 0

    def __getattr__(self, name):
        return getattr(self.loop, name)

    def add_reader(self, fd, cb, *args):
        self.added += 1

        def counted(*a):
            self.callbacks += 1
            cb(*a)
        return self.loop.add_reader(fd, counted, *args)

    def remove_reader(self, fd):
        self.removed += 1
        return self.loop.remove_reader(fd)


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    yield a, b
    a.close()
    b.close()


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_connection_registers_its_socket_once_for_many_requests(pair):
    sock, peer = pair
    loop = CountingLoop(asyncio.get_running_loop())
    conn = Connection(sock, loop)  # type: ignore[arg-type]
    pool = MemoryPool(0)
    for i in range(20):
        reading = asyncio.ensure_future(conn.read_frame(MAX, pool, 1))
        await _turns(3)  # the read waits for bytes
        peer.sendall(_frame(b"request-%d" % i))
        assert bytes(await asyncio.wait_for(reading, 5)) == b"request-%d" % i
    # loop.sock_recv registers and unregisters the socket on every wait: 20 each.
    assert (loop.added, loop.removed) == (1, 0)
    conn.close()
    assert loop.removed == 1
    assert sock.fileno() == -1


async def test_bytes_arriving_between_requests_are_read_ahead_without_spinning(pair):
    sock, peer = pair
    loop = CountingLoop(asyncio.get_running_loop())
    conn = Connection(sock, loop)  # type: ignore[arg-type]
    pool = MemoryPool(0)
    first = asyncio.ensure_future(conn.read_frame(MAX, pool, 1))
    await _turns(3)
    peer.sendall(_frame(b"one") + _frame(b"two")[:3])
    assert bytes(await asyncio.wait_for(first, 5)) == b"one"
    # "Serving" the request: nobody reads for a while, and the rest of the next frame arrives meanwhile.
    peer.sendall(_frame(b"two")[3:] + _frame(b"three"))
    await _turns(50)
    # Level-triggered readiness read once into the buffer, not reported on each of the 50 turns.
    assert loop.callbacks <= 3
    assert bytes(await asyncio.wait_for(conn.read_frame(MAX, pool, 1), 5)) == b"two"
    assert bytes(await asyncio.wait_for(conn.read_frame(MAX, pool, 1), 5)) == b"three"
    conn.close()


async def test_a_full_read_ahead_stops_watching_until_the_next_read(pair, monkeypatch):
    sock, peer = pair
    monkeypatch.setattr(connection, "_RECV_CHUNK", 1024)
    loop = CountingLoop(asyncio.get_running_loop())
    conn = Connection(sock, loop)  # type: ignore[arg-type]
    pool = MemoryPool(0)
    first = asyncio.ensure_future(conn.read_frame(MAX, pool, 1))
    await _turns(3)
    bodies = [bytes([i]) * 700 for i in range(8)]
    peer.sendall(b"".join(_frame(b) for b in bodies))
    assert bytes(await asyncio.wait_for(first, 5)) == bodies[0]
    await _turns(50)
    assert loop.removed >= 1 and loop.callbacks <= 6   # bounded buffer, then unregistered: no spinning
    for body in bodies[1:]:
        assert bytes(await asyncio.wait_for(conn.read_frame(MAX, pool, 1), 5)) == body
    conn.close()


async def test_a_large_frame_in_pieces_is_received_whole(pair):
    sock, peer = pair
    conn = Connection(sock, asyncio.get_running_loop())
    body = bytes(range(256)) * (connection._LAZY_BUFFER_BYTES // 256 + 1000)
    data = _frame(body) + _frame(b"after")
    reading = asyncio.ensure_future(conn.read_frame(MAX, MemoryPool(0), 1))

    async def send() -> None:
        for i in range(0, len(data), 100_000):
            await asyncio.get_running_loop().sock_sendall(peer, data[i:i + 100_000])
            await _turns(2)

    peer.setblocking(False)
    await asyncio.wait_for(send(), 10)
    assert bytes(await asyncio.wait_for(reading, 10)) == body
    assert bytes(await asyncio.wait_for(conn.read_frame(MAX, MemoryPool(0), 1), 5)) == b"after"
    conn.close()


async def test_a_closed_client_ends_the_read_also_when_it_closed_between_requests(pair):
    sock, peer = pair
    conn = Connection(sock, asyncio.get_running_loop())
    reading = asyncio.ensure_future(conn.read_frame(MAX, MemoryPool(0), 1))
    await _turns(3)
    peer.sendall(_frame(b"last"))
    assert bytes(await asyncio.wait_for(reading, 5)) == b"last"
    peer.close()
    await _turns(10)   # the end of stream is seen by the selector callback while nobody reads
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(conn.read_frame(MAX, MemoryPool(0), 1), 5)
    conn.close()
