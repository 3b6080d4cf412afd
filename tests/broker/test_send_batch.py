"""The loop's send batch over real socket pairs: responses written in one turn go out in one io_submit, in full,
and a withdrawn or orphaned write is never sent."""

import asyncio
import errno
import socket
import threading

import pytest

from broker.network import send_batch
from broker.network.connection import Connection

needs_aio = pytest.mark.skipif(send_batch.aio_writer() is None, reason="no Linux AIO here")


@pytest.fixture
def pairs():
    made = [socket.socketpair() for _ in range(3)]
    for a, _ in made:
        a.setblocking(False)
    yield made
    for a, b in made:
        a.close()
        b.close()


def _receive(sock: socket.socket, n: int) -> bytes:
    sock.settimeout(5)
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "peer closed early"
        out += chunk
    return out


@needs_aio
async def test_responses_written_in_one_turn_go_out_in_one_submit(pairs, monkeypatch):
    submits = []
    writer = send_batch.aio_writer()
    real = writer.write_all
    monkeypatch.setattr(writer, "write_all", lambda writes: submits.append(len(writes)) or real(writes))
    loop = asyncio.get_running_loop()
    payloads = [bytes([i]) * (1000 + i) for i in range(3)]
    await asyncio.gather(*(Connection(a, loop).write([p]) for (a, _), p in zip(pairs, payloads, strict=True)))
    assert submits == [3]
    assert [_receive(b, len(p)) for (_, b), p in zip(pairs, payloads, strict=True)] == payloads


@needs_aio
def test_the_aio_writer_reports_bytes_written_a_full_buffer_and_a_closed_peer(pairs):
    (a1, b1), (a2, b2), (a3, b3) = pairs
    a2.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    b3.close()
    big = b"x" * (4 << 20)
    results = send_batch.aio_writer().write_all([(a1.fileno(), b"hello"), (a2.fileno(), big), (a3.fileno(), b"z")])
    assert results[0] == 5 and 0 < results[1] < len(big)
    assert results[2] == -errno.EPIPE
    assert send_batch.aio_writer().write_all([(a2.fileno(), big)]) == [-errno.EAGAIN]   # still full
    assert _receive(b1, 5) == b"hello"


async def test_a_response_larger_than_the_socket_buffer_is_finished_after_the_batch(pairs):
    (a, b), (c, _d) = pairs[:2]
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    payload = bytes(range(256)) * 1000   # 256,000 bytes: batched, and far more than the buffer takes at once
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(_receive(b, len(payload))))
    reader.start()
    loop = asyncio.get_running_loop()
    await asyncio.gather(Connection(a, loop).write([payload]), Connection(c, loop).write([b"other"]))
    await asyncio.to_thread(reader.join, 10)
    assert received == [payload]


async def test_a_withdrawn_write_and_one_to_a_closed_socket_are_not_sent(pairs):
    (a1, b1), (a2, b2), (a3, b3) = pairs
    batch = send_batch.send_batch(asyncio.get_running_loop())
    withdrawn = batch.send(a1, b"never")
    orphaned = batch.send(a2, b"never")
    kept = batch.send(a3, b"sent")
    withdrawn.cancel()
    a2.close()   # its descriptor number could belong to a new connection by the flush
    assert await kept == 4
    assert not orphaned.done()
    b1.setblocking(False)
    with pytest.raises(BlockingIOError):
        b1.recv(10)
    assert b2.recv(10) == b""
    assert _receive(b3, 4) == b"sent"


async def test_without_aio_the_batch_is_sent_write_by_write_in_order(pairs, monkeypatch):
    monkeypatch.setattr(send_batch, "aio_writer", lambda: None)
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(Connection(a, loop).write([b"r%d" % i]) for i, (a, _) in enumerate(pairs)))
    assert [_receive(b, 2) for _, b in pairs] == [b"r0", b"r1", b"r2"]


async def test_an_error_on_one_socket_fails_only_its_write(pairs):
    (a1, b1), (a2, b2) = pairs[:2]
    b1.close()
    loop = asyncio.get_running_loop()
    results = await asyncio.gather(Connection(a1, loop).write([b"x"]), Connection(a2, loop).write([b"y"]),
                                   return_exceptions=True)
    assert isinstance(results[0], BrokenPipeError) and results[1] is None
    assert _receive(b2, 1) == b"y"
