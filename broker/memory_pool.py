"""`queued.max.request.bytes`: a bound on the request bytes read and not yet handled, over all connections.

Kafka's SocketServer takes each request's buffer from a MemoryPool (SimpleMemoryPool) sized by this key and
stops reading from sockets while the pool is empty, so a crowd of clients sending large requests cannot
exhaust the heap. Here a connection that would overdraw the pool waits before it allocates its frame buffer.
A request larger than the whole pool is still let through when nothing else is held (Kafka's pool does the
same), so `socket.request.max.bytes` alone decides what is too large.
"""

from __future__ import annotations

import asyncio


class MemoryPool:
    """Bytes held by requests in flight; `capacity` <= 0 means unbounded (Kafka's MemoryPool.NONE)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._released = asyncio.Condition()

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    async def acquire(self, size: int) -> None:
        if self.bounded:
            async with self._released:
                await self._released.wait_for(lambda: self.used == 0 or self.used + size <= self.capacity)
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        if self.bounded:
            asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._released:
            self._released.notify_all()
