"""Fetch (1) with long-poll, ListOffsets (2), OffsetForLeaderEpoch (23), DeleteRecords (21)."""

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from time import perf_counter
from typing import Any

from broker.errors import ErrorCode, KafkaError
from broker.fetch_session import FetchContext, IncrementalFetchContext, SessionlessFetchContext
from broker.metadata import INTERNAL_TOPICS
from broker.protocol import authz
from broker.protocol.api import ApiSpec, Completion, RequestContext
from broker.protocol.codec import ms
from broker.protocol.fetch_size import fetch_response_size
from broker.purgatory import Attempt
from broker.quota.replication import ALL_REPLICAS
from broker.replication.replica_manager import hw_key, leo_key
from broker.security.operations import CONSUMER, FOLLOWER

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
log = logging.getLogger(__name__)


def _new_context(ctx: RequestContext, req, follower: bool, now_ms: int) -> FetchContext:
    """Kafka's FetchManager.newContext; requests before v7 have no session fields (sessionless). kio's request
    partitions are the partition data as they are (nothing converted: this is the hot path)."""
    fetch_data = [(t.topic, t.partitions) for t in req.topics]
    if ctx.api_version < 7:
        return SessionlessFetchContext(fetch_data)
    forget = [(t.topic, p) for t in req.forgotten_topics_data for p in t.partitions]
    return ctx.broker.fetch_manager.new_context(req.session_id, req.session_epoch, follower, fetch_data, forget,
                                                now_ms)


