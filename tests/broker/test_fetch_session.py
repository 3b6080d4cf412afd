"""FetchSessionCache, FetchManager and the fetch contexts (KIP-227, Kafka 3.9's rules), without servers."""

import random

import pytest

from broker.errors import ErrorCode
from broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INT32_MAX,
    INVALID_SESSION_ID,
    FetchManager,
    FetchSessionCache,
    FetchSessionCacheShard,
    FullFetchContext,
    IncrementalFetchContext,
    PartitionData,
    SessionErrorContext,
    SessionlessFetchContext,
    next_epoch,
    register_metrics,
)
from common.clock import ManualClock
from exporter.registry import MetricName, Registry

EVICT_MS = 120_000


def entry(partition, hw=10, log_start=0, records=b"", error=0, preferred=-1):
    return {"partition_index": partition, "error_code": error, "high_watermark": hw, "last_stable_offset": hw,
            "log_start_offset": log_start, "aborted_transactions": None, "preferred_read_replica": preferred,
            "records": records}


def request(*tps, offset=0, max_bytes=1024, at=None):
    """FetchData of the partitions (consecutive ones of a topic together); `at`: {tp: (offset, max_bytes)}."""
    at = at or {tp: (offset, max_bytes) for tp in tps}
    out: list[tuple[str, list[PartitionData]]] = []
    for (t, p), (off, mb) in at.items():
        if not out or out[-1][0] != t:
            out.append((t, []))
        out[-1][1].append(PartitionData(p, off, -1, mb))
    return out


def read(ctx):
    """(topic, partition, data) in the order the context has them read."""
    return [(t, d.partition, d) for t, parts in ctx.topics() for d in parts]


def serve(ctx, now=0, **per_tp):
    """Read every partition of the context as the handler would: entry(...) kwargs per 'topic_partition'."""
    topics, datas = [], []
    for t, parts in ctx.topics():
        entries = []
        for d in parts:
            entries.append(entry(d.partition, **per_tp.get(f"{t}_{d.partition}", {})))
            datas.append(d)
        topics.append({"topic": t, "partitions": entries})
    return ctx.respond(topics, datas, now)


def sent(result):
    return [(t["topic"], e["partition_index"]) for t in result.topics for e in t["partitions"]]


def open_session(manager, *tps, now=0, follower=False):
    ctx = manager.new_context(0, INITIAL_EPOCH, follower, request(*tps), [], now)
    assert isinstance(ctx, FullFetchContext)
    result = serve(ctx, now)
    assert result.session_id != INVALID_SESSION_ID
    return result.session_id


def one_shard(max_entries, **kw):
    return FetchSessionCacheShard(max_entries, EVICT_MS, rng=random.Random(1), **kw)


def create(shard, now, size, privileged=False):
    return shard.maybe_create_session(now, privileged, size, lambda: {
        ("t", i): None for i in range(size)})  # contents do not matter to the eviction rules


A, B, C = ("a", 0), ("a", 1), ("b", 0)


# ---------------------------------------------------------------- epochs and contexts


def test_next_epoch_wraps_to_one_and_final_stays_final():
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_full_fetch_with_epoch_zero_opens_a_session_answering_everything():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    ctx = m.new_context(0, INITIAL_EPOCH, False, request(A, B, C), [], now_ms=5)
    result = serve(ctx, 5, a_1={"hw": 3, "log_start": 1})
    assert result.error_code == 0 and result.session_id != INVALID_SESSION_ID
    assert sent(result) == [A, B, C]
    session = cache.get(result.session_id)
    assert session.epoch == 1 and session.creation_ms == session.last_used_ms == 5
    assert (session.partitions[B].high_watermark, session.partitions[B].local_log_start_offset) == (3, 1)
    assert cache.size == 1 and cache.total_partitions == 3


def test_epoch_minus_one_is_sessionless_and_closes_a_named_session():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    ctx = m.new_context(0, FINAL_EPOCH, False, request(A, B), [], 0)
    assert isinstance(ctx, SessionlessFetchContext) and not isinstance(ctx, FullFetchContext)
    result = serve(ctx)
    assert result.session_id == INVALID_SESSION_ID and sent(result) == [A, B] and cache.size == 0
    sid = open_session(m, A)
    result = serve(m.new_context(sid, FINAL_EPOCH, False, request(A), [], 0))
    assert result.session_id == INVALID_SESSION_ID and sent(result) == [A]
    assert cache.size == 0 and cache.total_partitions == 0


def test_epoch_zero_with_a_session_id_closes_it_and_opens_another():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    old = open_session(m, A)
    new = serve(m.new_context(old, INITIAL_EPOCH, False, request(B), [], 0)).session_id
    assert new not in (old, INVALID_SESSION_ID)
    assert cache.get(old) is None and list(cache.get(new).partitions) == [B] and cache.size == 1


