"""Burrow's in-memory storage (docs/lag-monitor.md §3): commit windows per partition and broker-offset history per partition.

Pure state: every method that depends on time takes `now_ms`. Snapshots are plain JSON-able dicts.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from lagmonitor.rules import ConsumerOffset


@dataclass(frozen=True)
class StorageConfig:
    intervals: int = 10
    min_distance_s: int = 0
    expire_group_s: int = 604_800
    group_allowlist: str | None = None
    group_denylist: str | None = None
    # Ours, off by default: Burrow ignores offset tombstones and keeps a group until expire-group.
    drop_on_offset_tombstone: bool = False


class GroupFilter:
    """Allow/deny regexes, matched unanchored (Go's MatchString = Python's re.search)."""

    def __init__(self, allow: str | None, deny: str | None) -> None:
        self.allow = re.compile(allow) if allow else None
        self.deny = re.compile(deny) if deny else None

    def __call__(self, group: str) -> bool:
        if self.allow is not None and not self.allow.search(group):
            return False
        return self.deny is None or not self.deny.search(group)


@dataclass(slots=True)
class PartitionSlot:
    """A group's partition: `ring` is None until created (shown as `offsets: []`), else sorted oldest → newest."""

    ring: list[ConsumerOffset] | None = None
    owner: str = ""
    client_id: str = ""


@dataclass(slots=True)
class Group:
    last_commit: int = 0
    topics: dict[str, list[PartitionSlot]] = field(default_factory=dict)


@dataclass(slots=True)
class PartitionView:
    """What a fetch returns for one partition (the evaluator's input)."""

    topic: str
    partition: int
    offsets: list[ConsumerOffset | None]
    broker_history: list[tuple[int, int]]   # (offset, timestamp_ms), oldest → newest
    current_lag: int
    owner: str
    client_id: str
    # Last Stable Offsets (KIP-98), (offset, timestamp_ms) oldest → newest, and the lag to the newest; empty and
    # None when the collector has not got one (a replay, or a broker without read_committed ListOffsets).
    stable_history: list[tuple[int, int]] = field(default_factory=list)
    lso_lag: int | None = None

    @property
    def broker_offsets(self) -> list[int]:
        return [o for o, _ in self.broker_history]


def _whole_second(ms: int) -> int:
    return ms // 1000 * 1000


