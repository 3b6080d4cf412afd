"""A follower's incremental fetch session on a leader of many partitions, without servers: partitions with nothing
new for the follower keep it caught up (its fetch state moves on) but are not read, and the answer carries only
what changed — the leader's per-fetch work follows what moved, not the session's size (issue 20: a leader of
1,000 partitions spent ~20 ms of CPU on every follower fetch)."""

from types import SimpleNamespace

from broker.controller.state import PartitionState
from broker.errors import ErrorCode
from broker.fetch_session import FetchManager, FetchSessionCache
from broker.metadata import TopicInfo
from broker.protocol.api import RequestContext
from broker.protocol.codec import build, request_class
from broker.protocol.handlers.fetch import handle_fetch
from broker.quota.manager import QuotaSettings
from broker.quota.replication import ReplicationQuotas, ReplicationQuotaSettings
from broker.quota.throttle import ClientQuotas
from tests.broker.test_replica_manager import _batch, _manager

N = 200


def _leader(tmp_path, isr=(1, 2)):
    rm, clock, store = _manager(tmp_path)
    store.topics["t"] = TopicInfo("t", None, N)
    for i in range(N):
        rm.on_partition_state("t", i, PartitionState((1, 2), 1, 0, isr, version=0))
    broker = SimpleNamespace(replicas=rm, clock=clock, purgatory=rm.purgatory, metrics=None, authorizer=None,
                             quotas=ClientQuotas(QuotaSettings(), clock),
                             replication_quotas=ReplicationQuotas(1, ReplicationQuotaSettings(), clock,
                                                                  lambda topic: {}),
                             fetch_manager=FetchManager(FetchSessionCache()))
    calls: list[int] = []
    full_path = rm.on_follower_fetch
    rm.on_follower_fetch = lambda part, replica, offset: (calls.append(part.index), full_path(part, replica, offset))
    return rm, clock, broker, calls


def _fetch(broker, offsets: dict[int, int], session_id: int, epoch: int, max_wait: int = 0):
    body = {"cluster_id": None, "replica_id": 2, "max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch, "forgotten_topics_data": [],
            "rack_id": "", "topics": [{"topic": "t", "partitions": [
                {"partition": i, "current_leader_epoch": 0, "fetch_offset": o, "last_fetched_epoch": -1,
                 "log_start_offset": 0, "partition_max_bytes": 1 << 20} for i, o in offsets.items()]}]
            if offsets else []}
    ctx = RequestContext(broker, 1, 12, 1, "replica-fetcher-2", "127.0.0.1")  # type: ignore[arg-type]
    return handle_fetch(ctx, build(request_class(1, 12), body))


def _answered(resp) -> dict[int, dict]:
    return {p["partition_index"]: p for t in resp["responses"] for p in t["partitions"]}


async def test_an_incremental_follower_fetch_reads_only_what_moved_and_keeps_the_rest_caught_up(tmp_path):
    rm, clock, broker, calls = _leader(tmp_path)
    first = await _fetch(broker, {i: 0 for i in range(N)}, 0, 0)  # full: opens the session
    assert first["error_code"] == ErrorCode.none and first["session_id"] > 0 and len(_answered(first)) == N
    session = first["session_id"]

    rm.append("t", 7, _batch(), 1)
    clock.advance(500)
    calls.clear()
    second = await _fetch(broker, {}, session, 1)   # names nothing: nothing changed on the follower's side
    assert list(_answered(second)) == [7] and _answered(second)[7]["records"]
    assert calls == [7]   # the other 199 partitions took the quiet path (before: all 200, every fetch)
    now = clock.now_ms()
    assert all(rm.partitions[("t", i)].followers[2].last_caught_up_ms == now for i in range(N) if i != 7)

    calls.clear()
    third = await _fetch(broker, {7: 1}, session, 2)   # the follower has it: the high watermark moves
    assert rm.partitions[("t", 7)].log.high_watermark == 1
    assert list(_answered(third)) == [7] and _answered(third)[7]["high_watermark"] == 1
    assert calls == [7]

    calls.clear()
    fourth = await _fetch(broker, {}, session, 3)   # nothing new anywhere
    assert _answered(fourth) == {} and calls == []


async def test_a_follower_outside_the_isr_takes_the_full_path_and_rejoins(tmp_path):
    rm, clock, broker, calls = _leader(tmp_path, isr=(1,))
    first = await _fetch(broker, {i: 0 for i in range(N)}, 0, 0)
    assert all(rm.partitions[("t", i)].state.isr == (1, 2) for i in range(N))  # caught up: back in the ISR
    calls.clear()
    await _fetch(broker, {}, first["session_id"], 1)
    assert calls == []   # in the ISR now, nothing new: quiet


