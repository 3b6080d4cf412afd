"""Pure state of one classic consumer group (Kafka's GroupMetadata/MemberMetadata): no I/O, no asyncio.

All times are milliseconds passed in by the caller: deadlines (`*_deadline`, heartbeats) on the monotonic clock,
`state_timestamp` and offset commit timestamps on the wall clock (they are persisted).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription as SubscriptionV0
from kio.schema.consumer_protocol_subscription.v1.data import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2.data import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription as SubscriptionV3
from kio.serial import entity_reader

from broker.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    """Kafka's group states; `.value` is the name DescribeGroups/ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's GroupState.validPreviousStates.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


class IllegalStateTransition(RuntimeError):
    """A transition Kafka's state machine forbids; always a coordinator bug."""


def new_member_id(client_id: str) -> str:
    """Kafka's member id format: `{client_id}-{uuid4}`."""
    return f"{client_id}-{uuid.uuid4()}"


@dataclass
class OffsetAndMetadata:
    """A committed offset; timestamps are wall-clock ms, expire_timestamp -1 when absent (v1 records only)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass
class Member:
    """One live member. `protocols` keeps the client's preference order."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    # A member that has never completed a join; Kafka keeps it alive at most NEW_MEMBER_JOIN_TIMEOUT_MS.
    is_new: bool = False
    last_heartbeat: int = 0

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols and metadata, in the same order (Kafka's MemberMetadata.matches)."""
        return list(protocols) == list(self.protocols)

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among the candidates."""
        return next(name for name, _ in self.protocols if name in candidates)

    def session_expired(self, now: int) -> bool:
        """Kafka's !shouldKeepAlive: a pending JoinGroup or SyncGroup keeps a member alive."""
        if self.awaiting_join:
            return self.is_new and now >= self.last_heartbeat + NEW_MEMBER_JOIN_TIMEOUT_MS
        if self.awaiting_sync:
            return False
        return now >= self.last_heartbeat + self.session_timeout_ms

    def session_deadline(self) -> int | None:
        if self.awaiting_join:
            return self.last_heartbeat + NEW_MEMBER_JOIN_TIMEOUT_MS if self.is_new else None
        if self.awaiting_sync:
            return None
        return self.last_heartbeat + self.session_timeout_ms


# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass
class Group:
    """One group's membership, generation and committed offsets (Kafka's GroupMetadata)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # group_instance_id -> member_id
    pending_members: dict[str, int] = field(default_factory=dict)  # member_id -> expiry deadline (MEMBER_ID_REQUIRED)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    # Join completion: deadline of the current DelayedJoin/InitialDelayedJoin, and its initial-delay bookkeeping.
    join_deadline: int | None = None
    initial_delay: bool = False
    initial_delay_remaining_ms: int = 0
    new_member_added: bool = False
    # Topics the members subscribe to (consumer protocol); None when unknown (undecodable metadata).
    subscribed_topics: set[str] | None = None

    # ------------------------------------------------------------ state

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_wall: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp = now_wall

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # ------------------------------------------------------------ members

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        """Add a member; the first one sets the protocol type and becomes leader (Kafka's GroupMetadata.add)."""
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member; a removed leader passes leadership to the next member, as Kafka does."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int) -> None:
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known instance id now mapped to a different member id: the caller is a zombie."""
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """Give the static member a new member id, keeping its place, leadership and assignment."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def restore_static_member(self, member: Member, old_member_id: str,
                              old: tuple[list[tuple[str, bytes]], int, int]) -> None:
        """Undo a static member's takeover whose record could not be written: the old member id (and its
        protocols, rebalance and session timeouts) back, if the member is still there under the new one."""
        if self.members.get(member.member_id) is member and member.group_instance_id is not None:
            self.update_member(member, *old)
            self.replace_static_member(member.group_instance_id, member.member_id, old_member_id)

    def add_pending_member(self, member_id: str, deadline: int) -> None:
        self.pending_members[member_id] = deadline

    def validate_member(self, member_id: str, group_instance_id: str | None) -> str | None:
        """Kafka's validateCurrentMember: None if fine, else "fenced" or "unknown"."""
        if self.is_static_member_fenced(member_id, group_instance_id):
            return "fenced"
        if not self.has(member_id):
            return "unknown"
        return None

    # ------------------------------------------------------------ protocols

    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        """Kafka's supportsProtocols: a new group needs a type and protocols; else same type and a common protocol."""
        names = set(protocol_names)
        if not self.members:
            return bool(protocol_type) and bool(names)
        counts = self._protocol_support()
        return protocol_type == self.protocol_type and any(counts.get(n, 0) == len(self.members) for n in names)

    def _protocol_support(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members.values():
            for name, _ in m.protocols:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def candidate_protocols(self) -> set[str]:
        counts = self._protocol_support()
        return {name for name, n in counts.items() if n == len(self.members)}

    def select_protocol(self) -> str:
        """Each member votes for its preferred common protocol; most votes win (ties: first member's preference)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalStateTransition(f"group {self.group_id}: no protocol supported by every member")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = next(iter(self.members.values()))
        order = [name for name, _ in first.protocols if name in candidates]
        return max(order, key=lambda name: (votes.get(name, 0), -order.index(name)))

    # ------------------------------------------------------------ rebalance decisions

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined_members(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout is the largest of its members' (Kafka)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_joined_leader(self) -> None:
        """If the leader did not rejoin, hand leadership to a member that did (Kafka's maybeElectNewJoinedLeader)."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.awaiting_join:
            return
        joined = next((m.member_id for m in self.members.values() if m.awaiting_join), None)
        self.leader_id = joined if joined is not None else next(iter(self.members), None)

    def init_next_generation(self, now_wall: int) -> None:
        """Bump the generation: CompletingRebalance with a selected protocol, or Empty when no member is left."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_wall)
        else:
            self.protocol_name = None
            self.leader_id = None
            self.transition_to(GroupState.EMPTY, now_wall)
        self.subscribed_topics = self.compute_subscribed_topics()

    def compute_subscribed_topics(self) -> set[str] | None:
        """Union of the consumer-protocol subscriptions; None when not a consumer group or undecodable."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            decoded = decode_subscription_topics(m.metadata(self.protocol_name))
            if decoded is None:
                return None
            topics |= decoded
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    def expired_members(self, now: int) -> list[Member]:
        return [m for m in self.members.values() if m.session_expired(now)]

    def expired_pending_members(self, now: int) -> list[str]:
        return [mid for mid, deadline in self.pending_members.items() if now >= deadline]

    def next_deadline(self) -> int | None:
        """The earliest moment something in this group may time out."""
        deadlines = [d for d in (m.session_deadline() for m in self.members.values()) if d is not None]
        deadlines.extend(self.pending_members.values())
        if self.join_deadline is not None:
            deadlines.append(self.join_deadline)
        return min(deadlines, default=None)

    # ------------------------------------------------------------ offsets

    def expired_offsets(self, now_wall: int, retention_ms: int) -> list[tuple[str, int]]:
        """Kafka 2.1+ (KIP-211) expiry: empty groups count from when they became empty; standalone consumers from
        each commit; stable consumer groups only expire topics nobody subscribes to."""
        def older(base: int, o: OffsetAndMetadata) -> bool:
            if o.expire_timestamp >= 0:
                return now_wall >= o.expire_timestamp
            return now_wall - base >= retention_ms

        if self.protocol_type and self.is_(GroupState.EMPTY):
            return [tp for tp, o in self.offsets.items()
                    if older(self.state_timestamp if self.state_timestamp >= 0 else o.commit_timestamp, o)]
        if not self.protocol_type:
            return [tp for tp, o in self.offsets.items() if older(o.commit_timestamp, o)]
        if (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
                and self.is_(GroupState.STABLE)):
            return [tp for tp, o in self.offsets.items()
                    if tp[0] not in self.subscribed_topics and older(o.commit_timestamp, o)]
        return []


def decode_subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (int16 version + struct); None when it does not decode."""
    if len(metadata) < 2:
        return None
    version = int.from_bytes(metadata[:2], "big", signed=True)
    if version < 0:
        return None
    # Newer versions only append fields, so the highest known schema reads their prefix (Kafka's ConsumerProtocol).
    schema = (SubscriptionV0, SubscriptionV1, SubscriptionV2, SubscriptionV3)[min(version, 3)]
    sub: Any  # one of the four Subscription versions
    try:
        sub, _ = entity_reader(schema)(metadata, 2)
    except Exception:  # arbitrary client bytes; any decode failure means "unknown"
        return None
    return set(sub.topics)


def member_error(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """Kafka's validateCurrentMember as an error code: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or None."""
    problem = group.validate_member(member_id, group_instance_id)
    if problem == "fenced":
        return ErrorCode.fenced_instance_id
    if problem == "unknown":
        return ErrorCode.unknown_member_id
    return None
