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
    for (a, _), p in zip(pairs, payloads, strict=True):
        await Connection(a, loop).write([p])   # returns at once: queued for the end of the turn
    assert submits == []
    await asyncio.sleep(0)
    assert submits == [3]
    assert [_receive(b, len(p)) for (_, b), p in zip(pairs, payloads, strict=True)] == payloads


async def test_each_response_is_reported_sent_after_every_send_of_the_turn(pairs):
    loop, seen = asyncio.get_running_loop(), []
    for b in (b for _, b in pairs):
        b.setblocking(False)

    def sent(i: int) -> None:   # what each peer holds when the response to peer i is reported sent
        seen.append([len(b.recv(10, socket.MSG_PEEK)) for _, b in pairs])

    for i, (a, _) in enumerate(pairs):
        await Connection(a, loop).write([b"r%d" % i], lambda i=i: sent(i))
    await asyncio.sleep(0)
    assert seen == [[2, 2, 2]] * 3


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
    loop = asyncio.get_running_loop()
    conn, sent = Connection(a, loop), loop.create_future()
    await conn.write([payload], lambda: sent.set_result(True))
    await Connection(c, loop).write([b"other"])
    await asyncio.sleep(0)   # the batch's turn: the kernel takes part of the payload
    assert not sent.done()
    reader.start()
    assert await asyncio.wait_for(sent, 10)
    await conn.write([b"next"])   # goes after the rest
    await asyncio.to_thread(reader.join, 10)
    assert received == [payload] and _receive(b, 4) == b"next"


async def test_a_write_while_one_is_unsent_waits_for_it(pairs):
    (a, b) = pairs[0]
    loop = asyncio.get_running_loop()
    conn, order, received = Connection(a, loop), [], []
    reader = threading.Thread(target=lambda: received.append(_receive(b, 5 + 300_000)))
    reader.start()
    await conn.write([b"first"], lambda: order.append("first"))
    await conn.write([b"second" * 50_000], lambda: order.append("second"))   # over the batch's size: sent here
    assert order == ["first", "second"]
    await asyncio.to_thread(reader.join, 10)
    assert received == [b"first" + b"second" * 50_000]


async def test_a_queued_response_to_a_closed_socket_is_not_sent_and_close_hands_over_what_is_queued(pairs):
    (a1, b1), (a2, b2), (a3, b3) = pairs
    loop, told = asyncio.get_running_loop(), []
    batch = send_batch.send_batch(loop)
    batch.send(a1, b"never", told.append)
    conn = Connection(a2, loop)
    await conn.write([b"answer before close"], lambda: told.append("answer sent"))   # a failed SASL exchange's
    conn.close()
    assert told == ["answer sent"]
    a1.close()   # its descriptor number could belong to a new connection by the flush
    done = loop.create_future()
    batch.send(a3, b"sent", done.set_result)
    assert await done == 4 and told == ["answer sent"]   # nothing for the write to the closed socket
    assert b1.recv(10) == b""
    assert _receive(b2, 19) == b"answer before close"
    assert _receive(b3, 4) == b"sent"


@needs_aio
async def test_a_kernel_refusing_aio_on_sockets_turns_it_off_and_loses_nothing(pairs, monkeypatch):
    writer = send_batch.aio_writer()
    monkeypatch.setattr(writer, "_submit_all", lambda writes: [-errno.EINVAL] * len(writes))
    monkeypatch.setattr(writer, "usable", True)
    loop = asyncio.get_running_loop()
    for i, (a, _) in enumerate(pairs):
        await Connection(a, loop).write([b"r%d" % i])
    await asyncio.sleep(0)
    assert [_receive(b, 2) for _, b in pairs] == [b"r0", b"r1", b"r2"]
    assert send_batch.aio_writer() is None


async def test_without_aio_the_batch_is_sent_write_by_write_in_order(pairs, monkeypatch):
    monkeypatch.setattr(send_batch, "aio_writer", lambda: None)
    loop = asyncio.get_running_loop()
    for i, (a, _) in enumerate(pairs):
        await Connection(a, loop).write([b"r%d" % i])
    await asyncio.sleep(0)
    assert [_receive(b, 2) for _, b in pairs] == [b"r0", b"r1", b"r2"]


async def test_an_error_on_one_socket_fails_only_that_connection(pairs):
    (a1, b1), (a2, b2) = pairs[:2]
    b1.close()
    loop = asyncio.get_running_loop()
    failed, ok = Connection(a1, loop), Connection(a2, loop)
    reading = asyncio.ensure_future(failed._readable())
    await failed.write([b"x"])
    await ok.write([b"y"])
    with pytest.raises(BrokenPipeError):
        await asyncio.wait_for(reading, 5)   # the serve loop waiting for the next request learns of it
    with pytest.raises(BrokenPipeError):
        await failed.write([b"z"])
    assert _receive(b2, 1) == b"y"
