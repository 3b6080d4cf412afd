"""Connection.write over a real socket pair: a small fetched file region goes out inline with the response in one
write (one TCP segment under TCP_NODELAY, one wake-up of the reader); a large one keeps sendfile."""

import asyncio
import os
import socket

import pytest

from broker.log.segment import FileRegion
from broker.network import connection, send_batch
from broker.network.connection import Connection


class CountingSocket(socket.socket):
    """A socket that counts its sendmsg calls."""

    sendmsgs = 0

    def sendmsg(self, *args, **kwargs):
        type(self).sendmsgs += 1
        return super().sendmsg(*args, **kwargs)


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    sock = CountingSocket(fileno=a.detach())
    CountingSocket.sendmsgs = 0
    sock.setblocking(False)
    yield sock, b
    sock.close()
    b.close()


def _region(tmp_path, payload: bytes, skip: int = 3) -> FileRegion:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * skip + payload + b"tail")
    fd = os.open(path, os.O_RDONLY)
    try:
        return FileRegion(fd, skip, len(payload))  # holds its own duplicate of fd
    finally:
        os.close(fd)


def _receive(sock: socket.socket, n: int) -> bytes:
    sock.settimeout(5)
    out = b""
    while len(out) < n:
        out += sock.recv(n - len(out))
    return out


async def test_a_small_region_is_sent_inline_in_one_write(tmp_path, pair, monkeypatch):
    sock, peer = pair
    sendfiles, writes = [], []
    monkeypatch.setattr(os, "sendfile", lambda *a: sendfiles.append(a) or 0)
    real_write_each = send_batch.write_each
    monkeypatch.setattr(send_batch, "write_each", lambda ws: writes.extend(d for _, d in ws) or real_write_each(ws))
    payload = os.urandom(4096)
    region = _region(tmp_path, payload)
    await Connection(sock, asyncio.get_running_loop()).write([b"head", region, memoryview(b"trailer")])
    await asyncio.sleep(0)   # the loop's send batch goes out on its next turn
    assert len(writes) == 1 and CountingSocket.sendmsgs == 0 and sendfiles == []
    assert region.fd == -1  # released once written
    assert _receive(peer, 4 + len(payload) + 7) == b"head" + payload + b"trailer"


async def test_a_large_region_still_goes_out_with_sendfile(tmp_path, pair):
    sock, peer = pair
    payload = os.urandom(connection.INLINE_REGION_BYTES + 1)
    region = _region(tmp_path, payload)
    received = asyncio.get_running_loop().run_in_executor(None, _receive, peer, 4 + len(payload) + 7)
    await Connection(sock, asyncio.get_running_loop()).write([b"head", region, b"trailer"])
    assert await received == b"head" + payload + b"trailer"
    assert CountingSocket.sendmsgs >= 2  # the buffers on either side of the file region


async def test_a_region_cut_short_by_truncation_closes_the_connection(tmp_path, pair):
    sock, _ = pair
    region = _region(tmp_path, b"p" * 100)
    os.truncate(tmp_path / "00000000000000000000.log", 50)
    with pytest.raises(OSError, match="segment file ended"):
        await Connection(sock, asyncio.get_running_loop()).write([b"head", region])
    assert region.fd == -1


async def test_a_response_too_large_for_the_batch_reads_each_small_region_once(tmp_path, pair, monkeypatch):
    sock, peer = pair
    payload = os.urandom(60 * 1024)
    regions = [_region(tmp_path, payload) for _ in range(5)]   # 300 KiB in all: sent at once, not batched
    reads = []
    real_read = FileRegion.read_bytes
    monkeypatch.setattr(FileRegion, "read_bytes", lambda self: reads.append(self) or real_read(self))
    received = asyncio.get_running_loop().run_in_executor(None, _receive, peer, 5 * len(payload))
    await Connection(sock, asyncio.get_running_loop()).write(list(regions))
    assert await received == payload * 5
    assert len(reads) == 5 and CountingSocket.sendmsgs >= 1


async def test_queue_takes_only_what_the_batch_can_send_and_leaves_the_rest_untouched(tmp_path, pair):
    """Connection.queue (a Fetch answered inside the purgatory's notify writes through it): a large region, a
    response over the batch's size, or one behind an unsent response is refused with its regions still open, for
    `write` to send; a small one is queued and goes out on the loop's next turn."""
    sock, peer = pair
    conn = Connection(sock, asyncio.get_running_loop())
    large = _region(tmp_path, os.urandom(connection.INLINE_REGION_BYTES + 1))
    assert not conn.queue([b"head", large]) and large.fd >= 0
    large.release()
    assert not conn.queue(b"x" * (connection.BATCHED_RESPONSE_BYTES + 1))
    small = _region(tmp_path, b"payload")
    sent: list[str] = []
    assert conn.queue([b"head", small], lambda: sent.append("sent")) and small.fd == -1
    assert not conn.queue(b"second")   # the first is not with the kernel yet: write() waits for it
    await asyncio.sleep(0)
    assert sent == ["sent"] and _receive(peer, 11) == b"headpayload"
    assert conn.queue(b"second")