def test_unknown_session_and_wrong_epoch_are_session_errors_with_no_partitions():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A)
    for session_id, epoch, code in ((sid + 1, 1, ErrorCode.fetch_session_id_not_found),
                                    (0, 1, ErrorCode.fetch_session_id_not_found),
                                    (-5, 1, ErrorCode.fetch_session_id_not_found),
                                    (INT32_MAX, 1, ErrorCode.fetch_session_id_not_found),
                                    (sid, 2, ErrorCode.invalid_fetch_session_epoch),
                                    (sid, -3, ErrorCode.invalid_fetch_session_epoch)):
        ctx = m.new_context(session_id, epoch, False, request(B), [], 0)
        assert isinstance(ctx, SessionErrorContext)
        assert list(ctx.topics()) == []
        result = serve(ctx)
        assert (result.error_code, result.session_id, result.topics) == (code, INVALID_SESSION_ID, [])
    # the errors left the session as it was
    assert cache.get(sid).epoch == 1 and list(cache.get(sid).partitions) == [A]


def test_incremental_fetch_merges_added_and_changed_partitions_and_forgets():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A, B, now=0)
    ctx = m.new_context(sid, 1, False, request(at={B: (7, 99), C: (3, 50)}), [A], now_ms=40)
    assert isinstance(ctx, IncrementalFetchContext)
    session = cache.get(sid)
    assert session.epoch == 2 and session.last_used_ms == 40 and cache.total_partitions == 2
    assert {(t, p): (d.fetch_offset, d.partition_max_bytes) for t, p, d in read(ctx)} == {B: (7, 99), C: (3, 50)}
    # the next request reuses the cached positions without naming them
    serve(ctx)
    ctx = m.new_context(sid, 2, False, {}, [], 41)
    assert {(t, p): d.fetch_offset for t, p, d in read(ctx)} == {B: 7, C: 3}


def test_incremental_response_carries_only_partitions_with_news():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A, B, C)  # all sent with hw 10, log start 0
    epoch = 1
    state = {"a_0": {}, "a_1": {}, "b_0": {}}  # what the log says now, per partition

    def incremental(**changes):
        nonlocal epoch
        for k, v in changes.items():
            state[k] = {**state[k], **v}
        result = serve(m.new_context(sid, epoch, False, {}, [], 0), **state)
        for st in state.values():
            st.pop("records", None)  # records are read once
        epoch += 1
        assert result.error_code == 0 and result.session_id == sid
        return sent(result)

    assert incremental() == []
    assert incremental(a_1={"records": b"x" * 70}) == [B]       # new records (same high watermark)
    assert incremental() == []
    assert incremental(b_0={"hw": 11}) == [C]                   # high watermark moved
    assert incremental() == []                                  # ...and was remembered
    assert incremental(a_0={"log_start": 4}) == [A]             # log start offset moved
    assert incremental(a_0={"preferred": 2}) == [A]             # a preferred read replica, every time
    assert incremental() == [A]
    assert incremental(a_0={"preferred": -1, "hw": -1, "error": 6}) == [A]   # an error, every time
    assert incremental() == [A]
    # the error is gone: sent again although the high watermark equals the last one sent before it
    assert incremental(a_0={"hw": 10, "error": 0}) == [A]
    assert incremental() == []


def test_answered_is_what_respond_would_send_and_changes_nothing():
    """The consumer fetch quota counts the response (getResponseSize): in an incremental session only the
    partitions with news, selected without updating the session."""
    m = FetchManager(FetchSessionCache(rng=random.Random(7)))
    sid = open_session(m, A, B, C)
    ctx = m.new_context(sid, 1, False, {}, [], 0)
    per_tp = {"a_1": {"records": b"x" * 70}, "b_0": {"hw": 11}}
    topics, datas = [], []
    for t, parts in ctx.topics():
        topics.append({"topic": t, "partitions": [entry(d.partition, **per_tp.get(f"{t}_{d.partition}", {}))
                                                  for d in parts]})
        datas.extend(parts)
    chosen = ctx.answered(topics, datas)
    assert [(t, e["partition_index"]) for t, es in chosen for e in es] == [B, C]
    assert ctx.answered(topics, datas) == chosen            # nothing remembered: the same selection again
    assert sent(ctx.respond(topics, datas, 0)) == [B, C]    # and respond sends exactly those
    full = m.new_context(0, INITIAL_EPOCH, False, request(A, B), [], 0)
    assert [t for t, _ in full.answered([{"topic": "a", "partitions": [entry(0), entry(1)]}], [])] == ["a"]


