"""The cache hands a burst of partition states to the event loop a slice per turn (issue 20): at 10,000 partitions a
failover queues 10,000 listener calls on every broker, and with one loop callback each a request arriving behind
them (Metadata, a follower's fetch) waited for all of them, seconds. No servers: a plain asyncio loop."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from broker.controller import zk_paths as zp
from broker.controller.cache import DRAIN_SLICE, MetadataCache
from broker.controller.state import PartitionState

N = 1_000


class Recorder:
    def __init__(self) -> None:
        self.order: list[int] = []

    def on_partition_state(self, topic: str, partition: int, state: PartitionState) -> None:
        self.order.append(partition)

    def on_topic_deleted(self, topic: str) -> None:
        pass

    def on_brokers_changed(self) -> None:
        pass

    def on_topic_config_changed(self, topic: str) -> None:
        pass


@pytest.fixture
def attached() -> Iterator[tuple[asyncio.AbstractEventLoop, MetadataCache, Recorder, list[int]]]:
    """A cache on a fresh loop whose call_soon_threadsafe calls are counted (the wake-ups of the loop)."""
    loop = asyncio.new_event_loop()
    wakeups = [0]
    plain = loop.call_soon_threadsafe

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        wakeups[0] += 1
        return plain(*args, **kwargs)
    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    cache, rec = MetadataCache(), Recorder()
    cache.attach(rec, loop)
    cache.put_assignment("t", zp.TopicAssignment(uuid.uuid4(), {p: (1, 2, 3) for p in range(N)}, version=0))
    try:
        yield loop, cache, rec, wakeups
    finally:
        loop.close()


def burst(cache: MetadataCache, version: int) -> None:
    for p in range(N):
        cache.put_state("t", p, PartitionState((1, 2, 3), leader=1 + version % 3, leader_epoch=version, isr=(1, 2, 3),
                                               version=version))


def settle(loop: asyncio.AbstractEventLoop, rec: Recorder, count: int) -> None:
    async def until() -> None:
        for _ in range(100 * N):  # bounded: a turn per slice is all it takes
            if len(rec.order) >= count:
                return
            await asyncio.sleep(0)
        raise AssertionError(f"{len(rec.order)} of {count} delivered")
    loop.run_until_complete(until())


def test_a_callback_queued_behind_a_burst_waits_for_a_slice_not_the_burst(attached):
    loop, cache, rec, _ = attached
    burst(cache, 1)
    seen: list[int] = []
    loop.call_soon_threadsafe(lambda: seen.append(len(rec.order)))  # a request's bytes, behind the burst
    settle(loop, rec, N)
    assert seen and seen[0] <= DRAIN_SLICE  # before: all 1,000 first
    assert rec.order == list(range(N))  # cache-update order kept


def test_one_wakeup_of_the_loop_per_burst(attached):
    loop, cache, rec, wakeups = attached
    burst(cache, 1)
    assert wakeups[0] == 1  # before: one per partition
    settle(loop, rec, N)
    burst(cache, 2)
    settle(loop, rec, 2 * N)
    assert wakeups[0] == 2


def test_call_in_order_runs_after_every_state_queued_before_it(attached):
    loop, cache, rec, _ = attached
    burst(cache, 1)
    got: list[int] = []
    cache.call_in_order(loop, lambda n: got.append(len(rec.order) + n), 0)
    settle(loop, rec, N)
    loop.run_until_complete(asyncio.sleep(0))
    assert got == [N]  # the ISR write's answer cannot overtake an older state of its partition
