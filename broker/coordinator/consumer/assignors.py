"""The server-side assignors Kafka ships for consumer groups (KIP-848): `uniform` and `range`.

Both take every member's subscribed topics and current target assignment plus the partition count of each topic,
and return the next target assignment. An assignment is `{topic: frozenset(partitions)}`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

Assignment = dict[str, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member (Kafka's MemberSubscriptionAndAssignmentImpl)."""

    member_id: str
    instance_id: str | None
    subscribed: frozenset[str]
    current: Mapping[str, frozenset[int]]

    @property
    def sort_key(self) -> str:
        # A static member keeps its place across restarts (new member id, same instance id).
        return self.instance_id if self.instance_id is not None else self.member_id


AssignorFn = Callable[[Mapping[str, MemberSpec], Mapping[str, int]], dict[str, Assignment]]


def _pack(owned: Mapping[str, set[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in owned.items() if ps}


def uniform_assign(members: Mapping[str, MemberSpec], topics: Mapping[str, int]) -> dict[str, Assignment]:
    """Kafka's UniformAssignor: spread every subscribed partition so that no member that could take a partition
    holds two more than another, keeping each partition where it is whenever the balance allows (sticky).

    Kafka splits it into OptimizedUniformAssignmentBuilder (same subscriptions) and GeneralUniformAssignmentBuilder
    (different ones); one greedy pass plus moves from the most to the least loaded member covers both."""
    owned: dict[str, dict[str, set[int]]] = {m: {} for m in members}
    holder: dict[tuple[str, int], str] = {}
    for mid in sorted(members, key=lambda m: members[m].sort_key):
        spec = members[mid]
        for topic, parts in spec.current.items():
            if topic not in spec.subscribed or topic not in topics:
                continue
            for p in parts:
                if p < topics[topic] and (topic, p) not in holder:
                    holder[(topic, p)] = mid
                    owned[mid].setdefault(topic, set()).add(p)
    count = {m: sum(len(ps) for ps in owned[m].values()) for m in members}
    order = sorted(members, key=lambda m: members[m].sort_key)
    # Partitions with the fewest candidates go first so that a narrow subscriber gets what only it can take.
    eligible = {t: [m for m in order if t in members[m].subscribed] for t in topics}
    for topic in sorted(topics, key=lambda t: (len(eligible[t]), t)):
        if not eligible[topic]:
            continue
        for p in range(topics[topic]):
            if (topic, p) in holder:
                continue
            mid = min(eligible[topic], key=lambda m: count[m])
            holder[(topic, p)] = mid
            owned[mid].setdefault(topic, set()).add(p)
            count[mid] += 1
    _balance(members, owned, count, order)
    return {m: _pack(owned[m]) for m in members}


def _balance(members: Mapping[str, MemberSpec], owned: dict[str, dict[str, set[int]]], count: dict[str, int],
             order: list[str]) -> None:
    """Move one partition at a time from a member to an eligible one holding at least two fewer; each move
    lowers the sum of squared counts, so the loop ends (bounded anyway by the number of partitions squared)."""
    limit = (sum(count.values()) + 1) ** 2
    for _ in range(limit):
        move = _find_move(members, owned, count, order)
        if move is None:
            return
        src, dst, topic, p = move
        owned[src][topic].discard(p)
        owned[dst].setdefault(topic, set()).add(p)
        count[src] -= 1
        count[dst] += 1


def _find_move(members: Mapping[str, MemberSpec], owned: dict[str, dict[str, set[int]]], count: dict[str, int],
               order: list[str]) -> tuple[str, str, str, int] | None:
    for src in sorted(order, key=lambda m: -count[m]):
        for dst in sorted(order, key=lambda m: count[m]):
            if count[src] - count[dst] < 2:
                break
            for topic in sorted(owned[src]):
                if topic in members[dst].subscribed and owned[src][topic]:
                    return src, dst, topic, max(owned[src][topic])
    return None


def range_assign(members: Mapping[str, MemberSpec], topics: Mapping[str, int]) -> dict[str, Assignment]:
    """Kafka's (server-side) RangeAssignor: per topic, the subscribers in a fixed order each take a contiguous
    range, the first `partitions % subscribers` one more. Topics with the same partition count and subscribers
    are thus co-partitioned: partition i of each goes to the same member."""
    owned: dict[str, dict[str, set[int]]] = {m: {} for m in members}
    for topic in sorted(topics):
        subscribers = sorted((m for m in members if topic in members[m].subscribed),
                             key=lambda m: members[m].sort_key)
        if not subscribers:
            continue
        n = topics[topic]
        quota, extra = divmod(n, len(subscribers))
        start = 0
        for i, mid in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            if size:
                owned[mid][topic] = set(range(start, start + size))
            start += size
    return {m: _pack(owned[m]) for m in members}


ASSIGNORS: dict[str, AssignorFn] = {"uniform": uniform_assign, "range": range_assign}
# group.consumer.assignors takes Kafka's class names as well as the short names.
_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    "org.apache.kafka.coordinator.group.api.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.api.assignor.RangeAssignor": "range",
}


def assignor_names(values: Iterable[str]) -> list[str]:
    """Short names for group.consumer.assignors entries; ValueError names an unknown one."""
    names = []
    for raw in values:
        name = _CLASS_NAMES.get(raw.strip(), raw.strip())
        if name not in ASSIGNORS:
            raise ValueError(f"unknown assignor {raw.strip()!r} (known: uniform, range)")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("at least one assignor is needed")
    return names
