"""A parked Fetch is answered inside the notify that satisfies it (Kafka's DelayedFetch completed by the thread
that appends or moves the high watermark), without servers: a follower's answer is sent from within the leader's
append, a consumer's from within the follower fetch that moves the high watermark, and a completion that fails
leaves the parked handler to answer as before (issue 20)."""

import asyncio

import pytest

from broker.errors import ErrorCode
from broker.protocol.api import RequestContext
from broker.protocol.codec import build, request_class
from broker.protocol.handlers import fetch as fetch_handler
from broker.protocol.handlers.fetch import handle_fetch
from broker.protocol.handlers.produce import handle_produce
from tests.broker.test_follower_session_fetch import _leader
from tests.broker.test_replica_manager import _batch


def _plain(req) -> dict:
    return {"cluster_id": None, "replica_id": req.replica_id, "max_wait": 30_000, "min_bytes": 1,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": ""}


def _request(replica_id: int, offset: int, max_wait: int = 30_000, min_bytes: int = 1):
    return build(request_class(1, 12), {
        "cluster_id": None, "replica_id": replica_id, "max_wait": max_wait, "min_bytes": min_bytes,
        "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": 0, "fetch_offset": offset, "last_fetched_epoch": -1,
             "log_start_offset": 0, "partition_max_bytes": 1 << 20}]}]})


def _context(broker, answers: list, client: str) -> RequestContext:
    ctx = RequestContext(broker, 1, 12, 1, client, "127.0.0.1")  # type: ignore[arg-type]
    ctx.send_now = lambda _ctx, answer: answers.append(answer)
    return ctx


def _records(answer: dict) -> int:
    """The bytes of records in the answer's first partition (a FileRegion of the segment, or bytes)."""
    records = answer["responses"][0]["partitions"][0]["records"]
    return getattr(records, "length", None) or len(records or b"")


async def _parked(handler) -> asyncio.Task:
    task = asyncio.create_task(handler)
    await asyncio.sleep(0)
    assert not task.done()
    return task


async def test_a_follower_fetch_is_answered_inside_the_append(tmp_path):
    rm, _clock, broker, _calls = _leader(tmp_path)
    answers: list[dict] = []
    ctx = _context(broker, answers, "replica-fetcher-2")
    task = await _parked(handle_fetch(ctx, _request(2, 0)))
    rm.append("t", 0, _batch(), -1)
    assert len(answers) == 1 and _records(answers[0])   # before the loop ran the parked handler again
    assert await task is None
    assert ctx.remote_s > 0


async def test_a_consumer_fetch_is_answered_inside_the_follower_fetch_that_moves_the_high_watermark(tmp_path):
    rm, _clock, broker, _calls = _leader(tmp_path, isr=(1, 2))
    rm.append("t", 0, _batch(), -1)
    consumer_answers: list[dict] = []
    consumer = await _parked(handle_fetch(_context(broker, consumer_answers, "consumer"), _request(-1, 0)))
    follower = await handle_fetch(RequestContext(broker, 1, 12, 2, "replica-fetcher-2", "127.0.0.1"),  # type: ignore[arg-type]
                                  _request(2, 1, max_wait=0))   # replicated: the high watermark moves
    assert rm.partitions[("t", 0)].log.high_watermark == 1
    assert len(consumer_answers) == 1 and _records(consumer_answers[0])
    assert follower["responses"][0]["partitions"][0]["high_watermark"] == 1
    assert await consumer is None


async def test_a_fetch_short_of_its_min_bytes_stays_parked_until_an_append_satisfies_it(tmp_path):
    """Kafka keeps a DelayedFetch watched while less than fetch.min.bytes has arrived: the handler is neither
    resumed nor parked again between the appends."""
    rm, _clock, broker, _calls = _leader(tmp_path, isr=(1,))   # each append moves the high watermark
    batch = _batch()
    parks = []
    wait = broker.purgatory.wait
    broker.purgatory.wait = lambda *a, **k: parks.append(a) or wait(*a, **k)
    answers: list[dict] = []
    task = await _parked(handle_fetch(_context(broker, answers, "consumer"),
                                      _request(-1, 0, min_bytes=2 * len(batch))))
    rm.append("t", 0, batch, -1)
    await asyncio.sleep(0)
    assert answers == [] and not task.done()
    rm.append("t", 0, _batch(), -1)
    assert len(answers) == 1 and _records(answers[0]) == 2 * len(batch)
    assert await task is None and len(parks) == 1


