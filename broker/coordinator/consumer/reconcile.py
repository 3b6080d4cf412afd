"""A consumer-protocol member and its reconciliation towards the target assignment (Kafka's ConsumerGroupMember and
CurrentAssignmentBuilder, KIP-848).

A member keeps only partitions nobody else still owns: a partition moving between members is first revoked by
its old owner (which stays in its epoch, UNREVOKED_PARTITIONS, until its heartbeat no longer lists it) and only
then assigned to the new one (which waits meanwhile in UNRELEASED_PARTITIONS at the target epoch).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from broker.coordinator.consumer.assignors import Assignment

# Kafka's ConsumerGroupHeartbeatRequest epochs.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.Enum):
    """Kafka's MemberState; the value is what ConsumerGroupDescribe tooling prints."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


@dataclass
class ConsumerMember:
    """One member of a consumer-protocol group."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0
    # Set while the member has partitions to revoke: past it the member is fenced (Kafka's rebalance timeout).
    rebalance_deadline_ms: int | None = None

    def owned(self) -> Assignment:
        """Every partition this member may still hold: assigned plus waiting to be revoked."""
        return union(self.assigned, self.pending_revocation)


def union(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> Assignment:
    out = {t: frozenset(ps) for t, ps in a.items() if ps}
    for t, ps in b.items():
        if ps:
            out[t] = out.get(t, frozenset()) | ps
    return out


def is_subset(owned: Mapping[str, frozenset[int]] | None, of: Mapping[str, frozenset[int]]) -> bool:
    """Kafka's isSubset: every reported partition is in `of` (None, not reported, counts as a subset)."""
    if owned is None:
        return True
    return all(ps <= of.get(t, frozenset()) for t, ps in owned.items())


def _owns_any(owned: Mapping[str, frozenset[int]] | None, revoked: Mapping[str, frozenset[int]]) -> bool:
    """Kafka's ownsRevokedPartitions: without a report we cannot tell, so the member is taken to still own them."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in revoked.items())


def reconcile(member: ConsumerMember, target_epoch: int, target: Mapping[str, frozenset[int]],
              owner_of: Callable[[str, int], str | None], owned: Mapping[str, frozenset[int]] | None
              ) -> ConsumerMember:
    """Kafka's CurrentAssignmentBuilder.build: the member's next state. `owner_of(topic, p)` is the member id that
    currently holds a partition (None if free); `owned` what the member reported in this heartbeat (None: not
    reported)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        # Revocation acknowledged: the member may move on to the latest target.
        return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)
    return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: Mapping[str, frozenset[int]],
          owner_of: Callable[[str, int], str | None], owned: Mapping[str, frozenset[int]] | None
          ) -> ConsumerMember:
    """Kafka's computeNextAssignment."""
    keep: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    unreleased = False
    current = member.assigned
    for topic in set(current) | set(target):
        have = current.get(topic, frozenset())
        want = target.get(topic, frozenset())
        gone = have - want
        free = {p for p in want - have if owner_of(topic, p) in (None, member.member_id)}
        unreleased = unreleased or len(free) < len(want - have)
        if have & want or free:
            keep[topic] = frozenset((have & want) | free)
        if gone:
            revoke[topic] = frozenset(gone)
    if revoke and _owns_any(owned, revoke):
        # Revoke first: the epoch stays, the partitions being revoked are not assigned to anyone else yet.
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=epoch,
                       previous_member_epoch=member.member_epoch,
                       assigned={t: ps & target.get(t, frozenset()) for t, ps in current.items()
                                 if ps & target.get(t, frozenset())},
                       pending_revocation=revoke)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=state, member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned=keep, pending_revocation={})