def test_partitions_that_returned_records_move_to_the_end_of_the_session():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A, B, C)
    serve(m.new_context(sid, 1, False, {}, [], 0), a_0={"records": b"r" * 80})
    assert list(cache.get(sid).partitions) == [B, C, A]
    ctx = m.new_context(sid, 2, False, {}, [], 0)
    assert [(t, p) for t, p, _ in read(ctx)] == [B, C, A]


def test_a_response_built_after_another_request_of_its_session_is_stale():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A)
    first = m.new_context(sid, 1, False, {}, [], 0)
    assert isinstance(m.new_context(sid, 1, False, {}, [], 0), SessionErrorContext)  # duplicate epoch
    second = m.new_context(sid, 2, False, {}, [], 0)
    result = serve(first, a_0={"records": b"z" * 80})
    assert (result.error_code, result.session_id, result.topics) == (ErrorCode.invalid_fetch_session_epoch, sid, [])
    assert sent(serve(second, a_0={"records": b"z" * 80})) == [A]


def test_forgetting_every_partition_closes_the_session_and_answers_sessionless():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A, B)
    ctx = m.new_context(sid, 1, False, {}, [A, B, ("zz", 9)], 0)
    assert isinstance(ctx, SessionlessFetchContext)
    result = serve(ctx)
    assert (result.session_id, result.topics) == (INVALID_SESSION_ID, [])
    assert cache.get(sid) is None and cache.size == 0 and cache.total_partitions == 0


def test_incremental_response_groups_consecutive_partitions_of_a_topic():
    """Session order a-0, b-0, a-1: read as three runs; with b-0 left out, a-0 and a-1 share one topic entry
    (as Kafka's FetchResponse groups the partitions it keeps)."""
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    sid = open_session(m, A, C)
    serve(m.new_context(sid, 1, False, request(B), [], 0))
    ctx = m.new_context(sid, 2, False, [], [], 0)
    assert [(t, [d.partition for d in parts]) for t, parts in ctx.topics()] == [("a", [0]), ("b", [0]), ("a", [1])]
    result = serve(ctx, a_0={"hw": 12}, a_1={"hw": 12})
    assert [(t["topic"], [e["partition_index"] for e in t["partitions"]]) for t in result.topics] == [("a", [0, 1])]


def test_kio_request_partitions_serve_as_partition_data():
    """The handler passes kio's request partitions as they are; v7 ones lack the newer fields (read as -1)."""
    from broker.protocol.codec import build, request_class

    for version in (7, 12):
        req = build(request_class(1, version), {
            "cluster_id": None, "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 100,
            "isolation_level": 0, "session_id": 0, "session_epoch": 0, "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": "a", "partitions": [{"partition": 3, "current_leader_epoch": 4, "fetch_offset": 9,
                                                      "last_fetched_epoch": 2, "log_start_offset": 1,
                                                      "partition_max_bytes": 77}]}]})
        cache = FetchSessionCache(rng=random.Random(7))
        ctx = FetchManager(cache).new_context(0, 0, False, [(t.topic, t.partitions) for t in req.topics], [], 0)
        sid = serve(ctx).session_id
        c = cache.get(sid).partitions[("a", 3)]
        assert (c.fetch_offset, c.partition_max_bytes, c.log_start_offset) == (9, 77, 1)
        assert (c.current_leader_epoch, c.last_fetched_epoch) == ((4, 2) if version == 12 else (-1, -1))


# ---------------------------------------------------------------- the cache


