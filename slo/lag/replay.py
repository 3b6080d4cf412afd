"""Replay recorded offset history through the live storage and rules at fixed evaluation instants (pure).

Shared by the PySpark lag-history job (one call per group) and anything else that re-evaluates history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from slo.lag import history
from slo.lag.config import LagConfig
from slo.lag.evaluator import evaluate_views
from slo.lag.rules import GroupStatus, Status
from slo.lag.storage import LagStorage


def apply_event(storage: LagStorage, e: dict) -> None:
    """Apply one recorded row (a `commits` or `broker` table row as a dict) as the live monitor did."""
    kind = e["kind"]
    if kind == history.COMMIT:
        storage.add_commit(e["group"], e["topic"], e["partition"], e["offset"], e["timestamp"], e["order"],
                           e["time_ms"])
    elif kind == history.BROKER_OFFSET:
        storage.set_broker_offset(e["topic"], e["partition"], e["offset"], e["time_ms"], e["partition_count"])
    elif kind == history.OFFSET_DELETE:
        storage.delete_offset(e["group"], e["topic"], e["partition"])
    elif kind == history.GROUP_DELETE:
        storage.delete_group(e["group"])
    elif kind == history.GROUP_TOPIC_DELETE:
        storage.delete_group_topic(e["group"], e["topic"])
    elif kind == history.TOPIC_DELETE:
        storage.delete_topic(e["topic"])


@dataclass
class Intervals:
    """Folds per-instant statuses into (key, status, from_ms, to_ms) runs; each instant covers one step."""

    step_ms: int
    open: dict[tuple, tuple[str, int, int]] = field(default_factory=dict)
    closed: list[tuple] = field(default_factory=list)

    def add(self, key: tuple, status: str, t: int) -> None:
        cur = self.open.get(key)
        if cur is not None and cur[0] == status and cur[2] == t:
            self.open[key] = (status, cur[1], t + self.step_ms)
            return
        if cur is not None:
            self.closed.append((*key, *cur))
        self.open[key] = (status, t, t + self.step_ms)

    def finish(self) -> list[tuple]:
        out = self.closed + [(*k, *v) for k, v in self.open.items()]
        self.open, self.closed = {}, []
        return sorted(out)


@dataclass
class Daily:
    instants: int = 0
    ok: int = 0
    warn: int = 0
    err: int = 0
    max_lag: int = 0
    max_lag_seconds: float | None = None

    def add(self, g: GroupStatus) -> None:
        self.instants += 1
        self.ok += g.status is Status.OK
        self.warn += g.status is Status.WARN
        self.err += g.status is Status.ERR
        self.max_lag = max(self.max_lag, g.totallag)
        if g.lag_seconds is not None:
            self.max_lag_seconds = max(self.max_lag_seconds or 0.0, g.lag_seconds)


@dataclass
class GroupHistory:
    group_intervals: list[tuple]      # (group, status, from_ms, to_ms)
    partition_intervals: list[tuple]  # (group, topic, partition, status, from_ms, to_ms)
    daily: dict[str, Daily]           # date → summary


def instants(from_ms: int, to_ms: int, step_ms: int) -> range:
    """Evaluation instants: multiples of step in [from, to]."""
    return range(-(-from_ms // step_ms) * step_ms, to_ms + 1, step_ms)


def replay_group(group: str, events: Iterable[dict], from_ms: int, to_ms: int, step_ms: int,
                 config: LagConfig) -> GroupHistory:
    """Apply `events` (sorted by time_ms, seq) and evaluate `group` at each instant, like the live evaluator."""
    storage = LagStorage(config.storage)
    it = iter(events)
    pending = next(it, None)
    group_runs, part_runs = Intervals(step_ms), Intervals(step_ms)
    daily: dict[str, Daily] = {}
    for t in instants(from_ms, to_ms, step_ms):
        while pending is not None and pending["time_ms"] <= t:
            apply_event(storage, pending)
            pending = next(it, None)
        g = evaluate_views(config.cluster, group, storage.fetch_group(group, t), t, config.evaluator)
        if g.status is Status.NOTFOUND:
            continue
        group_runs.add((group,), g.status.name, t)
        for p in g.partitions:
            part_runs.add((group, p.topic, p.partition), p.status.name, t)
        daily.setdefault(history.date_of(t), Daily()).add(g)
    return GroupHistory(group_runs.finish(), part_runs.finish(), daily)
