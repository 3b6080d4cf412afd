"""Responses written in one turn of the event loop, sent together in one system call (Linux AIO's io_submit).

One event often completes several parked requests: an append wakes every follower's Fetch, a high-watermark move
the consumers' Fetches and the producers' Produces. Sent one by one, each send on loopback wakes its reader
synchronously, and on a busy machine the woken process takes the sender's core before the next send: the second
follower's answer then left a whole follower turnaround after the first (docs/latency.md). Queued to the end of
the turn and submitted together, every answer is on the wire before the broker returns to user space, which is
where the kernel preempts it. Kafka gets the same from its network threads sending in parallel.

Linux AIO runs a write to a socket synchronously inside io_submit, and a non-blocking socket stays non-blocking (a
full send buffer gives -EAGAIN), so the results are ready when io_submit returns and io_getevents collects them
without waiting.
It is three system calls through ctypes: the one Python binding (python-libaio) needs the libaio system library
and is built for file I/O, and io_uring's bindings need kernels newer than Debian 12's. Where io_setup fails (not
Linux, a seccomp filter, aio-max-nr reached), or the kernel refuses AIO on sockets, the batch goes out with one
write per response, in order.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import platform
import socket
import threading
import weakref
from collections.abc import Callable

MAX_BATCH = 64

# (io_setup, io_getevents, io_submit): arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h.
_SYSCALLS = {"x86_64": (206, 208, 209), "aarch64": (0, 4, 2)}
_IOCB_CMD_PWRITE = 1
_NOT_SUBMITTED = -(1 << 40)   # not an errno: io_submit did not take the write
_REFUSED = frozenset((-errno.EINVAL, -errno.EOPNOTSUPP, -errno.ENOSYS))


class _IoCb(ctypes.Structure):
    """struct iocb (include/uapi/linux/aio_abi.h), little-endian field order."""
    _fields_ = [("aio_data", ctypes.c_uint64), ("aio_key", ctypes.c_uint32), ("aio_rw_flags", ctypes.c_int32),
                ("aio_lio_opcode", ctypes.c_uint16), ("aio_reqprio", ctypes.c_int16),
                ("aio_fildes", ctypes.c_uint32), ("aio_buf", ctypes.c_uint64), ("aio_nbytes", ctypes.c_uint64),
                ("aio_offset", ctypes.c_int64), ("aio_reserved2", ctypes.c_uint64), ("aio_flags", ctypes.c_uint32),
                ("aio_resfd", ctypes.c_uint32)]


class _IoEvent(ctypes.Structure):
    """struct io_event."""
    _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64), ("res", ctypes.c_int64),
                ("res2", ctypes.c_int64)]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class AioWriter:
    """One Linux AIO context, used only for socket writes, which complete inside io_submit. Thread-safe."""

    def __init__(self) -> None:
        numbers = _SYSCALLS.get(platform.machine())
        if numbers is None or not hasattr(ctypes, "CDLL"):
            raise OSError(errno.ENOSYS, "no Linux AIO on this machine")
        setup, self._getevents, self._submit = numbers
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._ctx = ctypes.c_ulong(0)
        if self._libc.syscall(setup, MAX_BATCH, ctypes.byref(self._ctx)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._iocbs = (_IoCb * MAX_BATCH)()
        self._ptrs = (ctypes.POINTER(_IoCb) * MAX_BATCH)(*(ctypes.pointer(c) for c in self._iocbs))
        self._events = (_IoEvent * MAX_BATCH)()
        for cb in self._iocbs:
            cb.aio_lio_opcode = _IOCB_CMD_PWRITE
        self._lock = threading.Lock()
        self._timeout = _TimeSpec(1, 0)   # a bound, never reached by a socket write
        self.usable = True

    def write_all(self, writes: list[tuple[int, bytes]]) -> list[int]:
        """Write each (fd, data) once, all in one io_submit (at most MAX_BATCH); per write the bytes written
        or -errno. A kernel that refuses AIO on sockets turns this writer off; its writes are sent one by one."""
        results = self._submit_all(writes) if self.usable else [_NOT_SUBMITTED] * len(writes)
        for i, res in enumerate(results):
            if res in _REFUSED:   # nothing was written: the kernel did not take the operation
                self.usable = False
            if res == _NOT_SUBMITTED or res in _REFUSED:
                [results[i]] = write_each([writes[i]])
        return results

    def _submit_all(self, writes: list[tuple[int, bytes]]) -> list[int]:
        n = len(writes)
        # A submitted write whose result never came back fails its connection: sending it again could repeat bytes.
        results = [-errno.EIO] * n
        with self._lock:
            buffers = []   # the c_char_p objects keep each address valid until io_submit returns
            for i, (fd, data) in enumerate(writes):
                cb, buf = self._iocbs[i], ctypes.c_char_p(data)
                buffers.append(buf)
                cb.aio_data, cb.aio_fildes, cb.aio_nbytes = i, fd, len(data)
                cb.aio_buf = ctypes.cast(buf, ctypes.c_void_p).value or 0
            submitted = max(self._libc.syscall(self._submit, self._ctx, n, self._ptrs), 0)
            reaped = 0
            while reaped < submitted:   # socket writes complete inside io_submit: this does not wait
                got = self._libc.syscall(self._getevents, self._ctx, submitted - reaped, MAX_BATCH, self._events,
                                         ctypes.byref(self._timeout))
                if got <= 0:
                    break
                for ev in self._events[:got]:
                    results[ev.data] = ev.res
                reaped += got
        # io_submit stops at the first write it cannot queue; those after it were not submitted.
        results[submitted:] = [_NOT_SUBMITTED] * (n - submitted)
        return results


_aio: AioWriter | None = None
_aio_tried = False
_aio_lock = threading.Lock()


def aio_writer() -> AioWriter | None:
    """The process's AIO context, made on first use; None where Linux AIO is not available or was refused."""
    global _aio, _aio_tried
    if not _aio_tried:
        with _aio_lock:
            if not _aio_tried:
                try:
                    _aio = AioWriter()
                except (OSError, AttributeError):
                    _aio = None
                _aio_tried = True
    return _aio if _aio is not None and _aio.usable else None


