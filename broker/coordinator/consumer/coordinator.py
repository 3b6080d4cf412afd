"""The consumer-protocol side of Kafka's GroupMetadataManager (KIP-848): ConsumerGroupHeartbeat, member sessions
and rebalance timeouts, offset-commit validation by member epoch. Pure: the caller passes the time (ms on its
monotonic clock) and the partition count of every topic; no I/O, no asyncio."""

from __future__ import annotations

import base64
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from broker.coordinator.consumer.assignors import Assignment, assignor_names
from broker.coordinator.consumer.group import ConsumerGroup, InvalidRegex
from broker.coordinator.consumer.reconcile import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerMember,
    MemberState,
    is_subset,
    reconcile,
)
from broker.errors import ErrorCode

# Kafka's default group.consumer.max.size: Integer.MAX_VALUE, i.e. no limit.
UNLIMITED_GROUP_SIZE = 2**31 - 1


@dataclass(frozen=True)
class ConsumerGroupSettings:
    """group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms, group.consumer.assignors (the first
    is the default), group.consumer.max.size and whether `consumer` is among group.coordinator.rebalance.protocols."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    assignors: tuple[str, ...] = ("uniform", "range")
    enabled: bool = True
    max_size: int = UNLIMITED_GROUP_SIZE


@dataclass
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat; None fields did not change since the member's last heartbeat. `owned` is the
    member's TopicPartitions with topic ids already resolved to names."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _error(code: ErrorCode, message: str, member_id: str | None = None) -> HeartbeatResult:
    return HeartbeatResult(code, message, member_id, -1 if code else 0)


def _static_error(static: ConsumerMember | None, req: HeartbeatRequest) -> HeartbeatResult | None:
    """Kafka's throwIfStaticMemberIsUnknown / throwIfInstanceIdIsFenced for a heartbeat naming an instance id."""
    if static is None:
        return _error(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.", req.member_id)
    if static.member_id != req.member_id:
        return _error(ErrorCode.fenced_instance_id, f"Static member {req.member_id} with instance id "
                      f"{req.instance_id} was fenced by member {static.member_id}.", req.member_id)
    return None


def new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerGroupCoordinator:
    """The consumer-protocol groups of the offsets partitions this broker leads (ownership is the caller's)."""

    def __init__(self, settings: ConsumerGroupSettings,
                 group_configs: Callable[[str], Mapping[str, str]] | None = None) -> None:
        """`group_configs`: a group's config overrides (KIP-848 dynamic group configs; the broker's metadata)."""
        self.settings = settings
        self.group_configs: Callable[[str], Mapping[str, str]] = group_configs or (lambda group_id: {})
        self.groups: dict[str, ConsumerGroup] = {}
        # Target assignments computed (Kafka's consumer-group-rebalance sensor); the metrics set the hook.
        self.rebalances = 0
        self.on_rebalance: Callable[[], None] | None = None

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's consumer.session.timeout.ms, else group.consumer.session.timeout.ms (Kafka's
        GroupMetadataManager.consumerGroupSessionTimeoutMs)."""
        value = self.group_configs(group_id).get("consumer.session.timeout.ms")
        return int(value) if value else self.settings.session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's consumer.heartbeat.interval.ms, else group.consumer.heartbeat.interval.ms."""
        value = self.group_configs(group_id).get("consumer.heartbeat.interval.ms")
        return int(value) if value else self.settings.heartbeat_interval_ms

    def create(self, group_id: str) -> ConsumerGroup:
        group = self.groups[group_id] = ConsumerGroup(group_id, assignor=self.settings.assignors[0])
        return group

    def state_counts(self) -> Counter[str]:
        return Counter(g.state.value for g in self.groups.values())

    # ------------------------------------------------------------ ConsumerGroupHeartbeat

    def validate(self, req: HeartbeatRequest, api_version: int) -> HeartbeatResult | None:
        """Kafka 4.1's throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order and with its messages:
        INVALID_REQUEST / UNSUPPORTED_ASSIGNOR."""
        bad = ErrorCode.invalid_request
        # v1 (KIP-1082): the client always names itself; v0 only when it is not joining or leaving statically.
        if not req.member_id and (api_version >= 1 or req.member_epoch > 0
                                  or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH):
            return _error(bad, "MemberId can't be empty.")
        if not req.group_id:
            return _error(bad, "GroupId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            return _error(bad, "InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            return _error(bad, "RackId can't be empty.")
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if req.rebalance_timeout_ms == -1:
                return _error(bad, "RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:   # a full request: owned partitions present, and none yet
                return _error(bad, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                return _error(bad, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                              "(re-)joining.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
            return _error(bad, "InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            return _error(bad, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.settings.assignors:
            return _error(ErrorCode.unsupported_assignor,
                          f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                          f"{', '.join(self.settings.assignors)}.")
        return None

    def heartbeat(self, req: HeartbeatRequest, topics: Mapping[str, int], now_ms: int,
                  api_version: int = 1) -> HeartbeatResult:
        """One heartbeat: join (epoch 0), leave (-1, or -2 for a static member that will come back) or keep
        reconciling. `topics` maps every topic to its partition count."""
        invalid = self.validate(req, api_version)
        if invalid is not None:
            return invalid
        group = self.groups.get(req.group_id)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            if group is None:
                return _error(ErrorCode.group_id_not_found, f"Group {req.group_id} not found.")
            return self._leave(group, req, now_ms)
        if group is None:
            if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
                return _error(ErrorCode.group_id_not_found, f"Consumer group {req.group_id} not found.")
            group = self.create(req.group_id)
        if full := self._full(group, req.member_id):
            return full
        if not req.member_id:
            req = replace(req, member_id=new_member_id())  # v0: the coordinator names the member
        found = self._member_for(group, req)
        if isinstance(found, HeartbeatResult):
            return found
        member, is_new = found
        try:
            return self._reconcile(group, member, is_new, req, topics, now_ms)
        except InvalidRegex as e:
            if is_new:
                group.remove_member(member.member_id)
            return _error(ErrorCode.invalid_regular_expression, str(e), req.member_id)

    def _full(self, group: ConsumerGroup, member_id: str) -> HeartbeatResult | None:
        """Kafka's throwIfConsumerGroupIsFull (group.consumer.max.size): only members already in the group get in;
        like Kafka, a static member coming back under a new member id counts as a newcomer."""
        limit = self.settings.max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            return _error(ErrorCode.group_max_size_reached,
                          f"The consumer group has reached its maximum capacity of {limit} members.", member_id)
        return None

    def _member_for(self, group: ConsumerGroup, req: HeartbeatRequest
                    ) -> HeartbeatResult | tuple[ConsumerMember, bool]:
        """The member this heartbeat is about, and whether it is (re)joining; or the error that fences it."""
        static = group.static_member(req.instance_id) if req.instance_id is not None else None
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if static is not None:
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and static.member_id != req.member_id:
                    return _error(ErrorCode.unreleased_instance_id,
                                  f"Static member {req.member_id} with instance id {req.instance_id} cannot join "
                                  f"the group because the instance id is owned by {static.member_id} member.",
                                  req.member_id)
                # KIP-345 in KIP-848: the returning instance takes over the old member's assignment and epoch.
                group.remove_member(static.member_id)
                epoch = static.previous_member_epoch if static.member_epoch < 0 else static.member_epoch
                target = group.target.pop(static.member_id, {})
                group.target[req.member_id] = target
                return replace(static, member_id=req.member_id, member_epoch=epoch, state=MemberState.STABLE,
                               pending_revocation={}, rebalance_deadline_ms=None), False
            if (known := group.members.get(req.member_id)) is not None:
                # KAFKA-19233: a known member rejoining with epoch 0 (after FENCED_MEMBER_EPOCH, or a lost answer)
                # keeps its state; the full answer hands it its current assignment again.
                return known, False
            return ConsumerMember(req.member_id, instance_id=req.instance_id), True
        if req.instance_id is not None and (fenced := _static_error(static, req)) is not None:
            return fenced
        member = group.members.get(req.member_id)
        if member is None:
            return _error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group "
                          f"{req.group_id}.", req.member_id)
        if req.member_epoch > member.member_epoch or (
                req.member_epoch < member.member_epoch
                and (req.member_epoch != member.previous_member_epoch or not is_subset(req.owned, member.assigned))):
            # Kafka's throwIfConsumerGroupMemberEpochIsInvalid: the previous epoch is accepted when the member's
            # answer with the new one may have been lost and it owns nothing it should not.
            which = "greater" if req.member_epoch > member.member_epoch else "smaller"
            return _error(ErrorCode.fenced_member_epoch,
                          f"The consumer group member has a {which} member epoch ({req.member_epoch}) than the one "
                          f"known by the group coordinator ({member.member_epoch}). The member must abandon all "
                          "its partitions and rejoin.", req.member_id)
        return member, False

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, is_new: bool, req: HeartbeatRequest,
                   topics: Mapping[str, int], now_ms: int) -> HeartbeatResult:
        updated = replace(
            member,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(req.subscribed_topic_names) if req.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=(req.subscribed_topic_regex or None) if req.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
            client_id=req.client_id, client_host=req.client_host)
        changed = is_new or (updated.subscribed_topic_names, updated.subscribed_topic_regex,
                             updated.server_assignor, updated.rack_id) != (
            member.subscribed_topic_names, member.subscribed_topic_regex, member.server_assignor, member.rack_id)
        group.set_member(updated)
        if changed or group.subscription_metadata(topics) != group.subscribed_topics:
            group.bump_epoch()
        if group.group_epoch > group.assignment_epoch:
            group.compute_target(topics, self.settings.assignors[0])
            self.rebalances += 1
            if self.on_rebalance is not None:
                self.on_rebalance()
        result = reconcile(updated, group.assignment_epoch, group.target.get(updated.member_id, {}),
                           group.owner_of, req.owned)
        if result.state is MemberState.UNREVOKED_PARTITIONS:
            if updated.state is not MemberState.UNREVOKED_PARTITIONS or updated.rebalance_deadline_ms is None:
                result = replace(result, rebalance_deadline_ms=now_ms + result.rebalance_timeout_ms)
        else:
            result = replace(result, rebalance_deadline_ms=None)
        result = replace(result, session_deadline_ms=now_ms + self.session_timeout_ms(group.group_id))
        group.set_member(result)
        full = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH or (
            req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None and req.owned is not None)
        moved = (result.member_epoch, result.state, result.assigned) != (member.member_epoch, member.state,
                                                                          member.assigned)
        return HeartbeatResult(ErrorCode.none, None, result.member_id, result.member_epoch,
                               self.heartbeat_interval_ms(group.group_id),
                               result.assigned if (full or moved or is_new) else None)

    def _leave(self, group: ConsumerGroup, req: HeartbeatRequest, now_ms: int) -> HeartbeatResult:
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            assert req.instance_id is not None  # validate() refused it
            static = group.static_member(req.instance_id)
            if (fenced := _static_error(static, req)) is not None:
                return fenced
            assert static is not None
            # The slot and its partitions stay until the session times out, for the instance to come back to.
            group.set_member(replace(static, previous_member_epoch=static.member_epoch,
                                     member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                     session_deadline_ms=now_ms + self.session_timeout_ms(group.group_id),
                                     rebalance_deadline_ms=None))
            return HeartbeatResult(ErrorCode.none, None, req.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0)
        if req.member_id not in group.members:
            return _error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group "
                          f"{group.group_id}.", req.member_id)
        self.remove_member(group, req.member_id)
        return HeartbeatResult(ErrorCode.none, None, req.member_id, LEAVE_GROUP_MEMBER_EPOCH, 0)

    def remove_member(self, group: ConsumerGroup, member_id: str) -> None:
        """Drop a member; the group epoch moves so that the others get its partitions on their next heartbeat."""
        if group.remove_member(member_id) is not None:
            group.bump_epoch()

    # ------------------------------------------------------------ timers

    def expire(self, now_ms: int) -> list[tuple[str, str]]:
        """Remove the members whose session expired, or that kept partitions to revoke past their rebalance
        timeout (fenced, as Kafka's consumer-group rebalance timeout does). Returns (group, member) removed."""
        removed = []
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                late = member.rebalance_deadline_ms is not None and member.rebalance_deadline_ms <= now_ms
                if member.session_deadline_ms <= now_ms or late:
                    self.remove_member(group, member.member_id)
                    removed.append((group.group_id, member.member_id))
        return removed

    def next_deadline(self) -> int | None:
        deadlines = [d for g in self.groups.values() for m in g.members.values()
                     for d in (m.session_deadline_ms, m.rebalance_deadline_ms) if d is not None]
        return min(deadlines, default=None)

    # ------------------------------------------------------------ offsets

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                               api_version: int) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetCommit: a non-member (epoch < 0) may commit only to an empty
        group; a member must use OffsetCommit v9+ and its current epoch (older: STALE_MEMBER_EPOCH)."""
        if member_epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if api_version < 9:
            return ErrorCode.unsupported_version
        return self._epoch_error(member_epoch, member.member_epoch)

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int
                              ) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch v9 with a member id and epoch)."""
        if member_epoch < 0 and not member_id:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return self._epoch_error(member_epoch, member.member_epoch)

    @staticmethod
    def _epoch_error(received: int, expected: int) -> ErrorCode | None:
        if received > expected:
            return ErrorCode.fenced_member_epoch
        if received < expected:
            return ErrorCode.stale_member_epoch
        return None


def settings_from(session_timeout_ms: int, heartbeat_interval_ms: int, assignors: str,
                  protocols: str, max_size: int = UNLIMITED_GROUP_SIZE) -> ConsumerGroupSettings:
    """The settings from the broker keys' values (already range-checked by the config)."""
    return ConsumerGroupSettings(session_timeout_ms, heartbeat_interval_ms,
                                 tuple(assignor_names(assignors.split(","))),
                                 "consumer" in {p.strip() for p in protocols.split(",")}, max_size)
