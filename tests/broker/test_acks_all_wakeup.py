"""acks=all without servers: a replicated produce is answered on the event loop's next turn after the follower fetch
that moves the high watermark (Kafka's Partition.maybeIncrementLeaderHW completing the DelayedProduce), and a
follower's parked fetch is woken by the leader's append (DelayedFetch), not by its max_wait timer."""

import asyncio
from types import SimpleNamespace

from broker.controller.state import PartitionState
from broker.errors import ErrorCode
from broker.protocol.api import RequestContext
from broker.protocol.codec import build, request_class
from broker.protocol.handlers.produce import handle_produce
from broker.quota.manager import QuotaSettings
from broker.quota.throttle import ClientQuotas
from broker.replication.replica_manager import leo_key
from tests.broker.test_replica_manager import _batch, _manager


def _produce_request(acks: int, partitions: list[int], timeout_ms: int = 30_000):
    cls = request_class(0, 9)
    return build(cls, {"transactional_id": None, "acks": acks, "timeout": timeout_ms, "topic_data": [
        {"name": "t", "partition_data": [{"index": i, "records": _batch()} for i in partitions]}]})


def _context(rm) -> RequestContext:
    broker = SimpleNamespace(replicas=rm, purgatory=rm.purgatory, metrics=None, clock=rm.clock, authorizer=None,
                             quotas=ClientQuotas(QuotaSettings(), rm.clock))
    return RequestContext(broker, 0, 9, 1, "test", "127.0.0.1")  # type: ignore[arg-type]


async def test_a_replicated_produce_is_answered_on_the_turn_after_the_high_watermark_moves(tmp_path):
    rm, _, store = _manager(tmp_path)
    store.topics["t"] = SimpleNamespace(name="t", partitions=1)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    handler = asyncio.create_task(handle_produce(_context(rm), _produce_request(-1, [0])))
    await asyncio.sleep(0)
    part = rm.partitions[("t", 0)]
    assert not handler.done() and part.log.log_end_offset == 1 and part.log.high_watermark == 0
    rm.on_follower_fetch(part, 2, 1)  # follower 2's next fetch carries its new log end offset
    assert part.log.high_watermark == 1
    await asyncio.sleep(0)  # one turn (with asyncio.gather and wait_for in between it took four)
    assert handler.done()
    resp = handler.result()
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.none


async def test_a_produce_over_two_partitions_waits_for_both_within_one_deadline(tmp_path):
    rm, clock, store = _manager(tmp_path)
    store.topics["t"] = SimpleNamespace(name="t", partitions=2)
    for i in (0, 1):
        rm.on_partition_state("t", i, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    handler = asyncio.create_task(handle_produce(_context(rm), _produce_request(-1, [0, 1])))
    await asyncio.sleep(0)
    rm.on_follower_fetch(rm.partitions[("t", 1)], 2, 1)
    await asyncio.sleep(0)
    assert not handler.done()  # partition 0 is not replicated yet
    rm.on_follower_fetch(rm.partitions[("t", 0)], 2, 1)
    resp = await asyncio.wait_for(handler, 1)
    assert [p["error_code"] for p in resp["responses"][0]["partition_responses"]] == [ErrorCode.none] * 2


async def test_a_produce_times_out_once_for_the_whole_request(tmp_path):
    rm, clock, store = _manager(tmp_path)
    store.topics["t"] = SimpleNamespace(name="t", partitions=2)
    for i in (0, 1):
        rm.on_partition_state("t", i, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    handler = asyncio.create_task(handle_produce(_context(rm), _produce_request(-1, [0, 1], timeout_ms=30)))
    await asyncio.sleep(0)
    clock.advance(30)  # the request's deadline passes (the purgatory's own timer runs on the loop's time)
    resp = await asyncio.wait_for(handler, 5)
    assert [p["error_code"] for p in resp["responses"][0]["partition_responses"]] == \
        [ErrorCode.request_timed_out] * 2


async def test_a_follower_fetch_parked_on_the_leader_is_woken_by_the_append(tmp_path):
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    parked = asyncio.create_task(rm.purgatory.wait([leo_key("t", 0)], 30))  # replica.fetch.wait.max.ms: far away
    await asyncio.sleep(0)
    rm.append("t", 0, _batch(), -1)
    await asyncio.sleep(0)
    assert parked.done() and parked.result() is True


async def test_a_replicated_produce_is_answered_inside_the_follower_fetch_that_moves_the_high_watermark(tmp_path):
    rm, _, store = _manager(tmp_path)
    store.topics["t"] = SimpleNamespace(name="t", partitions=2)
    for i in (0, 1):
        rm.on_partition_state("t", i, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    ctx = _context(rm)
    answers: list[dict] = []
    ctx.send_now = lambda _ctx, answer: answers.append(answer)
    handler = asyncio.create_task(handle_produce(ctx, _produce_request(-1, [0, 1])))
    await asyncio.sleep(0)
    rm.on_follower_fetch(rm.partitions[("t", 1)], 2, 1)
    assert answers == []   # partition 0 is not replicated yet
    await asyncio.sleep(0)
    rm.on_follower_fetch(rm.partitions[("t", 0)], 2, 1)
    assert len(answers) == 1   # inside the fetch that decided the last partition (Kafka's DelayedProduce)
    assert [p["error_code"] for p in answers[0]["responses"][0]["partition_responses"]] == [ErrorCode.none] * 2
    assert await handler is None and ctx.remote_s > 0