def _aborted(plog, fetch_offset: int, lso: int) -> list[dict]:
    """A read_committed answer's aborted transactions from the fetch offset to the LSO. Kafka bounds them by the
    offset after the last batch read; entries past what was read are ignored by consumers (they drop a
    producer's batches only from an aborted transaction's first offset on, until its marker), so the region
    need not be parsed for its last offset."""
    return [{"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in plog.aborted_transactions(fetch_offset, lso)]


def _read_partitions(ctx: RequestContext, follower_id: int, max_bytes: int, denied: Mapping[str, ErrorCode],
                     committed: bool, quiet: bool, fetch: FetchContext) -> tuple[list[dict], list, int]:
    """One pass over the context's partitions: (response topics, the data each entry was read with, bytes).

    Consumers read up to the high watermark, or the Last Stable Offset with `committed` (isolation_level 1,
    KIP-98), which also lists the aborted transactions read; a follower (replica_id >= 0) reads up to the log
    end offset, and its fetch offset tells the leader how far it has replicated.

    With `quiet` (a follower's incremental session), a partition with nothing new for the follower
    (ReplicaManager.on_quiet_follower_fetch) gets no entry: an incremental answer
    leaves it out anyway, and a leader of thousands of partitions would otherwise redo every one of them on
    every fetch of a session in which one partition moved."""
    replicas = ctx.broker.replicas
    throttle = ctx.broker.replication_quotas.leader if follower_id >= 0 else None
    gathered = 0
    topics = []
    datas = []
    for topic, partitions in fetch.topics():
        parts = []
        for p in partitions:
            if (quiet and topic not in denied and replicas.on_quiet_follower_fetch(
                    topic, p.partition, follower_id, p.fetch_offset, p.current_leader_epoch, p.high_watermark,
                    p.local_log_start_offset)):
                continue
            entry = {"partition_index": p.partition, "error_code": ErrorCode.none, "high_watermark": -1,
                     "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                     "preferred_read_replica": -1, "records": b""}
            try:
                authz.raise_if_denied(denied, topic)
                part = replicas.leader_partition(topic, p.partition, getattr(p, "current_leader_epoch", -1))
                plog = part.log
                if follower_id >= 0:
                    replicas.on_follower_fetch(part, follower_id, p.fetch_offset)
                hw = plog.high_watermark
                lso = plog.last_stable_offset
                entry.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=plog.log_start_offset)
                bound = lso if committed else hw
                # A caught-up consumer has nothing to read (read_region would answer None, after taking the lock).
                caught_up = follower_id < 0 and p.fetch_offset == bound and plog.log_start_offset <= bound
                budget = min(p.partition_max_bytes, max_bytes - gathered)
                # KIP-73: a throttled replica out of the ISR gets nothing while the leader's side is over its rate
                # (ReplicaManager.shouldLeaderThrottle; in-sync followers are never held back).
                held = (throttle is not None and follower_id not in part.state.isr
                        and throttle.is_throttled(topic, p.partition) and throttle.is_quota_exceeded())
                if not caught_up and not held and (budget > 0 or gathered == 0):
                    records = plog.read_region(p.fetch_offset, max(budget, 1),
                                               max_offset=None if follower_id >= 0 else bound)
                    # KIP-74: only the first non-empty partition may exceed the budget.
                    if records and (len(records) <= budget or gathered == 0):
                        entry["records"] = records
                        gathered += len(records)
                        if committed and lso > p.fetch_offset:
                            entry["aborted_transactions"] = _aborted(plog, p.fetch_offset, lso)
            except KafkaError as e:
                entry["error_code"] = e.code
            parts.append(entry)
            datas.append(p)
        if parts or not quiet:
            topics.append({"topic": topic, "partitions": parts})
    return topics, datas, gathered


class _Moved(FetchContext):
    """The partitions of a follower's session fetch whose purgatory keys (leo_key) woke it, in session order."""

    def __init__(self, fetch: FetchContext, keys: Iterable) -> None:
        wanted = {(k[1], k[2]) for k in keys}
        self._topics = [(topic, chosen) for topic, parts in fetch.topics()
                        if (chosen := [p for p in parts if (topic, p.partition) in wanted])]

    def topics(self) -> list:
        return self._topics


def _left_out(fetch: FetchContext, topics: list[dict]) -> Counter[str]:
    """Per topic, the session partitions read without an entry in `topics` (nothing new for the follower)."""
    left: Counter[str] = Counter()
    for topic, parts in fetch.topics():
        left[topic] += sum(1 for _ in parts)
    for t in topics:
        left[t["topic"]] -= len(t["partitions"])
    return +left


def _answer(ctx: RequestContext, fetch: FetchContext, follower_id: int, session_follower: bool, now_ms: int,
            topics: list[dict], datas: list) -> dict:
    """The response body for what was read, with the fetch session updated and the partitions counted."""
    follower = follower_id >= 0
    throttle = 0
    quotas = ctx.broker.quotas
    if follower:
        _record_replication(ctx, topics)
    elif quotas.enabled:
        # Kafka counts the response's size (FetchContext.getResponseSize): in an incremental session only the
        # partitions it would send, their records as their slices of the reads.
        throttle = quotas.fetch_bandwidth(ctx, fetch_response_size(ctx.api_version, fetch.answered(topics, datas)))
    metrics = ctx.broker.metrics
    if metrics is not None:
        # Every partition read counts (ReplicaManager does), also those an incremental response leaves out; bytes
        # out only as sent (none when throttled).
        metrics.fetched(_without_records(topics) if throttle else topics, follower_id)
        if session_follower:
            metrics.fetched_unchanged(_left_out(fetch, topics))
    # Over the consumer_byte_rate: an empty answer, the session left as it was (Kafka's getThrottledResponse).
    result = fetch.throttled() if throttle else fetch.respond(topics, datas, now_ms)
    return {"throttle_time": throttle, "error_code": result.error_code, "session_id": result.session_id,
            "responses": result.topics}


def _record_replication(ctx: RequestContext, topics: list[dict]) -> None:
    """Count the throttled partitions of a follower's answer against the leader's replication rate, in sync or not,
    as Kafka does on every follower Fetch (the size of a response holding only them: never nothing)."""
    quota = ctx.broker.replication_quotas.leader
    throttled = []
    for t in topics:
        chosen = quota.throttled(t["topic"])
        if chosen:
            everything = chosen is ALL_REPLICAS
            if parts := [p for p in t["partitions"] if everything or p["partition_index"] in chosen]:
                throttled.append((t["topic"], parts))
    quota.record(fetch_response_size(ctx.api_version, throttled))


def _without_records(topics: list[dict]) -> list[dict]:
    return [{"topic": t["topic"], "partitions": [{**p, "records": b""} for p in t["partitions"]]} for t in topics]


def _satisfied(topics: list[dict], gathered: int, min_bytes: int) -> bool:
    return gathered >= min_bytes or any(p["error_code"] for t in topics for p in t["partitions"])


class _DelayedFetch:
    """A parked Fetch completed inside the purgatory's notify (Kafka's DelayedFetch.tryComplete and onComplete, in
    the thread that appended or moved the high watermark). Made on the first park: most fetches never park."""

    __slots__ = ("_ctx", "_fetch", "_read", "_answer", "_min_bytes", "_moved", "completion", "_parked")

    def __init__(self, ctx: RequestContext, fetch: FetchContext, read: Callable, answer: Callable, min_bytes: int,
                 session_follower: bool) -> None:
        self._ctx, self._fetch, self._read, self._answer = ctx, fetch, read, answer
        self._min_bytes = min_bytes
        # A follower's session fetch reads only the partitions whose keys were notified since it parked (keys in
        # the order first notified: a dict, however often a partition moves while the fetch is short of min_bytes).
        self._moved: dict | None = {} if session_follower else None
        self.completion = Completion(ctx)
        self._parked = 0.0   # perf_counter() when the handler last parked

    def park(self, at: float) -> None:
        """The handler parks (again) at perf_counter() `at`: what moved before is read already."""
        self._parked = at
        if self._moved:
            self._moved.clear()

    def moved(self) -> list:
        """The keys notified since it parked (a follower's session fetch; else none kept)."""
        return list(self._moved or ())

    def __call__(self, moved: list) -> Attempt:
        """Read what the `moved` keys name and answer now if that satisfies the fetch; short of its min_bytes it
        stays watched. A failed read is left to the handler, which resumes and reads again."""
        try:
            if self._moved is None:
                view = self._fetch
            else:
                self._moved.update(dict.fromkeys(moved))
                view = _Moved(self._fetch, self._moved)
            topics, datas, gathered = self._read(view)
        except Exception:   # never into the notifier (a Produce's append)
            log.exception("completing a fetch in the purgatory failed")
            return Attempt.RESUME
        if not _satisfied(topics, gathered, self._min_bytes):
            return Attempt.WATCH
        self._ctx.remote_s += perf_counter() - self._parked
        self.completion.give(lambda: self._answer(topics, datas))
        return Attempt.COMPLETED


async def handle_fetch(ctx: RequestContext, req) -> dict | None:
    max_bytes = getattr(req, "max_bytes", 0x7FFFFFFF)
    if ctx.broker.quotas.enabled and getattr(req, "replica_id", -1) < 0:
        max_bytes = ctx.broker.quotas.fetch_max_bytes(ctx, max_bytes)
    deadline = ctx.broker.clock.monotonic() + ms(req.max_wait) / 1000
    follower_id = getattr(req, "replica_id", -1)
    follower = follower_id >= 0
    now_ms = ctx.broker.clock.now_ms()  # the session's time of use (Kafka takes it once per request too)
    fetch = _new_context(ctx, req, follower, now_ms)
    denied = authz.resource_errors(ctx, 1, authz.TOPIC, (t for t, _ in fetch.topics()),
                                   {FOLLOWER if follower else CONSUMER})
    wake_on = leo_key if follower else hw_key
    keys = [wake_on(topic, p.partition) for topic, parts in fetch.topics() for p in parts]
    committed = not follower and getattr(req, "isolation_level", 0) == 1
    session_follower = follower and isinstance(fetch, IncrementalFetchContext)
    # Positional, so each call costs what a direct one does.
    read = partial(_read_partitions, ctx, follower_id, max_bytes, denied, committed, session_follower)
    answer = partial(_answer, ctx, fetch, follower_id, session_follower, now_ms)
    view: FetchContext = fetch
    delayed: _DelayedFetch | None = None
    while True:
        topics, datas, gathered = read(view)
        remaining = deadline - ctx.broker.clock.monotonic()
        if _satisfied(topics, gathered, req.min_bytes) or remaining <= 0 or not keys:
            break
        if delayed is None and ctx.send_now is not None:
            delayed = _DelayedFetch(ctx, fetch, read, answer, req.min_bytes, session_follower)
        parked = perf_counter()
        if delayed is not None:
            delayed.park(parked)
        moved: list | None = [] if session_follower else None
        woken = await ctx.broker.purgatory.wait(keys, remaining, woken=moved, complete=delayed)
        if delayed is not None and delayed.completion.settled():
            return None
        ctx.remote_s += perf_counter() - parked
        if not woken:
            topics, datas, gathered = read(fetch)
            break
        if delayed is not None and moved is not None:
            moved += delayed.moved()   # notified while it stayed watched, short of min_bytes
        if moved:
            # Woken by appends: re-read those partitions only. The others were read (and found quiet) when the
            # fetch came in; news on them since, such as a high watermark moved by the other followers, goes
            # out with this follower's next fetch, which follows at once.
            view = _Moved(fetch, moved)
    return answer(topics, datas)


def _per_partition(topics, topic_key: str, index_key: str, defaults: dict,
                   fill: Callable[[str, Any, dict], None]) -> list[dict]:
    """Response topics for a request that lists (topic, partitions): `fill(topic, partition, entry)` sets an
    entry's fields; a KafkaError becomes that partition's error code."""
    out = []
    for t in topics:
        name = getattr(t, topic_key)
        parts = []
        for p in t.partitions:
            entry = {index_key: getattr(p, index_key), "error_code": ErrorCode.none, **defaults}
            try:
                fill(name, p, entry)
            except KafkaError as e:
                entry["error_code"] = e.code
            parts.append(entry)
        out.append({topic_key: name, "partitions": parts})
    return out


async def handle_list_offsets(ctx: RequestContext, req) -> dict:
    committed = getattr(req, "isolation_level", 0) == 1

    def fill(topic: str, p, entry: dict) -> None:
        part = ctx.broker.replicas.leader_partition(topic, p.partition_index, getattr(p, "current_leader_epoch", -1))
        plog = part.log
        entry["leader_epoch"] = part.state.leader_epoch
        ts = p.timestamp
        if ts == EARLIEST:
            entry["offset"] = plog.log_start_offset
        elif ts == LATEST:
            # Replicas (replica_id >= 0) see the log end offset; clients see the high watermark, or the Last
            # Stable Offset when read_committed (isolation_level 1, KIP-98).
            entry["offset"] = plog.log_end_offset if req.replica_id >= 0 else \
                plog.last_stable_offset if committed else plog.high_watermark
        elif ts < 0 and ts != MAX_TIMESTAMP:
            raise KafkaError(ErrorCode.invalid_request, f"unsupported timestamp {ts}")
        else:
            found = plog.max_timestamp_offset() if ts == MAX_TIMESTAMP else plog.offset_for_timestamp(ts)
            # read_committed finds nothing at or past the LSO (Kafka's fetchOffsetForTimestamp).
            if found and not (committed and found[0] >= plog.last_stable_offset):
                entry["offset"], entry["timestamp"] = found

    denied = authz.resource_errors(ctx, 2, authz.TOPIC, (t.name for t in req.topics))
    return {"throttle_time": 0, "topics": _per_partition(req.topics, "name", "partition_index",
                                                         {"timestamp": -1, "offset": -1, "leader_epoch": -1},
                                                         authz.guarded(denied, fill))}


async def handle_offset_for_leader_epoch(ctx: RequestContext, req) -> dict:
    def fill(topic: str, p, entry: dict) -> None:
        part = ctx.broker.replicas.leader_partition(topic, p.partition, p.current_leader_epoch)
        entry["leader_epoch"], entry["end_offset"] = part.log.end_offset_for_epoch(p.leader_epoch)

    names = [t.topic for t in req.topics]
    condition = FOLLOWER if getattr(req, "replica_id", -1) >= 0 else CONSUMER
    denied = dict.fromkeys(names, code) if (code := authz.request_error(ctx, 23, {condition})) else \
        authz.resource_errors(ctx, 23, authz.TOPIC, names, {condition})
    return {"throttle_time": 0, "topics": _per_partition(req.topics, "topic", "partition",
                                                         {"leader_epoch": -1, "end_offset": -1},
                                                         authz.guarded(denied, fill))}


async def handle_delete_records(ctx: RequestContext, req) -> dict:
    def fill(topic: str, p, entry: dict) -> None:
        if topic in INTERNAL_TOPICS:   # as Kafka's ReplicaManager.deleteRecordsOnLocalLog: offsets, txn states
            raise KafkaError(ErrorCode.invalid_topic_exception, f"Cannot delete records of internal topic {topic}")
        plog = ctx.broker.replicas.leader_log(topic, p.partition_index)
        entry["low_watermark"] = plog.delete_records_before(plog.high_watermark if p.offset == -1 else p.offset)

    denied = authz.resource_errors(ctx, 21, authz.TOPIC, (t.name for t in req.topics))
    return {"throttle_time": 0, "topics": _per_partition(req.topics, "name", "partition_index",
                                                         {"low_watermark": -1}, authz.guarded(denied, fill))}


APIS = (
    ApiSpec(1, 4, 12, handle_fetch),  # capped at 12: v13+ identifies topics by id (KIP-516)
    ApiSpec(2, 1, 7, handle_list_offsets),
    ApiSpec(23, 2, 4, handle_offset_for_leader_epoch),
    ApiSpec(21, 0, 2, handle_delete_records),
)
