"""Incremental fetch sessions (KIP-227), as Kafka 3.9's broker keeps them.

A client that opens a session (session id 0, epoch 0) gets an id back; afterwards it names only the partitions
whose fetch position changed (and those to forget), and the broker answers only the partitions that have
something new: records, a high watermark or log start offset that moved, an error. The broker remembers the rest
in a :class:`FetchSession` of :class:`CachedPartition` entries.

Kafka's pieces under Kafka's names: :class:`FetchSessionCache` (8 shards, as KafkaBroker.NumFetchSessionCacheShards;
``max.incremental.fetch.session.cache.slots`` split evenly between them, so fewer than 8 slots means no sessions,
as in Kafka), :class:`FetchSessionCacheShard` with its eviction rules, :class:`FetchManager` whose
:meth:`FetchManager.new_context` picks the :class:`FetchContext` for a request. Pure: no I/O, the time in
milliseconds is passed in. Only name-based sessions exist (Fetch v7-v12; topic ids begin at v13).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0       # a full fetch that asks for a new session
FINAL_EPOCH = -1        # a full fetch without a session (and the epoch of every pre-v7 request)
INT32_MAX = 2**31 - 1
NUM_SHARDS = 8          # KafkaBroker.NumFetchSessionCacheShards
# KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: a fixed constant in Kafka 3.9, not a config key.
MIN_EVICTION_MS = 120_000
DEFAULT_CACHE_SLOTS = 1000  # max.incremental.fetch.session.cache.slots

TopicPartition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch that follows `epoch` (FetchMetadata.nextEpoch): FINAL stays FINAL, INT32_MAX wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass(slots=True)
class PartitionData:
    """One partition of a Fetch request (FetchRequest.PartitionData) under kio's attribute names, so that kio's
    request partitions serve as they are. `log_start_offset` is the fetcher's."""

    partition: int
    fetch_offset: int
    log_start_offset: int = -1
    partition_max_bytes: int = 0
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


# A request's partitions: (topic, partitions) in request order; a partition is anything with PartitionData's
# attributes (kio's request partitions; those of versions without an attribute read as -1).
FetchData = Iterable[tuple[str, Iterable[Any]]]


class CachedPartition:
    """A partition remembered by a session: the fetcher's last request parameters (PartitionData's attributes,
    so the handler reads either) and what was last sent (high watermark, local log start offset)."""

    __slots__ = ("topic", "partition", "fetch_offset", "log_start_offset", "partition_max_bytes",
                 "current_leader_epoch", "last_fetched_epoch", "high_watermark", "local_log_start_offset")

    def __init__(self, topic: str, data: Any, high_watermark: int = -1, local_log_start_offset: int = -1) -> None:
        self.topic = topic
        self.partition = data.partition
        self.update_request_params(data)
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset

    def update_request_params(self, data: Any) -> None:
        self.fetch_offset = data.fetch_offset
        self.log_start_offset = getattr(data, "log_start_offset", -1)
        self.partition_max_bytes = data.partition_max_bytes
        self.current_leader_epoch = getattr(data, "current_leader_epoch", -1)
        self.last_fetched_epoch = getattr(data, "last_fetched_epoch", -1)

    def maybe_update_response_data(self, entry: Mapping[str, Any], update: bool) -> bool:
        """Whether an incremental response must carry this partition (response `entry`, kio field names); with
        `update`, remember what is sent. As Kafka 3.9: records, a changed high watermark or log start offset, a
        preferred read replica, or an error. (The last stable offset is not compared: Kafka does not either.)"""
        must = False
        records = entry.get("records")
        if records is not None and len(records) > 0:
            must = True
        hw = entry["high_watermark"]
        if hw != self.high_watermark:
            must = True
            if update:
                self.high_watermark = hw
        lso = entry["log_start_offset"]
        if lso != self.local_log_start_offset:
            must = True
            if update:
                self.local_log_start_offset = lso
        if entry.get("preferred_read_replica", -1) >= 0:
            must = True
        if entry["error_code"]:
            # Forget the high watermark, so the partition is sent again once the error is gone.
            if update:
                self.high_watermark = -1
            must = True
        return must

    def __repr__(self) -> str:
        return (f"CachedPartition({self.topic}-{self.partition}, fetch_offset={self.fetch_offset}, "
                f"partition_max_bytes={self.partition_max_bytes}, high_watermark={self.high_watermark}, "
                f"local_log_start_offset={self.local_log_start_offset})")