async def test_an_answer_that_cannot_be_sent_fails_the_fetch_not_the_append(tmp_path):
    rm, _clock, broker, _calls = _leader(tmp_path)

    def broken(_ctx: RequestContext, _answer: dict) -> None:
        raise OSError("connection gone")

    ctx = RequestContext(broker, 1, 12, 1, "replica-fetcher-2", "127.0.0.1")  # type: ignore[arg-type]
    ctx.send_now = broken
    task = await _parked(handle_fetch(ctx, _request(2, 0)))
    part, result = rm.append("t", 0, _batch(), -1)   # the append itself is not disturbed
    assert result.base_offset == 0 and part.log.log_end_offset == 1
    with pytest.raises(OSError, match="connection gone"):
        await task   # the server closes the connection, as for a failed write


async def test_a_read_that_fails_inside_notify_leaves_the_answer_to_the_parked_handler(tmp_path, monkeypatch):
    rm, _clock, broker, _calls = _leader(tmp_path)
    answers: list[dict] = []
    ctx = _context(broker, answers, "replica-fetcher-2")
    real = fetch_handler._read_partitions
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:   # the first read inside the notify; the first of all is the handler's
            raise RuntimeError("a bug in the read")
        return real(*args, **kwargs)

    monkeypatch.setattr(fetch_handler, "_read_partitions", flaky)
    task = await _parked(handle_fetch(ctx, _request(2, 0)))
    rm.append("t", 0, _batch(), -1)
    assert answers == [] and len(calls) == 2
    answer = await task   # resumed and read again
    assert answer is not None and answer["error_code"] == ErrorCode.none and _records(answer)


async def test_a_produce_to_several_partitions_completes_a_follower_fetch_once_with_all_of_them(tmp_path):
    rm, _clock, broker, _calls = _leader(tmp_path)
    answers: list[dict] = []
    body = _request(2, 0)
    both = build(request_class(1, 12), {**_plain(body), "topics": [{"topic": "t", "partitions": [
        {"partition": i, "current_leader_epoch": 0, "fetch_offset": 0, "last_fetched_epoch": -1,
         "log_start_offset": 0, "partition_max_bytes": 1 << 20} for i in (0, 1)]}]})
    task = await _parked(handle_fetch(_context(broker, answers, "replica-fetcher-2"), both))
    with rm.appending_together():
        rm.append("t", 0, _batch(), -1)
        rm.append("t", 1, _batch(), -1)
        assert answers == []   # held until both are appended
    assert len(answers) == 1
    assert sorted(p["partition_index"] for p in answers[0]["responses"][0]["partitions"]) == [0, 1]
    assert all(p["records"] for p in answers[0]["responses"][0]["partitions"])
    assert await task is None


async def test_a_consumer_answer_is_queued_before_the_acknowledgement_completed_by_the_same_move(tmp_path):
    rm, _clock, broker, _calls = _leader(tmp_path)
    broker.purgatory = rm.purgatory
    queued: list[str] = []
    produce_ctx = RequestContext(broker, 0, 9, 3, "producer", "127.0.0.1")  # type: ignore[arg-type]
    produce_ctx.send_now = lambda _ctx, answer: queued.append("acknowledgement")
    produce = await _parked(handle_produce(produce_ctx, build(request_class(0, 9), {
        "transactional_id": None, "acks": -1, "timeout": 30_000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": _batch()}]}]})))
    consumer_ctx = _context(broker, [], "consumer")   # parked after the produce, answered before it
    consumer_ctx.send_now = lambda _ctx, answer: queued.append("consumer data")
    consumer = await _parked(handle_fetch(consumer_ctx, _request(-1, 0)))
    await handle_fetch(RequestContext(broker, 1, 12, 2, "replica-fetcher-2", "127.0.0.1"),  # type: ignore[arg-type]
                       _request(2, 1, max_wait=0))   # the high watermark moves
    assert queued == ["consumer data", "acknowledgement"]
    assert await consumer is None and await produce is None