class LagStorage:
    """One cluster's broker offsets and consumer groups, with Burrow's insert order, merge and expiry."""

    def __init__(self, config: StorageConfig | None = None) -> None:
        self.config = config or StorageConfig()
        self.accept = GroupFilter(self.config.group_allowlist, self.config.group_denylist)
        self.broker: dict[str, list[deque[tuple[int, int]]]] = {}
        # The same per partition for the Last Stable Offset (ListOffsets with read_committed, KIP-98): a
        # read_committed consumer's reachable end, below the log end while a transaction is open and by its
        # markers. docs/lag-monitor.md §6.
        self.stable: dict[str, list[deque[tuple[int, int]]]] = {}
        # (topic, partition) → {start: end}: offset ranges the collector read with read_committed and got no
        # record from (commit/abort markers, aborted records). A group committed at a marker's offset is caught up
        # although its offset is below the LSO.
        self.markers_only: dict[tuple[str, int], dict[int, int]] = {}
        self.groups: dict[str, Group] = {}
        # Member count of each group's last group metadata record (kafka_exporter's kafka_consumergroup_members);
        # kept apart from `groups`, which Burrow only creates for partitions whose log end it knows.
        self.members: dict[str, int] = {}

    # ---------------------------------------------------------------- broker side

    def set_broker_offset(self, topic: str, partition: int, offset: int, timestamp_ms: int,
                          partition_count: int, stable: bool = False) -> None:
        """Record a log-end offset (or, with `stable`, a Last Stable Offset); the topic's partition list is sized
        to partition_count."""
        parts = (self.stable if stable else self.broker).setdefault(topic, [])
        while len(parts) < partition_count:
            parts.append(deque(maxlen=self.config.intervals))
        del parts[partition_count:]
        if 0 <= partition < partition_count:
            parts[partition].append((offset, timestamp_ms))
        if stable:   # a range ending below the LSO can no longer cover a gap up to it
            spans = self.markers_only.get((topic, partition), {})
            for start in [s for s, e in spans.items() if e < offset]:
                del spans[start]

    def delete_topic(self, topic: str) -> None:
        """A topic gone from the metadata leaves the broker map and every group."""
        self.broker.pop(topic, None)
        self.stable.pop(topic, None)
        for key in [k for k in self.markers_only if k[0] == topic]:
            del self.markers_only[key]
        for g in self.groups.values():
            g.topics.pop(topic, None)

    def _partition_count(self, topic: str, partition: int) -> int:
        """The topic's partition count if a broker offset is known for this partition, else 0 (drop)."""
        parts = self.broker.get(topic)
        if parts is None or not 0 <= partition < len(parts) or not parts[partition]:
            return 0
        return len(parts)

    def _slot(self, group: str, topic: str, partition: int, count: int) -> PartitionSlot:
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = Group()
        slots = g.topics.setdefault(topic, [])
        if partition >= len(slots):
            slots.extend(PartitionSlot() for _ in range(len(slots), count))
        slot = slots[partition]
        if slot.ring is None:
            slot.ring = []
        return slot

    # ---------------------------------------------------------------- consumer side

    def add_commit(self, group: str, topic: str, partition: int, offset: int, timestamp: int, order: int,
                   now_ms: int) -> bool:
        """Store a commit (docs/lag-monitor.md §3.2, in its order of checks). Returns whether it was stored."""
        cfg = self.config
        if timestamp < (now_ms // 1000 - cfg.expire_group_s) * 1000 or not self.accept(group):
            return False
        count = self._partition_count(topic, partition)
        if not count:
            return False
        ring = self._slot(group, topic, partition, count).ring
        n = len(ring)
        if n == cfg.intervals and ring[0].order >= order:
            return False
        if n == 0 or ring[-1].order < order:
            pos, appended = n, True
        else:
            pos = n - 1
            while pos >= 0 and ring[pos].order > order:
                pos -= 1
            if pos >= 0 and ring[pos].order == order:
                return False
            pos, appended = pos + 1, False
        lag = lso_lag = None
        if appended:
            lag = max(0, self.broker[topic][partition][-1][0] - offset)
            lso = self._latest_stable(topic, partition)
            lso_lag = None if lso is None else max(0, lso - offset)
            self.groups[group].last_commit = timestamp
        entry = ConsumerOffset(offset, timestamp, _whole_second(now_ms), lag, order, lso_lag)
        prev = ring[pos - 1] if pos > 0 else None
        if prev is not None and timestamp - prev.timestamp < cfg.min_distance_s * 1000:
            entry.timestamp = prev.timestamp
            ring[pos - 1] = entry
            return True
        ring.insert(pos, entry)
        if len(ring) > cfg.intervals:
            del ring[0]
        return True

    def _stable_history(self, topic: str, partition: int) -> list[tuple[int, int]]:
        parts = self.stable.get(topic)
        return list(parts[partition]) if parts is not None and partition < len(parts) else []

    def _latest_stable(self, topic: str, partition: int) -> int | None:
        history = self._stable_history(topic, partition)
        return history[-1][0] if history else None

    def set_markers_only(self, topic: str, partition: int, start: int, end: int) -> None:
        """Reading [start, end) with read_committed returned no record."""
        spans = self.markers_only.setdefault((topic, partition), {})
        spans[start] = max(end, spans.get(start, end))

    def _markers_only(self, topic: str, partition: int, start: int, end: int) -> bool:
        spans = self.markers_only.get((topic, partition), {})
        return any(s <= start and e >= end for s, e in spans.items())

    def marker_candidates(self, max_gap: int) -> set[tuple[str, int, int, int]]:
        """(topic, partition, committed, LSO) where a group's newest commit is 1..max_gap below the LSO and no
        known markers-only range covers the gap: the ranges the collector reads to tell markers from lag."""
        out = set()
        for g in self.groups.values():
            for topic, slots in g.topics.items():
                for p, slot in enumerate(slots):
                    lso = self._latest_stable(topic, p)
                    if not slot.ring or lso is None:
                        continue
                    committed = slot.ring[-1].offset
                    if 0 < lso - committed <= max_gap and not self._markers_only(topic, p, committed, lso):
                        out.add((topic, p, committed, lso))
        return out

    def set_owners(self, group: str, members: list[tuple[str, str, tuple[tuple[str, int], ...]]]) -> None:
        """Group metadata or a ConsumerGroupDescribe answer: (client_id, client_host, assignment) per member;
        no members clears every owner."""
        if not self.accept(group):
            return
        self.members[group] = len(members)
        # Each call is the group's whole assignment: a partition nobody holds any more loses its old owner.
        for slots in self.groups.get(group, Group()).topics.values():
            for slot in slots:
                slot.owner = slot.client_id = ""
        for client_id, host, assignment in members:
            for topic, partition in assignment:
                count = self._partition_count(topic, partition)
                if count:
                    slot = self._slot(group, topic, partition, count)
                    slot.owner, slot.client_id = host, client_id

    def delete_group(self, group: str) -> bool:
        self.members.pop(group, None)
        return self.groups.pop(group, None) is not None

    def delete_group_topic(self, group: str, topic: str) -> bool:
        g = self.groups.get(group)
        return g is not None and g.topics.pop(topic, None) is not None

    def delete_offset(self, group: str, topic: str, partition: int) -> bool:
        """An offset tombstone: ignored, as Burrow does, unless drop_on_offset_tombstone; then the partition's
        window goes, and a topic or group left without windows with it. Returns whether anything was dropped."""
        g = self.groups.get(group)
        slots = g.topics.get(topic) if g else None
        if not self.config.drop_on_offset_tombstone or not slots or partition >= len(slots):
            return False
        slots[partition] = PartitionSlot()
        if all(s.ring is None for s in slots):
            del g.topics[topic]
            if not g.topics:
                del self.groups[group]
        return True

    # ---------------------------------------------------------------- fetch

    def fetch_group(self, group: str, now_ms: int) -> list[PartitionView] | None:
        """The group's partitions (topics sorted, partitions in index order); None if unknown or expired."""
        g = self.groups.get(group)
        if g is None:
            return None
        if (now_ms // 1000 - self.config.expire_group_s) * 1000 > g.last_commit:
            del self.groups[group]
            return None
        intervals = self.config.intervals
        out = []
        for topic in sorted(g.topics):
            broker = self.broker.get(topic)
            for p, slot in enumerate(g.topics[topic]):
                history = list(broker[p]) if broker is not None and p < len(broker) else []
                stable = self._stable_history(topic, p)
                current_lag, lso_lag = 0, None
                if slot.ring is None:
                    offsets: list[ConsumerOffset | None] = []
                else:
                    offsets = [None] * (intervals - len(slot.ring)) + list(slot.ring)
                    if slot.ring and history:
                        current_lag = max(0, history[-1][0] - slot.ring[-1].offset)
                    if stable:
                        lso_lag = max(0, stable[-1][0] - slot.ring[-1].offset) if slot.ring else 0
                        if lso_lag and self._markers_only(topic, p, slot.ring[-1].offset, stable[-1][0]):
                            lso_lag = 0   # only markers (or aborted records) between: nothing left to read
                out.append(PartitionView(topic, p, offsets, history, current_lag, slot.owner, slot.client_id,
                                         stable, lso_lag))
        return out

    def topic_offsets(self, topic: str) -> list[int] | None:
        """Latest broker offset per partition (partitions never fetched are skipped, as in Burrow)."""
        parts = self.broker.get(topic)
        return None if parts is None else [d[-1][0] for d in parts if d]

    def consumers_of(self, topic: str) -> list[str]:
        return sorted(g for g, v in self.groups.items() if topic in v.topics)

    # ---------------------------------------------------------------- snapshot

    def to_state(self) -> dict:
        """A JSON-able copy of everything stored."""
        def ring(r):
            return None if r is None else [[e.offset, e.timestamp, e.observed_at, e.lag, e.order, e.lso_lag]
                                           for e in r]
        return {
            "broker": {t: [list(map(list, d)) for d in parts] for t, parts in self.broker.items()},
            "stable": {t: [list(map(list, d)) for d in parts] for t, parts in self.stable.items()},
            "groups": {name: {"last_commit": g.last_commit,
                              "topics": {t: [[ring(s.ring), s.owner, s.client_id] for s in slots]
                                         for t, slots in g.topics.items()}}
                       for name, g in self.groups.items()},
            "members": dict(self.members),
        }

    def load_state(self, state: dict) -> None:
        """Replace the contents with a to_state() snapshot."""
        n = self.config.intervals
        self.broker = {t: [deque(map(tuple, d), maxlen=n) for d in parts] for t, parts in state["broker"].items()}
        # absent from snapshots written before the LSO was collected
        self.stable = {t: [deque(map(tuple, d), maxlen=n) for d in parts]
                       for t, parts in state.get("stable", {}).items()}
        self.groups = {}
        for name, g in state["groups"].items():
            topics = {t: [PartitionSlot(None if r is None else [ConsumerOffset(*e) for e in r][-n:], owner, cid)
                          for r, owner, cid in slots]
                      for t, slots in g["topics"].items()}
            self.groups[name] = Group(g["last_commit"], topics)
        self.members = dict(state.get("members", {}))   # absent from snapshots written before it existed