class FetchSession:
    """One incremental fetch session. `partitions` keeps insertion order; a partition that returned records
    moves to the end, so a response size limit serves the partitions in turn."""

    __slots__ = ("id", "privileged", "partitions", "creation_ms", "last_used_ms", "epoch", "cached_size",
                 "by_all", "by_privileged")

    def __init__(self, session_id: int, privileged: bool, partitions: dict[TopicPartition, CachedPartition],
                 creation_ms: int, epoch: int) -> None:
        self.id = session_id
        self.privileged = privileged  # created by a follower
        self.partitions = partitions
        self.creation_ms = creation_ms
        self.last_used_ms = creation_ms
        self.epoch = epoch
        self.cached_size = -1         # size as the cache last counted it; -1: not in the cache
        self.by_all = False           # evictable by any new session (judged at the last touch)
        self.by_privileged = False    # evictable by a new privileged session

    @property
    def evictable_key(self) -> tuple[bool, int, int]:
        """Eviction order: unprivileged before privileged, then fewer partitions, then lower id."""
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: FetchData, to_forget: Iterable[TopicPartition]) -> tuple[list, list, list]:
        """Apply an incremental request: (added, updated, removed) partitions."""
        added, updated, removed = [], [], []
        parts = self.partitions
        for topic, datas in fetch_data:
            for data in datas:
                tp = (topic, data.partition)
                cached = parts.get(tp)
                if cached is None:
                    parts[tp] = CachedPartition(topic, data)
                    added.append(tp)
                else:
                    cached.update_request_params(data)
                    updated.append(tp)
        for tp in to_forget:
            if parts.pop(tp, None) is not None:
                removed.append(tp)
        return added, updated, removed

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
                f"creation_ms={self.creation_ms}, last_used_ms={self.last_used_ms}, epoch={self.epoch})")


