"""A consumer-protocol group (Kafka's ConsumerGroup, KIP-848): the group epoch, the target assignment and its
epoch, the members, who owns which partition, the committed offsets."""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.coordinator.consumer.assignors import ASSIGNORS, Assignment, MemberSpec
from broker.coordinator.consumer.reconcile import ConsumerMember, MemberState
from broker.coordinator.group_state import OffsetAndMetadata

CONSUMER_GROUP_TYPE = "consumer"
CONSUMER_PROTOCOL_TYPE = "consumer"


class ConsumerGroupState(enum.Enum):
    """Kafka's ConsumerGroup.ConsumerGroupState, as ListGroups and ConsumerGroupDescribe name it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class InvalidRegex(ValueError):
    """A SubscribedTopicRegex that does not compile (INVALID_REGULAR_EXPRESSION)."""


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Kafka compiles KIP-848 patterns with RE2/J and matches whole topic names; Python's `re` accepts the
    RE2 syntax clients use (character classes, alternation, repetition), so it stands in for it here."""
    try:
        return re.compile(pattern)
    except re.error as e:
        # Kafka's throwIfRegularExpressionIsInvalid message (its description is RE2/J's, ours Python's).
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}.") from None


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # (topic, partition) -> member id, for the assigned and pending-revocation partitions of every member.
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    # Partition counts of the subscribed topics the target was computed for (Kafka's subscription metadata).
    subscribed_topics: dict[str, int] = field(default_factory=dict)
    assignor: str = "uniform"
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)

    # ------------------------------------------------------------ state

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.state is not MemberState.STABLE or m.member_epoch != self.assignment_epoch
               for m in self.members.values() if m.member_epoch >= 0):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    # ------------------------------------------------------------ subscriptions

    def resolve_subscriptions(self, topics: Mapping[str, int]) -> dict[str, frozenset[str]]:
        """Each member's subscribed topics that exist (names, or the whole names a regex matches; internal topics,
        those starting with "__", are never matched by a regex)."""
        out = {}
        for mid, m in self.members.items():
            names = {t for t in m.subscribed_topic_names if t in topics}
            if m.subscribed_topic_regex:
                pattern = compile_regex(m.subscribed_topic_regex)
                names |= {t for t in topics if not t.startswith("__") and pattern.fullmatch(t)}
            out[mid] = frozenset(names)
        return out

    def is_subscribed_to_topic(self, topic: str, topics: Mapping[str, int]) -> bool:
        """Kafka's ModernGroup.isSubscribedToTopic: some member subscribes to the topic by name (existing or not)
        or through a regex that resolves to it (`topics` are the existing ones)."""
        for m in self.members.values():
            if topic in m.subscribed_topic_names:
                return True
        if topic not in topics:
            return False
        return any(topic in names for names in self.resolve_subscriptions({topic: topics[topic]}).values())

    def subscription_metadata(self, topics: Mapping[str, int]) -> dict[str, int]:
        subscribed = set().union(*self.resolve_subscriptions(topics).values()) if self.members else set()
        return {t: topics[t] for t in sorted(subscribed)}

    def preferred_assignor(self, default: str) -> str:
        """Kafka's computePreferredServerAssignor: the assignor most members ask for, else the default."""
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if not votes:
            return default
        best = max(votes.values())
        return min(name for name, n in votes.items() if n == best)

    # ------------------------------------------------------------ target assignment and owners

    def compute_target(self, topics: Mapping[str, int], default_assignor: str) -> None:
        """Kafka's TargetAssignmentBuilder: run the group's assignor over the members' subscriptions; the target
        takes the group epoch."""
        subscriptions = self.resolve_subscriptions(topics)
        self.subscribed_topics = self.subscription_metadata(topics)
        self.assignor = self.preferred_assignor(default_assignor)
        specs = {mid: MemberSpec(mid, m.instance_id, subscriptions[mid], self.target.get(mid, {}))
                 for mid, m in self.members.items()}
        self.target = ASSIGNORS[self.assignor](specs, self.subscribed_topics) if specs else {}
        self.assignment_epoch = self.group_epoch

    def owner_of(self, topic: str, partition: int) -> str | None:
        return self.owners.get((topic, partition))

    def set_member(self, member: ConsumerMember) -> None:
        """Add or replace a member and move the partition owners to match its assigned and revoking partitions."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        for topic, parts in member.owned().items():
            for p in parts:
                self.owners[(topic, p)] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._release(member)
            self.target.pop(member_id, None)
        return member

    def _release(self, member: ConsumerMember) -> None:
        for topic, parts in member.owned().items():
            for p in parts:
                if self.owners.get((topic, p)) == member.member_id:
                    del self.owners[(topic, p)]

    def bump_epoch(self) -> None:
        """Kafka bumps the group epoch on every change of members, subscriptions or subscribed topics' metadata;
        the target assignment is recomputed when the group epoch is ahead of it."""
        self.group_epoch += 1
