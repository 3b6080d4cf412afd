"""`MetadataCache`: every cluster member's in-memory view of the cluster state kept in ZooKeeper.

Kafka keeps this twice in ZooKeeper mode (the controller's ControllerContext, every broker's MetadataCache fed by
UpdateMetadata requests); here each broker watches ZooKeeper itself, so one cache serves both: the ZooKeeper
watches (watches.py) and this broker's own conditional writes (the store's topic admin and ISR updates, the
controller's leader elections) put into it, and the MetadataStore reads, the controller's decisions and the
metrics read from it.

Threads: writers are kazoo's callback thread, the controller thread and the event loop. Changes this broker's
`ClusterListener` must hear of are queued while the lock is held and applied on the event loop a slice per turn
(`_drain`), so they arrive in cache-update order without holding up the loop's sockets. Rule: no ZooKeeper I/O
while holding `_lock` (the cache never does any).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from broker.controller.state import ClusterListener, PartitionState
from broker.controller.zk_paths import TopicAssignment
from broker.metadata import BrokerInfo, Reassignments, TopicInfo

log = logging.getLogger(__name__)

DRAIN_SLICE = 100  # queued listener calls per turn of the event loop (MetadataCache._drain)

# Called (outside the lock) with (topic, topic id, partitions) when partitions first appear under a topic id.
NewPartitionsHook = Callable[[str, uuid.UUID, list[int]], None]


class MetadataCache:
    """Brokers, topics (assignment, configs), partition states, and the controller's inputs."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._brokers: dict[int, BrokerInfo] = {}
        self._czxids: dict[int, int] = {}  # registration znode czxid: tells a bounced broker
        self._assign: dict[str, TopicAssignment] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._group_configs: dict[str, dict[str, str]] = {}   # /config/groups: per-group overrides
        self._topics: dict[str, TopicInfo] = {}
        self._raw: dict[tuple[str, int], PartitionState] = {}
        self._delivered: dict[tuple[str, int], PartitionState] = {}
        self._known: dict[tuple[str, int], uuid.UUID] = {}  # partitions seen, by the topic id they belong to
        self._generations: dict[str, int] = {}  # topic -> generation (see topic_generation)
        self._generation = 0
        self._pending_deletes: frozenset[str] = frozenset()
        self._shutdown_requests: frozenset[int] = frozenset()
        # Replicas a live broker reported offline (a failed log dir; /admin/offline_replicas), by partition.
        self._offline_replicas: dict[int, frozenset[tuple[str, int]]] = {}
        self.controller_id = -1
        self._listener: ClusterListener | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._new_partitions: NewPartitionsHook | None = None
        self._pending: deque[tuple[Callable[..., None], tuple]] = deque()  # listener calls for the loop, in order
        self._drain_scheduled = False

    def attach(self, listener: ClusterListener, loop: asyncio.AbstractEventLoop | None) -> None:
        """Deliver changes to `listener` on `loop` from now on (no loop: nothing is delivered)."""
        with self._lock:
            self._listener = listener
            self._loop = loop
            self._changed = asyncio.Event() if loop is not None else None
            self._drain_scheduled = False

    def on_new_partitions(self, hook: NewPartitionsHook) -> None:
        """Whoever watches partition state znodes learns here of the partitions to watch."""
        self._new_partitions = hook

    # ------------------------------------------------------------ delivery to the event loop

    def _deliver(self, fn: Callable[..., None] | None, *args: object) -> None:
        """Called with `_lock` held, so deliveries are queued in cache-update order. One wake-up of the loop per
        burst: the queue is drained DRAIN_SLICE calls per turn of the loop (`_drain`)."""
        if self._loop is None:
            return
        if fn is not None:
            self._pending.append((fn, args))
        if self._drain_scheduled:
            return  # the drain wakes `wait_until` after its slice
        self._drain_scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            pass  # loop closed

    def call_in_order(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
        """Run `fn(*args)` on `loop` after every delivery queued so far (from any thread): the answer to this
        broker's own ISR write must not overtake an older state of the same partition still in the queue."""
        with self._lock:
            if self._loop is loop:
                self._deliver(fn, *args)
                return
        loop.call_soon_threadsafe(fn, *args)

    def _drain(self) -> None:
        """On the loop: up to DRAIN_SLICE queued calls, then the next slice on the next turn. A failover delivers
        a state per partition to every broker (10,000 at 10,000 partitions) faster than the listener applies
        them; one loop callback each ran them all in the turn they were queued for, and every request (Metadata,
        the followers' fetches) needs several turns, so each waited behind the whole backlog, seconds at 10,000
        (issue 20). Between slices the loop reads its sockets."""
        for _ in range(DRAIN_SLICE):
            try:
                fn, args = self._pending.popleft()
            except IndexError:
                break
            try:
                fn(*args)
            except Exception:
                log.exception("cluster listener failed")
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()
        with self._lock:
            if not self._pending:
                self._drain_scheduled = False
                return
            loop = self._loop
        if loop is not None:
            loop.call_soon(self._drain)

    def _poke(self) -> None:
        """Wake `wait_until` without a listener call."""
        self._deliver(None)

    def _bump(self, t: str) -> None:
        """With `_lock` held: the topic's assignment or a partition state changed."""
        self._generation += 1
        self._generations[t] = self._generation

    def _emit_state(self, t: str, p: int) -> None:
        s = self._compose(t, p)
        if s is None or self._delivered.get((t, p)) == s:
            return
        self._delivered[(t, p)] = s
        if self._listener is not None:
            self._deliver(self._listener.on_partition_state, t, p, s)
        else:
            self._poke()

    def _compose(self, t: str, p: int) -> PartitionState | None:
        """The state znode with the replicas of the current assignment (a reassignment changes them first)."""
        raw = self._raw.get((t, p))
        a = self._assign.get(t)
        if raw is None or a is None or p not in a.partitions:
            return None
        replicas = a.partitions[p]
        return raw if raw.replicas == replicas else replace(raw, replicas=replicas)

    async def wait_until(self, cond: Callable[[], bool], timeout_s: float) -> bool:
        """On the event loop: until `cond()` holds (checked after each change), or the timeout."""
        deadline = time.monotonic() + timeout_s
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ev = self._changed
            try:
                if ev is None:
                    await asyncio.sleep(min(left, 0.05))
                else:
                    await asyncio.wait_for(ev.wait(), min(left, 0.5))
            except TimeoutError:
                pass
        return True

    # ------------------------------------------------------------ writes

    def set_brokers(self, brokers: Mapping[int, BrokerInfo], czxids: Mapping[int, int]) -> None:
        with self._lock:
            changed = brokers != self._brokers or czxids != self._czxids
            self._brokers = dict(brokers)
            self._czxids = dict(czxids)
            if changed and self._listener is not None:
                self._deliver(self._listener.on_brokers_changed)

    def set_pending_deletes(self, topics: Iterable[str]) -> None:
        self._pending_deletes = frozenset(topics)

    def put_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        with self._lock:
            if configs:
                self._group_configs[group] = dict(configs)
            else:
                self._group_configs.pop(group, None)

    def group_configs(self, group: str) -> dict[str, str]:
        with self._lock:
            return dict(self._group_configs.get(group, {}))

    def configured_groups(self) -> list[str]:
        with self._lock:
            return sorted(self._group_configs)

    def set_shutdown_requests(self, broker_ids: Iterable[int]) -> None:
        self._shutdown_requests = frozenset(broker_ids)

    def set_offline_replicas(self, broker_id: int, partitions: frozenset[tuple[str, int]]) -> None:
        with self._lock:
            if partitions:
                self._offline_replicas[broker_id] = partitions
            else:
                self._offline_replicas.pop(broker_id, None)

    def put_assignment(self, t: str, a: TopicAssignment) -> None:
        """Keep `a` if newer than the cached assignment (by znode version); a new topic id replaces the topic."""
        new: list[int] = []
        with self._lock:
            old = self._assign.get(t)
            if old is not None and old.topic_id != a.topic_id:
                self._drop(t)  # deleted and re-created between two watch events
                old = None
            if old is not None and old.version >= a.version:
                return
            self._assign[t] = a
            self._bump(t)
            self._rebuild_topic(t)
            for p in a.partitions:
                if self._known.get((t, p)) != a.topic_id:
                    self._known[(t, p)] = a.topic_id
                    new.append(p)
                else:
                    self._emit_state(t, p)
            self._poke()
        if new and self._new_partitions is not None:
            self._new_partitions(t, a.topic_id, new)

    def drop_topic(self, t: str) -> None:
        """The topic's znode is gone."""
        with self._lock:
            self._drop(t)

    def _drop(self, t: str) -> None:
        if self._assign.pop(t, None) is None:
            return
        self._bump(t)
        self._topics.pop(t, None)
        self._configs.pop(t, None)
        for d in (self._raw, self._delivered, self._known):
            for key in [k for k in d if k[0] == t]:
                del d[key]
        if self._listener is not None:
            self._deliver(self._listener.on_topic_deleted, t)
        else:
            self._poke()

    def put_configs(self, t: str, configs: Mapping[str, str], notify: bool) -> TopicInfo | None:
        """A topic's config overrides; `notify`: the listener hears of a change (a watch, not our own write)."""
        with self._lock:
            if notify and self._configs.get(t) == configs:
                return self._topics.get(t)
            self._configs[t] = dict(configs)
            if t in self._assign:
                self._rebuild_topic(t)
                if notify:
                    hook = getattr(self._listener, "on_topic_config_changed", None)
                    if hook is not None:
                        self._deliver(hook, t)
            return self._topics.get(t)

    def _rebuild_topic(self, t: str) -> None:
        a = self._assign[t]
        rf = len(a.target(0)) if 0 in a.partitions else 0
        self._topics[t] = TopicInfo(t, a.topic_id, len(a.partitions), rf, dict(self._configs.get(t, {})))

    def put_state(self, t: str, p: int, s: PartitionState, deliver: bool = True,
                  topic_id: uuid.UUID | None = None) -> bool:
        """Keep `s` if newer than the cached state (by znode version) and the topic is known (under `topic_id`,
        if given). `deliver` False for this broker's own ISR write: the caller already acts on it."""
        with self._lock:
            cur = self._raw.get((t, p))
            if cur is not None and cur.version >= s.version:
                return False
            a = self._assign.get(t)
            if a is None or (topic_id is not None and self._known.get((t, p)) != topic_id):
                return False
            self._raw[(t, p)] = s
            self._bump(t)
            if deliver:
                self._emit_state(t, p)
            else:
                c = self._compose(t, p)
                if c is not None:
                    self._delivered[(t, p)] = c
                self._poke()
            return True

    # ------------------------------------------------------------ reads

    def brokers(self) -> list[BrokerInfo]:
        with self._lock:
            return [self._brokers[b] for b in sorted(self._brokers)]

    def live_broker_ids(self) -> set[int]:
        with self._lock:
            return set(self._brokers)

    def live_racks(self) -> dict[int, str | None]:
        with self._lock:
            return {b: i.rack for b, i in self._brokers.items()}

    def broker_czxids(self) -> dict[int, int]:
        with self._lock:
            return dict(self._czxids)

    def pending_deletes(self) -> frozenset[str]:
        """Topics marked for deletion (/admin/delete_topics)."""
        return self._pending_deletes

    def shutting_down_brokers(self) -> set[int]:
        """Brokers in controlled shutdown: leaders should not add them back to an ISR."""
        return set(self._shutdown_requests)

    def offline_replicas(self) -> dict[tuple[str, int], set[int]]:
        """Partition -> the live brokers whose replica of it is offline (Kafka's OfflineReplica state)."""
        out: dict[tuple[str, int], set[int]] = {}
        with self._lock:
            for b, keys in self._offline_replicas.items():
                for key in keys:
                    out.setdefault(key, set()).add(b)
        return out

    def topics(self) -> dict[str, TopicInfo]:
        with self._lock:
            return dict(self._topics)

    def topic(self, name: str) -> TopicInfo | None:
        with self._lock:
            return self._topics.get(name)

    def assignment(self, topic: str) -> TopicAssignment | None:
        with self._lock:
            return self._assign.get(topic)

    def assignments(self) -> dict[str, TopicAssignment]:
        with self._lock:
            return dict(self._assign)

    def known_partition(self, t: str, p: int, topic_id: uuid.UUID) -> TopicAssignment | None:
        """The topic's assignment if partition `p` is known under `topic_id` (a state watch still current)."""
        with self._lock:
            a = self._assign.get(t)
            if a is None or a.topic_id != topic_id or self._known.get((t, p)) != topic_id:
                return None
            return a

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        with self._lock:
            return self._compose(topic, partition)

    def topic_generation(self, topic: str) -> int:
        """Changes with every assignment or partition state the cache takes for the topic (MetadataStore)."""
        with self._lock:
            return self._generations.get(topic, 0)

    def partition_states(self) -> dict[tuple[str, int], PartitionState]:
        """Every known partition's state (replicas from the assignment)."""
        with self._lock:
            out = {}
            for (t, p) in self._raw:
                s = self._compose(t, p)
                if s is not None:
                    out[(t, p)] = s
            return out

    def adding_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """The replicas an ongoing reassignment of the partition adds (Partition.isAddingReplica); () otherwise."""
        with self._lock:
            a = self._assign.get(topic)
            return a.adding.get(partition, ()) if a is not None else ()

    def reassignments(self) -> Reassignments:
        """Ongoing reassignments: (topic, partition) -> (replicas, adding, removing)."""
        with self._lock:
            out = {}
            for t, a in self._assign.items():
                for p in a.partitions:
                    if a.reassigning(p):
                        out[(t, p)] = (a.partitions[p], a.adding.get(p, ()), a.removing.get(p, ()))
            return out
