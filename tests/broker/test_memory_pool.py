"""queued.max.request.bytes: the request memory pool, and its config check."""

from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.memory_pool import MemoryPool


async def test_a_request_waits_until_the_pool_has_room() -> None:
    pool = MemoryPool(100)
    await pool.acquire(70)
    second = asyncio.create_task(pool.acquire(50))
    await asyncio.sleep(0)  # let it try: it must wait, 70 + 50 > 100
    assert not second.done() and pool.used == 70
    pool.release(70)
    await asyncio.wait_for(second, 5)
    assert pool.used == 50


async def test_a_request_larger_than_the_pool_passes_alone_and_unbounded_never_waits() -> None:
    pool = MemoryPool(100)
    await asyncio.wait_for(pool.acquire(500), 5)  # nothing else held: let through, as Kafka's pool does
    pool.release(500)
    unbounded = MemoryPool(-1)
    for _ in range(3):
        await asyncio.wait_for(unbounded.acquire(10**9), 1)
    assert unbounded.used == 3 * 10**9


def test_queued_max_request_bytes_below_the_request_size_limit_is_refused() -> None:
    assert BrokerConfig.from_properties({}).queued_max_request_bytes == -1
    ok = BrokerConfig.from_properties({"queued.max.request.bytes": "209715200"})
    assert ok.queued_max_request_bytes == 209715200
    with pytest.raises(ConfigError, match="queued.max.request.bytes"):
        BrokerConfig.from_properties({"queued.max.request.bytes": "1000"})