class FetchSessionCacheShard:
    """Sessions of one id range, at most `max_entries` of them.

    A new session A may take the place of an existing B when the shard is full if (tried in this order):
    B is stale (unused for more than `eviction_ms`: the least recently used one goes), or A ranks above the
    lowest-ranked evictable B by (privileged, size, id). Evictable means, judged when B was last used: by any
    session once B is older than `eviction_ms`; by a privileged (follower) session also when B is unprivileged.
    The scans are linear in the shard's sessions and happen only when the shard is full."""

    def __init__(self, max_entries: int, eviction_ms: int = MIN_EVICTION_MS, session_id_range: int = INT32_MAX,
                 shard_num: int = 0, rng: random.Random | None = None,
                 on_eviction: Callable[[], None] | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.session_id_range = session_id_range
        self.shard_num = shard_num
        self._rng = rng or random.Random()
        self.on_eviction = on_eviction
        self.sessions: dict[int, FetchSession] = {}
        self.total_partitions = 0

    @property
    def size(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def new_session_id(self) -> int:
        """A random unused id of this shard's range (never 0); bounded, the range is far larger than the shard."""
        lo = max(1, self.shard_num * self.session_id_range)
        hi = (self.shard_num + 1) * self.session_id_range
        for _ in range(1000):
            sid = self._rng.randrange(lo, hi)
            if sid not in self.sessions:
                return sid
        raise RuntimeError("no free fetch session id found in 1000 draws")

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int,
                             create: Callable[[], dict[TopicPartition, CachedPartition]]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the shard is full and nothing may be evicted."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, (privileged, size, 0), now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, create(), now_ms, next_epoch(INITIAL_EPOCH))
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _try_evict(self, privileged: bool, key: tuple[bool, int, int], now_ms: int) -> bool:
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            victim = lru
        else:
            candidates = [s for s in self.sessions.values() if (s.by_privileged if privileged else s.by_all)]
            if not candidates:
                return False
            victim = min(candidates, key=lambda s: s.evictable_key)
            if key < victim.evictable_key:
                return False
        self.remove(victim.id)
        if self.on_eviction is not None:
            self.on_eviction()
        return True

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.total_partitions -= session.cached_size
            session.cached_size = -1
            session.by_all = session.by_privileged = False
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark `session` used at `now_ms`: recount its partitions and judge its evictability."""
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self.total_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.total_partitions += session.cached_size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.by_all = old
        session.by_privileged = old or not session.privileged


class FetchSessionCache:
    """The broker's sessions: `shards` shards of ``max_slots // shards`` sessions each, new sessions handed to
    the shards in turn, a session's shard found from its id. Gauges read :attr:`size` and
    :attr:`total_partitions`; `on_eviction` is called per eviction (IncrementalFetchSessionEvictionsPerSec)."""

    def __init__(self, max_slots: int = DEFAULT_CACHE_SLOTS, eviction_ms: int = MIN_EVICTION_MS,
                 shards: int = NUM_SHARDS, rng: random.Random | None = None) -> None:
        self.session_id_range = INT32_MAX // shards
        rng = rng or random.Random()
        self.shards = [FetchSessionCacheShard(max_slots // shards, eviction_ms, self.session_id_range, n, rng,
                                              self._evicted) for n in range(shards)]
        self._next_shard = 0
        self.evictions = 0
        self.on_eviction: Callable[[], None] | None = None

    def _evicted(self) -> None:
        self.evictions += 1
        if self.on_eviction is not None:
            self.on_eviction()

    @property
    def size(self) -> int:
        """NumIncrementalFetchSessions."""
        return sum(s.size for s in self.shards)

    @property
    def total_partitions(self) -> int:
        """NumIncrementalFetchPartitionsCached."""
        return sum(s.total_partitions for s in self.shards)

    def shard_for(self, session_id: int) -> FetchSessionCacheShard | None:
        """The shard that owns `session_id`; None for an id no shard hands out (negative, or past the last
        range: Kafka would index out of bounds there and answer UNKNOWN_SERVER_ERROR)."""
        n = session_id // self.session_id_range if session_id > 0 else -1
        return self.shards[n] if 0 <= n < len(self.shards) else None

    def next_shard(self) -> FetchSessionCacheShard:
        shard = self.shards[self._next_shard % len(self.shards)]
        self._next_shard += 1
        return shard

    def get(self, session_id: int) -> FetchSession | None:
        shard = self.shard_for(session_id)
        return shard.get(session_id) if shard is not None else None

    def remove(self, session_id: int) -> FetchSession | None:
        shard = self.shard_for(session_id)
        return shard.remove(session_id) if shard is not None else None


# ---------------------------------------------------------------- contexts


@dataclass(slots=True)
class FetchResult:
    """The top level of a Fetch response: error, session id, and the topics to send (kio field names)."""

    error_code: int
    session_id: int
    topics: list[dict]


class FetchContext:
    """What one Fetch request reads (:meth:`topics`) and how the reads become its response (:meth:`respond`).

    The handler reads the partitions in the order given and hands back the response topics it built (kio field
    names, one entry per partition read) with `datas`, the partition data each entry was read with, in the
    same order."""

    def topics(self) -> FetchData:
        return ()

    def respond(self, topics: list[dict], datas: list[Any], now_ms: int) -> FetchResult:
        return FetchResult(ErrorCode.none, INVALID_SESSION_ID, topics)

    def answered(self, topics: list[dict], datas: list[Any]) -> list[tuple[str, list[dict]]]:
        """The partitions `respond` would send, the session left as it is (FetchContext.getResponseSize's
        selection, which the consumer fetch quota counts): all of them but in an incremental session."""
        return [(t["topic"], t["partitions"]) for t in topics]

    def throttled(self) -> FetchResult:
        """The answer to a fetch over its client quota (getThrottledResponse): nothing, no session made."""
        return FetchResult(ErrorCode.none, INVALID_SESSION_ID, [])


class SessionErrorContext(FetchContext):
    """A session error: nothing is read (the request's partitions are unknown), the error is the answer."""

    def __init__(self, error: int) -> None:
        self.error = error

    def respond(self, topics: list[dict], datas: list[Any], now_ms: int) -> FetchResult:
        return FetchResult(self.error, INVALID_SESSION_ID, [])

    def answered(self, topics: list[dict], datas: list[Any]) -> list[tuple[str, list[dict]]]:
        return []

    def throttled(self) -> FetchResult:
        return self.respond([], [], 0)


class SessionlessFetchContext(FetchContext):
    """A full fetch that keeps no session (epoch -1, every pre-v7 request, or an emptied session): the request's
    partitions are read as they are and all answered."""

    def __init__(self, fetch_data: FetchData) -> None:
        self.fetch_data = fetch_data

    def topics(self) -> FetchData:
        return self.fetch_data


class FullFetchContext(SessionlessFetchContext):
    """A full fetch that asks for a session: the response carries the new session's id, or 0 when the cache
    has no room for it."""

    def __init__(self, cache: FetchSessionCache, fetch_data: FetchData, is_follower: bool) -> None:
        super().__init__(fetch_data)
        self.cache = cache
        self.is_follower = is_follower

    def respond(self, topics: list[dict], datas: list[Any], now_ms: int) -> FetchResult:
        def create() -> dict[TopicPartition, CachedPartition]:
            out: dict[TopicPartition, CachedPartition] = {}
            i = 0
            for t in topics:
                topic = t["topic"]
                for e in t["partitions"]:
                    d = datas[i]
                    i += 1
                    out[(topic, d.partition)] = CachedPartition(topic, d, e["high_watermark"], e["log_start_offset"])
            return out

        sid = self.cache.next_shard().maybe_create_session(now_ms, self.is_follower, len(datas), create)
        return FetchResult(ErrorCode.none, sid, topics)


class IncrementalFetchContext(FetchContext):
    """An incremental fetch: reads every partition of the session, answers only those with news."""

    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.request_epoch = request_epoch
        self._topics: list[tuple[str, list[CachedPartition]]] | None = None

    def topics(self) -> FetchData:
        """The session's partitions in its order, consecutive partitions of a topic together (taken once: a
        long poll reads them again, and only this request's respond() reorders the session)."""
        if self._topics is None:
            self._topics = self._group()
        return self._topics

    def _group(self) -> list[tuple[str, list[CachedPartition]]]:
        out: list[tuple[str, list[CachedPartition]]] = []
        last = None
        for c in self.session.partitions.values():
            if c.topic != last:
                out.append((c.topic, []))
                last = c.topic
            out[-1][1].append(c)
        return out

    def answered(self, topics: list[dict], datas: list[Any]) -> list[tuple[str, list[dict]]]:
        """Only the partitions with news (maybe_update_response_data without the update); none for a stale
        epoch."""
        if self.session.epoch != next_epoch(self.request_epoch):
            return []
        out: list[tuple[str, list[dict]]] = []
        i = 0
        for t in topics:
            chosen = []
            for entry in t["partitions"]:
                if datas[i].maybe_update_response_data(entry, False):
                    chosen.append(entry)
                i += 1
            if chosen:
                out.append((t["topic"], chosen))
        return out

    def throttled(self) -> FetchResult:
        """Nothing, the session unchanged: its partitions are answered by a later fetch."""
        if self.session.epoch != next_epoch(self.request_epoch):
            return FetchResult(ErrorCode.invalid_fetch_session_epoch, self.session.id, [])
        return FetchResult(ErrorCode.none, self.session.id, [])

    def respond(self, topics: list[dict], datas: list[Any], now_ms: int) -> FetchResult:
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            # Another request of this session came in between (a duplicate): this one is stale.
            return FetchResult(ErrorCode.invalid_fetch_session_epoch, session.id, [])
        parts = session.partitions
        kept: list[dict] = []
        last = None
        i = 0
        for t in topics:
            topic = t["topic"]
            for entry in t["partitions"]:
                cached = datas[i]
                i += 1
                records = entry["records"]
                if (not records and entry["high_watermark"] == cached.high_watermark and not entry["error_code"]
                        and entry["log_start_offset"] == cached.local_log_start_offset
                        and entry["preferred_read_replica"] < 0):
                    continue  # the common case, nothing new: maybe_update_response_data's answer, inlined
                if not cached.maybe_update_response_data(entry, True):
                    continue
                if topic != last:  # regroup: leaving partitions out may join two runs of one topic
                    kept.append({"topic": topic, "partitions": []})
                    last = topic
                kept[-1]["partitions"].append(entry)
                if records is not None and len(records) > 0:
                    tp = (topic, cached.partition)
                    if parts.pop(tp, None) is not None:  # to the end: served in turn under a size limit
                        parts[tp] = cached
        return FetchResult(ErrorCode.none, session.id, kept)


class FetchManager:
    """Picks the context of each Fetch request (Kafka's FetchManager.newContext)."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(self, session_id: int, epoch: int, is_follower: bool, fetch_data: FetchData,
                    to_forget: Iterable[TopicPartition], now_ms: int) -> FetchContext:
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)  # a full fetch closes the session it names
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.cache, fetch_data, is_follower)
        shard = self.cache.shard_for(session_id)
        session = shard.get(session_id) if shard is not None else None
        if shard is None or session is None:
            return SessionErrorContext(ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.invalid_fetch_session_epoch)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            shard.remove(session_id)
            return SessionlessFetchContext(fetch_data)
        shard.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, epoch)


def register_metrics(registry: Any, cache: FetchSessionCache) -> None:
    """Kafka's ``kafka.server:type=FetchSessionCache`` MBeans on a metric registry (exporter.registry):
    the two gauges read the cache at scrape; the meter is marked per eviction."""
    fsc = ("kafka.server", "FetchSessionCache")
    registry.gauge(*fsc, "NumIncrementalFetchSessions", lambda: cache.size)
    registry.gauge(*fsc, "NumIncrementalFetchPartitionsCached", lambda: cache.total_partitions)
    cache.on_eviction = registry.meter(*fsc, "IncrementalFetchSessionEvictionsPerSec").mark