def write_each(writes: list[tuple[int, bytes]]) -> list[int]:
    """Each (fd, data) with its own non-blocking write, in order: the bytes written or -errno each."""
    results = []
    for fd, data in writes:
        try:
            results.append(os.write(fd, data))
        except OSError as e:
            results.append(-(e.errno or errno.EIO))
    return results


SendDone = Callable[[int], None]


class SendBatch:
    """Writes queued during one turn of an event loop, sent together at the start of its next turn."""

    def __init__(self) -> None:
        self._queue: list[tuple[socket.socket, bytes, SendDone]] = []

    def send(self, sock: socket.socket, data: bytes, done: SendDone) -> None:
        """Queue one write. After the flush `done` gets the bytes written (0: the socket's buffer was full) or
        -errno; it is not called if the socket was closed before the flush."""
        if not self._queue:
            asyncio.get_running_loop().call_soon(self.flush)
        self._queue.append((sock, data, done))

    def flush(self) -> None:
        queue, self._queue = self._queue, []
        # A write whose socket was closed meanwhile is dropped: its descriptor number may already belong to
        # another connection.
        live = [(sock.fileno(), data, done) for sock, data, done in queue if sock.fileno() >= 0]
        for start in range(0, len(live), MAX_BATCH):
            chunk = live[start:start + MAX_BATCH]
            writes = [(fd, data) for fd, data, _ in chunk]
            aio = aio_writer() if len(chunk) > 1 else None
            results = aio.write_all(writes) if aio is not None else write_each(writes)
            for (_, _, done), res in zip(chunk, results, strict=True):   # told after every send of the chunk
                done(0 if res in (-errno.EAGAIN, -errno.EINTR) else res)


_BATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SendBatch] = weakref.WeakKeyDictionary()


def send_batch(loop: asyncio.AbstractEventLoop) -> SendBatch:
    """The loop's batch (a loop runs in one thread, so its queue needs no lock)."""
    batch = _BATCHES.get(loop)
    if batch is None:
        batch = _BATCHES[loop] = SendBatch()
    return batch