def test_the_quiet_path_refuses_whatever_could_change_the_isr_or_the_answer(tmp_path):
    rm, _, _, _ = _leader(tmp_path)
    part = rm.partitions[("t", 3)]
    rm.on_follower_fetch(part, 2, 0)
    assert rm.on_quiet_follower_fetch("t", 3, 2, 0, 0, 0, 0)
    assert not rm.on_quiet_follower_fetch("t", 3, 2, 0, 1, 0, 0)    # another leader epoch
    assert not rm.on_quiet_follower_fetch("t", 3, 2, 0, 0, -1, 0)   # the session was told another HW
    assert not rm.on_quiet_follower_fetch("t", 3, 3, 0, 0, 0, 0)    # not a follower it knows
    assert not rm.on_quiet_follower_fetch("t", 999, 2, 0, 0, 0, 0)  # no such partition here
    rm.append("t", 3, _batch(), 1)
    assert not rm.on_quiet_follower_fetch("t", 3, 2, 0, 0, 0, 0)    # data to send
    rm.on_follower_fetch(part, 2, 1)
    assert not rm.on_quiet_follower_fetch("t", 3, 2, 1, 0, 0, 0)    # the HW moved since the session's answer
    assert rm.on_quiet_follower_fetch("t", 3, 2, 1, 0, 1, 0)


async def test_a_parked_session_fetch_woken_by_an_append_rereads_only_that_partition(tmp_path):
    import asyncio

    rm, clock, broker, calls = _leader(tmp_path)
    counted: dict[str, int] = {"fetched": 0, "unchanged": 0}
    broker.metrics = SimpleNamespace(
        fetched=lambda topics, follower: counted.__setitem__(
            "fetched", counted["fetched"] + sum(len(t["partitions"]) for t in topics)),
        fetched_unchanged=lambda per_topic: counted.__setitem__(
            "unchanged", counted["unchanged"] + sum(per_topic.values())))
    first = await _fetch(broker, {i: 0 for i in range(N)}, 0, 0)
    quiet_calls: list[int] = []
    quiet_path = rm.on_quiet_follower_fetch
    rm.on_quiet_follower_fetch = lambda *a: (quiet_calls.append(a[1]), quiet_path(*a))[1]
    counted.update(fetched=0, unchanged=0)
    parked = asyncio.ensure_future(_fetch(broker, {}, first["session_id"], 1, max_wait=30_000))
    await asyncio.sleep(0)
    assert not parked.done() and len(quiet_calls) == N   # read once on arrival: nothing new anywhere
    quiet_calls.clear()
    calls.clear()
    rm.append("t", 42, _batch(), 1)
    answer = await asyncio.wait_for(parked, 5)
    assert list(_answered(answer)) == [42]
    assert calls == [42] and quiet_calls == [42]   # not the other 199 again
    assert counted == {"fetched": 1, "unchanged": N - 1}   # TotalFetchRequestsPerSec: every session partition


async def test_a_session_fetch_short_of_its_min_bytes_is_answered_with_every_partition_that_moved(tmp_path):
    """Kafka keeps a follower's DelayedFetch watched below replica.fetch.min.bytes: two appends to two partitions
    complete it inside the second, with both (the first is not forgotten while it stays parked)."""
    import asyncio

    rm, _clock, broker, _calls = _leader(tmp_path)
    first = await _fetch(broker, {i: 0 for i in range(N)}, 0, 0)
    batch = _batch()
    body = {"cluster_id": None, "replica_id": 2, "max_wait": 30_000, "min_bytes": 2 * len(batch),
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": first["session_id"], "session_epoch": 1,
            "forgotten_topics_data": [], "rack_id": "", "topics": []}
    answers: list[dict] = []
    ctx = RequestContext(broker, 1, 12, 1, "replica-fetcher-2", "127.0.0.1")  # type: ignore[arg-type]
    ctx.send_now = lambda _ctx, answer: answers.append(answer)
    parked = asyncio.ensure_future(handle_fetch(ctx, build(request_class(1, 12), body)))
    await asyncio.sleep(0)
    rm.append("t", 5, batch, 1)
    await asyncio.sleep(0)
    assert answers == [] and not parked.done()
    rm.append("t", 9, _batch(), 1)
    assert len(answers) == 1 and sorted(_answered(answers[0])) == [5, 9]
    assert await asyncio.wait_for(parked, 5) is None