def test_sessions_go_to_the_shards_in_turn_with_ids_from_each_shards_range():
    cache = FetchSessionCache(max_slots=16, shards=8, rng=random.Random(3))
    m = FetchManager(cache)
    ids = [open_session(m, A) for _ in range(16)]
    rng_size = INT32_MAX // 8
    assert [sid // rng_size for sid in ids] == list(range(8)) * 2
    assert all(cache.shard_for(sid).get(sid) is not None for sid in ids)
    assert len(set(ids)) == 16 and cache.size == 16 and cache.total_partitions == 16
    # every shard holds 16 // 8 = 2: the 17th session finds its shard full of young sessions
    ctx = m.new_context(0, INITIAL_EPOCH, False, request(A), [], 1)
    result = serve(ctx)
    assert result.session_id == INVALID_SESSION_ID and sent(result) == [A] and cache.size == 16


def test_fewer_slots_than_shards_means_no_sessions_as_in_kafka():
    m = FetchManager(FetchSessionCache(max_slots=7, rng=random.Random(3)))
    result = serve(m.new_context(0, INITIAL_EPOCH, False, request(A), [], 0))
    assert result.session_id == INVALID_SESSION_ID and sent(result) == [A]


def test_shard_for_rejects_ids_no_shard_hands_out():
    cache = FetchSessionCache(shards=8)
    assert cache.shard_for(0) is None and cache.shard_for(-1) is None and cache.shard_for(INT32_MAX) is None
    assert cache.shard_for(1) is cache.shards[0]
    assert cache.shard_for(8 * (INT32_MAX // 8) - 1) is cache.shards[7]


def test_a_young_unprivileged_session_is_not_evicted_by_a_consumer():
    shard = one_shard(1)
    first = create(shard, 0, 1)
    assert create(shard, 1000, 50) == INVALID_SESSION_ID     # more partitions, but the first is young
    assert shard.get(first) is not None


def test_a_stale_session_is_evicted_least_recently_used_first():
    evicted = []
    shard = one_shard(2, on_eviction=lambda: evicted.append(1))
    s1 = create(shard, 0, 5)
    s2 = create(shard, 10, 5)
    shard.touch(shard.get(s1), 20)                              # s2 is now the least recently used
    assert create(shard, 10 + EVICT_MS, 1) == INVALID_SESSION_ID  # unused for exactly eviction_ms: not stale
    s3 = create(shard, 11 + EVICT_MS, 1)
    assert s3 != INVALID_SESSION_ID and shard.get(s2) is None and shard.get(s1) is not None
    assert evicted == [1] and shard.total_partitions == 6


def test_an_old_session_is_evicted_by_a_larger_one_but_not_by_one_of_its_size():
    shard = one_shard(2)
    small = create(shard, 0, 2)
    big = create(shard, 0, 9)
    now = EVICT_MS + 1
    for sid in (small, big):
        shard.touch(shard.get(sid), now)                        # old enough, and used just now (not stale)
    assert create(shard, now, 2) == INVALID_SESSION_ID          # ties lose: (False, 2, 0) < (False, 2, id)
    s3 = create(shard, now, 3)
    assert s3 != INVALID_SESSION_ID and shard.get(small) is None and shard.get(big) is not None
    assert shard.total_partitions == 12


def test_evictability_is_judged_at_the_last_touch():
    shard = one_shard(1)
    old = create(shard, 0, 1)
    shard.touch(shard.get(old), 100)
    # older than eviction_ms by now (not stale), but young when last touched: not evictable by size
    assert create(shard, EVICT_MS + 50, 10) == INVALID_SESSION_ID
    shard.touch(shard.get(old), EVICT_MS + 60)
    assert create(shard, EVICT_MS + 70, 10) != INVALID_SESSION_ID and shard.get(old) is None


def test_a_follower_evicts_a_young_consumer_session_but_not_a_young_follower_session():
    shard = one_shard(1)
    consumer = create(shard, 0, 100)
    follower = create(shard, 1, 1, privileged=True)
    assert follower != INVALID_SESSION_ID and shard.get(consumer) is None
    assert create(shard, 2, 100, privileged=True) == INVALID_SESSION_ID
    assert create(shard, 3, 100) == INVALID_SESSION_ID           # consumers never evict a young follower


def test_touch_recounts_partitions_and_remove_uncounts_them():
    cache = FetchSessionCache(rng=random.Random(7))
    m = FetchManager(cache)
    s1 = open_session(m, A, B)
    s2 = open_session(m, C)
    assert cache.total_partitions == 3
    m.new_context(s1, 1, False, request(C, ("d", 0)), [A], 5)
    assert cache.total_partitions == 4
    m.new_context(s2, FINAL_EPOCH, False, {}, [], 6)
    assert cache.total_partitions == 3 and cache.size == 1


@pytest.mark.parametrize("follower", [False, True])
def test_full_context_records_who_asked(follower):
    cache = FetchSessionCache(rng=random.Random(7))
    sid = open_session(FetchManager(cache), A, follower=follower)
    assert cache.get(sid).privileged is follower


def test_register_metrics_exposes_kafkas_fetch_session_cache_mbeans():
    reg = Registry(ManualClock())
    cache = FetchSessionCache(max_slots=8, rng=random.Random(7))
    register_metrics(reg, cache)

    def metric(name):
        return reg.get(MetricName.of("kafka.server", "FetchSessionCache", name))

    m = FetchManager(cache)
    open_session(m, A, B)
    open_session(m, C)
    assert metric("NumIncrementalFetchSessions").value == 2
    assert metric("NumIncrementalFetchPartitionsCached").value == 3
    for _ in range(6):
        open_session(m, A)  # one session in every shard
    assert cache.size == 8 and metric("IncrementalFetchSessionEvictionsPerSec").count == 0
    # a follower's session evicts a young consumer session of the next shard in turn
    open_session(m, A, follower=True)
    assert metric("IncrementalFetchSessionEvictionsPerSec").count == 1 and cache.evictions == 1
