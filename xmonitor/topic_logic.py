"""Topic-management decisions (docs/xmonitor.md §4), pure: the cluster's state in, the actions to take out.

Differences from Xinfra, on purpose: new partitions get the broker that is preferred leader of the fewest
partitions as their first replica (Xinfra: a random broker), so a joining broker leads a new partition at once;
a reassignment only lists partitions whose replicas change; the RF is clipped to the live broker count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PartitionState:
    replicas: tuple[int, ...]
    leader: int                     # -1: none


@dataclass(frozen=True)
class Policy:
    ratio: float = 1.0
    min_partitions: int = 1
    replication_factor: int = 1
    create: bool = True
    add_partitions: bool = True
    reassign_and_elect: bool = True


@dataclass
class Plan:
    create: list[list[int]] | None = None               # replica assignment of a new topic
    add: list[list[int]] | None = None                  # assignments of partitions appended to the topic
    reassign: dict[int, list[int]] = field(default_factory=dict)
    elect: list[int] = field(default_factory=list)      # preferred leader election on these partitions
    elect_deferred: bool = False                        # wanted, but a reassignment is (or will be) running
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.create is None and not self.add and not self.reassign and not self.elect


def required_partitions(brokers: int, policy: Policy) -> int:
    return max(math.ceil(brokers * policy.ratio), policy.min_partitions, 1)


def round_robin(brokers: list[int], partitions: int, rf: int, start: int = 0) -> list[list[int]]:
    """Kafka's (rack-unaware) round-robin assignment, fixed start index: preferred leaders rotate over brokers."""
    b = sorted(brokers)
    return [[b[(start + i + j) % len(b)] for j in range(rf)] for i in range(partitions)]


def _new_partition_assignments(brokers: list[int], state: dict[int, PartitionState], count: int,
                               rf: int) -> list[list[int]]:
    b = sorted(brokers)
    led = {x: 0 for x in b}
    for ps in state.values():
        if ps.replicas and ps.replicas[0] in led:
            led[ps.replicas[0]] += 1
    out = []
    for _ in range(count):
        first = min(b, key=lambda x: (led[x], x))
        led[first] += 1
        i = b.index(first)
        out.append([b[(i + j) % len(b)] for j in range(rf)])
    return out


def plan(brokers: list[int], topic: dict[int, PartitionState] | None, policy: Policy,
         reassignment_in_progress: bool, can_reassign: bool = True) -> Plan:
    """brokers: live broker ids; topic: None when it does not exist; reassignment_in_progress: any partition
    reassignment running in the cluster (we never fight one); can_reassign: AlterPartitionReassignments usable."""
    out = Plan()
    live = sorted(set(brokers))
    if not live:
        out.notes.append("no live brokers")
        return out
    rf_target = min(policy.replication_factor, len(live))
    if topic is None:
        if policy.create:
            out.create = round_robin(live, required_partitions(len(live), policy), rf_target)
        return out
    state = dict(topic)
    n = len(state)
    rfs = {len(ps.replicas) for ps in state.values()}
    current_rf = rfs.pop() if len(rfs) == 1 else -1
    required = required_partitions(len(live), policy)
    if n < required and policy.add_partitions:
        rf_new = min(max(current_rf, 1) if current_rf > 0 else rf_target, len(live))
        out.add = _new_partition_assignments(live, state, required - n, rf_new)
        for i, replicas in enumerate(out.add):
            state[n + i] = PartitionState(tuple(replicas), replicas[0])
        n = required
    if not policy.reassign_and_elect:
        return out
    expected_rf = min(max(current_rf, rf_target), len(live))
    preferred = {ps.replicas[0] for ps in state.values() if ps.replicas}
    needs_reassign = expected_rf > current_rf or (n >= len(live) and not set(live) <= preferred)
    if needs_reassign:
        if reassignment_in_progress:
            out.notes.append("reassignment needed but one is in progress: deferred")
        elif not can_reassign:
            out.notes.append("reassignment needed but AlterPartitionReassignments is not available")
        else:
            target = round_robin(live, n, expected_rf)
            out.reassign = {p: target[p] for p in sorted(state) if list(state[p].replicas) != target[p]}
            for p, replicas in out.reassign.items():
                state[p] = PartitionState(tuple(replicas), state[p].leader)
    leaders = {ps.leader for ps in state.values() if ps.leader >= 0}
    if n >= len(live) and not set(live) <= leaders:
        if reassignment_in_progress or out.reassign:
            out.elect_deferred = True
        else:
            out.elect = sorted(p for p, ps in state.items()
                               if ps.replicas and ps.replicas[0] in live and ps.leader != ps.replicas[0])
    return out
