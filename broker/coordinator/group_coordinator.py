"""The classic consumer-group coordinator (Kafka's GroupCoordinator + GroupMetadataManager) over asyncio.

State lives in `group_state.Group`; this module adds the waiting (JoinGroup/SyncGroup answers arrive when the
rebalance completes), the timers (session, rebalance, pending-member and offset expiry, all read from the injected
clock) and persistence to `__consumer_offsets` through an `OffsetsLog`. Everything runs on one event loop, so no
method awaits between reading and changing a group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from broker.clock import Clock
from broker.config import BrokerConfig
from broker.coordinator.group_state import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    GroupState,
    Member,
    OffsetAndMetadata,
    new_member_id,
)
from broker.coordinator.offsets_schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
)
from broker.errors import ErrorCode, KafkaError

log = logging.getLogger("broker.coordinator")

# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096


class OffsetsLog(Protocol):
    """The `__consumer_offsets` topic as the coordinator sees it; the broker implements it over the real log."""

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], topic_stats: bool = True) -> None:
        """Append one batch of keyed records (value None = tombstone), synchronously; `topic_stats` False: not
        counted in BrokerTopicMetrics (Kafka's cleanup writes bypass ReplicaManager)."""

    def read(self, partition: int) -> Iterable[tuple[bytes, bytes | None]]:
        """Every record currently in the partition, in offset order."""


@dataclass
class JoinResult:
    """A JoinGroup answer. `members` (member_id, group_instance_id, metadata) is filled for the leader only."""

    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription] = field(default_factory=list)


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


class GroupCoordinator:
    """Kafka's classic group coordinator for the groups whose `__consumer_offsets` partition this broker leads.

    `load_partition` / `unload_partition` follow that leadership; requests for any other group get
    NOT_COORDINATOR, so clients look the coordinator up again.
    """

    def __init__(self, config: BrokerConfig, clock: Clock, offsets_log: OffsetsLog) -> None:
        self._config = config
        self._clock = clock
        self._log = offsets_log
        self._groups: dict[str, Group] = {}
        self._owned: set[int] = set()
        self._join_waiters: dict[tuple[str, str], asyncio.Future[JoinResult]] = {}
        self._sync_waiters: dict[tuple[str, str], asyncio.Future[SyncResult]] = {}
        self._next_expire = self._now() + config.offsets_retention_check_interval_ms
        self._wakeup = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------ time and partitions

    def _now(self) -> int:
        return int(self._clock.monotonic() * 1000)

    def _wall(self) -> int:
        return self._clock.now_ms()

    def partition_for(self, group_id: str) -> int:
        """Kafka: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions, where abs(Integer.MIN_VALUE) is 0."""
        h = java_string_hash(group_id)
        return (0 if h == -(1 << 31) else abs(h)) % self._config.offsets_topic_num_partitions

    def owns(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned

    # ------------------------------------------------------------ JoinGroup

    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        """Join (or rejoin) and wait until the rebalance completes. v4+ callers pass require_known_member_id."""
        outcome = self._join(group_id, member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                             rebalance_timeout_ms, protocol_type, protocols, require_known_member_id)
        self._wakeup.set()
        if isinstance(outcome, JoinResult):
            return outcome
        return await outcome

    def _join(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
              session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
              protocols: list[tuple[str, bytes]], require_known_member_id: bool
              ) -> JoinResult | asyncio.Future[JoinResult]:
        if not group_id:
            return JoinResult(ErrorCode.invalid_group_id, member_id)
        if not self.owns(group_id):
            return JoinResult(ErrorCode.not_coordinator, member_id)
        if not (self._config.group_min_session_timeout_ms <= session_timeout_ms
                <= self._config.group_max_session_timeout_ms):
            return JoinResult(ErrorCode.invalid_session_timeout, member_id)
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.unknown_member_id, member_id)
            if not (protocol_type and protocols):
                return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)
            group = self._groups[group_id] = Group(group_id, state_timestamp=self._wall())
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.coordinator_not_available, member_id)
        if not group.supports_protocols(protocol_type, (name for name, _ in protocols)):
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)

        new_member = Member(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                            session_timeout_ms, protocol_type, list(protocols))
        if not member_id:
            new_member.member_id = new_member_id(client_id)
            if group_instance_id is not None:
                return self._join_static(group, new_member)
            if require_known_member_id:
                # KIP-394: hand out the id first; the member counts as pending until it rejoins with it.
                group.add_pending_member(new_member.member_id, self._now() + session_timeout_ms)
                return JoinResult(ErrorCode.member_id_required, new_member.member_id)
            return self._add_member_and_rebalance(group, new_member)

        if member_id in group.pending_members:
            return self._add_member_and_rebalance(group, new_member)
        error = self._member_error(group, member_id, group_instance_id)
        if error is not None:
            return JoinResult(error, member_id)
        member = group.members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, new_member)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # It probably lost the first answer: repeat the current generation's.
                return self._join_result(group, member_id)
            return self._update_member_and_rebalance(group, member, new_member)
        if group.is_(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                return self._update_member_and_rebalance(group, member, new_member)
            return self._join_result(group, member_id)
        return JoinResult(ErrorCode.unknown_member_id, member_id)

    def _join_static(self, group: Group, new_member: Member) -> JoinResult | asyncio.Future[JoinResult]:
        """KIP-345: a known group.instance.id takes over its old member id; unchanged metadata skips the rebalance."""
        instance_id = new_member.group_instance_id
        assert instance_id is not None
        old_member_id = group.static_member_id(instance_id)
        if old_member_id is None:
            return self._add_member_and_rebalance(group, new_member)
        self._fence(group, old_member_id)
        member = group.replace_static_member(instance_id, old_member_id, new_member.member_id)
        unchanged = member.matches(new_member.protocols)
        group.update_member(member, new_member.protocols, new_member.rebalance_timeout_ms,
                            new_member.session_timeout_ms)
        member.last_heartbeat = self._now()
        if group.is_(GroupState.STABLE) and unchanged:
            self._store_group(group)
            is_leader = group.is_leader(member.member_id)
            return self._join_result(group, member.member_id, skip_assignment=is_leader)
        fut = self._await_join(group, member)
        if not group.is_(GroupState.PREPARING_REBALANCE):
            self._prepare_rebalance(group)
        self._try_complete_join(group)
        return fut

    def _fence(self, group: Group, old_member_id: str) -> None:
        fenced = group.members[old_member_id]
        if fenced.awaiting_join:
            fenced.awaiting_join = False
            self._resolve_join(group, old_member_id, JoinResult(ErrorCode.fenced_instance_id, old_member_id))
        if fenced.awaiting_sync:
            fenced.awaiting_sync = False
            self._resolve_sync(group, old_member_id, SyncResult(ErrorCode.fenced_instance_id))

    def _add_member_and_rebalance(self, group: Group, member: Member) -> asyncio.Future[JoinResult]:
        member.is_new = True
        member.last_heartbeat = self._now()
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        fut = self._await_join(group, member)
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)
        return fut

    def _update_member_and_rebalance(self, group: Group, member: Member, joined: Member
                                     ) -> asyncio.Future[JoinResult]:
        group.update_member(member, joined.protocols, joined.rebalance_timeout_ms, joined.session_timeout_ms)
        member.last_heartbeat = self._now()
        fut = self._await_join(group, member)
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)
        return fut

    def _await_join(self, group: Group, member: Member) -> asyncio.Future[JoinResult]:
        member.awaiting_join = True
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self._join_waiters[(group.group_id, member.member_id)] = fut
        return fut

    def _join_result(self, group: Group, member_id: str, skip_assignment: bool = False) -> JoinResult:
        members = []
        if group.is_leader(member_id) and group.protocol_name is not None:
            members = [(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                       for m in group.members.values()]
        return JoinResult(ErrorCode.none, member_id, group.generation_id, group.protocol_type, group.protocol_name,
                          group.leader_id or "", members, skip_assignment)

    # ------------------------------------------------------------ rebalance

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: Group) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        now = self._now()
        if group.is_(GroupState.EMPTY):
            # Kafka's InitialDelayedJoin: give other members of a new group time to arrive.
            delay = self._config.group_initial_rebalance_delay_ms
            group.initial_delay = True
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            group.join_deadline = now + delay
        else:
            group.initial_delay = False
            group.join_deadline = now + group.rebalance_timeout_ms()
        log.info("preparing to rebalance group %s in state %s with old generation %d (%d members)",
                 group.group_id, group.state.value, group.generation_id, len(group.members))
        group.transition_to(GroupState.PREPARING_REBALANCE, self._wall())

    def _try_complete_join(self, group: Group) -> None:
        """Complete the join when everyone is in (never early during the initial delay), or when it is due."""
        if not group.is_(GroupState.PREPARING_REBALANCE) or group.join_deadline is None:
            return
        if self._now() >= group.join_deadline:
            self._join_deadline_reached(group)
        elif not group.initial_delay and group.has_all_members_joined():
            self._complete_join(group)

    def _join_deadline_reached(self, group: Group) -> None:
        if group.initial_delay and group.new_member_added and group.initial_delay_remaining_ms > 0:
            delay = min(self._config.group_initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms = max(
                group.initial_delay_remaining_ms - self._config.group_initial_rebalance_delay_ms, 0)
            group.new_member_added = False
            group.join_deadline = self._now() + delay
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, start the next generation."""
        group.join_deadline = None
        group.initial_delay = False
        for m in group.not_yet_rejoined_members():
            if m.group_instance_id is None:
                self._drop_member(group, m)
        group.maybe_elect_joined_leader()
        group.init_next_generation(self._wall())
        log.info("stabilized group %s generation %d (%d members, leader %s)", group.group_id, group.generation_id,
                 len(group.members), group.leader_id)
        if group.is_(GroupState.EMPTY):
            self._store_group(group)
            return
        now = self._now()
        for m in group.members.values():
            if m.awaiting_join:
                m.awaiting_join = False
                self._resolve_join(group, m.member_id, self._join_result(group, m.member_id))
            m.is_new = False
            m.last_heartbeat = now

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for m in group.members.values():
            m.assignment = b""
            if m.awaiting_sync:
                m.awaiting_sync = False
                self._resolve_sync(group, m.member_id, SyncResult(error))

    def _drop_member(self, group: Group, member: Member) -> None:
        """Remove a member without triggering anything; its pending requests learn it is gone."""
        log.info("removing member %s from group %s in state %s", member.member_id, group.group_id,
                 group.state.value)
        if member.awaiting_join:
            member.awaiting_join = False
            self._resolve_join(group, member.member_id, JoinResult(ErrorCode.unknown_member_id, member.member_id))
        if member.awaiting_sync:
            member.awaiting_sync = False
            self._resolve_sync(group, member.member_id, SyncResult(ErrorCode.unknown_member_id))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        self._drop_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _remove_pending_member(self, group: Group, member_id: str) -> None:
        group.pending_members.pop(member_id, None)
        self._try_complete_join(group)

    def _resolve_join(self, group: Group, member_id: str, result: JoinResult) -> None:
        fut = self._join_waiters.pop((group.group_id, member_id), None)
        if fut is not None and not fut.done():
            fut.set_result(result)

    def _resolve_sync(self, group: Group, member_id: str, result: SyncResult) -> None:
        fut = self._sync_waiters.pop((group.group_id, member_id), None)
        if fut is not None and not fut.done():
            fut.set_result(result)

    def _member_error(self, group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        problem = group.validate_member(member_id, group_instance_id)
        if problem == "fenced":
            return ErrorCode.fenced_instance_id
        if problem == "unknown":
            return ErrorCode.unknown_member_id
        return None

    # ------------------------------------------------------------ SyncGroup, Heartbeat, LeaveGroup

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: list[tuple[str, bytes]]) -> SyncResult:
        """Followers wait for the leader's assignments; the leader's SyncGroup persists and distributes them."""
        outcome = self._sync(group_id, generation_id, member_id, group_instance_id, protocol_type, protocol_name,
                             assignments)
        if isinstance(outcome, SyncResult):
            return outcome
        return await outcome

    def _sync(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
              protocol_type: str | None, protocol_name: str | None, assignments: list[tuple[str, bytes]]
              ) -> SyncResult | asyncio.Future[SyncResult]:
        if not self.owns(group_id):
            return SyncResult(ErrorCode.not_coordinator)
        group = self._groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.unknown_member_id)
        if group.is_(GroupState.DEAD):
            return SyncResult(ErrorCode.coordinator_not_available)
        error = self._member_error(group, member_id, group_instance_id)
        if error is not None:
            return SyncResult(error)
        if generation_id != group.generation_id:
            return SyncResult(ErrorCode.illegal_generation)
        if ((protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol_name)):
            return SyncResult(ErrorCode.inconsistent_group_protocol)
        if group.is_(GroupState.EMPTY):
            return SyncResult(ErrorCode.unknown_member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.rebalance_in_progress)
        member = group.members[member_id]
        member.last_heartbeat = self._now()
        if group.is_(GroupState.STABLE):
            return SyncResult(ErrorCode.none, member.assignment, group.protocol_type, group.protocol_name)
        member.awaiting_sync = True
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._sync_waiters[(group_id, member_id)] = fut
        if group.is_leader(member_id):
            given = dict(assignments)
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            self._store_group(group)
            self._propagate_assignment(group)
            group.transition_to(GroupState.STABLE, self._wall())
        return fut

    def _propagate_assignment(self, group: Group) -> None:
        now = self._now()
        for m in group.members.values():
            if m.awaiting_sync:
                m.awaiting_sync = False
                self._resolve_sync(group, m.member_id,
                                   SyncResult(ErrorCode.none, m.assignment, group.protocol_type, group.protocol_name))
            m.last_heartbeat = now

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode:
        """Keep a member alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
        if not self.owns(group_id):
            return ErrorCode.not_coordinator
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = self._member_error(group, member_id, group_instance_id)
        if error is not None:
            return error
        if group.is_(GroupState.EMPTY):
            return ErrorCode.unknown_member_id
        if group.is_(GroupState.PREPARING_REBALANCE):
            group.members[member_id].last_heartbeat = self._now()
            return ErrorCode.rebalance_in_progress
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        group.members[member_id].last_heartbeat = self._now()
        return ErrorCode.none

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        """Remove members (member_id, group_instance_id); an empty member id with an instance id removes that
        static member (KIP-345 admin removal). One error per member, in order."""
        if not self.owns(group_id):
            return [ErrorCode.not_coordinator for _ in members]
        group = self._groups.get(group_id)
        if group is None:
            return [ErrorCode.unknown_member_id for _ in members]
        if group.is_(GroupState.DEAD):
            return [ErrorCode.coordinator_not_available for _ in members]
        errors = []
        for member_id, instance_id in members:
            if instance_id is None and member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
                errors.append(ErrorCode.none)
                continue
            if not member_id and instance_id is not None:
                member_id = group.static_member_id(instance_id) or ""
            error = self._member_error(group, member_id, instance_id)
            if error is not None:
                errors.append(error)
                continue
            self._remove_member_and_update_group(group, group.members[member_id])
            errors.append(ErrorCode.none)
        self._wakeup.set()
        return errors

    # ------------------------------------------------------------ offsets

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[tuple[str, int, int, int, str | None]]) -> dict[tuple[str, int], ErrorCode]:
        """Commit (topic, partition, offset, leader_epoch, metadata) tuples. Consumers without group management
        (assign()) commit with generation -1 and an empty member id, accepted while the group has no members."""
        def all_(error: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {(t, p): error for t, p, *_ in offsets}

        if not self.owns(group_id):
            return all_(ErrorCode.not_coordinator)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.illegal_generation)
            group = self._groups[group_id] = Group(group_id, state_timestamp=self._wall())
        if group.is_(GroupState.DEAD):
            return all_(ErrorCode.coordinator_not_available)
        if not (generation_id < 0 and group.is_(GroupState.EMPTY)):
            if group.is_(GroupState.COMPLETING_REBALANCE):
                return all_(ErrorCode.rebalance_in_progress)
            error = self._member_error(group, member_id, group_instance_id)
            if error is not None:
                return all_(error)
            if generation_id != group.generation_id:
                return all_(ErrorCode.illegal_generation)
            group.members[member_id].last_heartbeat = self._now()

        wall = self._wall()
        results: dict[tuple[str, int], ErrorCode] = {}
        records: list[tuple[bytes, bytes | None]] = []
        accepted: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic, partition, offset, leader_epoch, metadata in offsets:
            meta = metadata or ""
            if len(meta.encode()) > OFFSET_METADATA_MAX_BYTES:
                results[(topic, partition)] = ErrorCode.offset_metadata_too_large
                continue
            committed = OffsetAndMetadata(offset, leader_epoch, meta, wall)
            accepted[(topic, partition)] = committed
            records.append((encode_key(OffsetCommitKey(group_id, topic, partition)),
                            encode_offset_commit_value(OffsetCommitValue(offset, meta, wall, leader_epoch))))
            results[(topic, partition)] = ErrorCode.none
        if records:
            self._log.append(self.partition_for(group_id), records)
            group.offsets.update(accepted)
        return results

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        """(offset, leader_epoch, metadata) per partition; None asks for all; unknown ones get (-1, -1, "").

        Raises NOT_COORDINATOR for a group this broker does not coordinate."""
        if not self.owns(group_id):
            raise KafkaError(ErrorCode.not_coordinator)
        group = self._groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return {tp: (o.offset, o.leader_epoch, o.metadata) for tp, o in stored.items()}
        out: dict[tuple[str, int], tuple[int, int, str | None]] = {}
        for tp in partitions:
            o = stored.get(tp)
            out[tp] = (o.offset, o.leader_epoch, o.metadata) if o is not None else (-1, -1, "")
        return out

    # ------------------------------------------------------------ admin

    def describe_group(self, group_id: str) -> GroupDescription:
        """Kafka's GroupSummary: metadata/assignments and the protocol only while Stable; unknown groups are Dead."""
        if not self.owns(group_id):
            return GroupDescription(group_id, ErrorCode.not_coordinator, GroupState.DEAD.value, "", "")
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.none, GroupState.DEAD.value, "", "")
        stable = group.is_(GroupState.STABLE) and group.protocol_name is not None
        members = [
            MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                              m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                              m.assignment if stable else b"")
            for m in group.members.values()
        ]
        return GroupDescription(group_id, ErrorCode.none, group.state.value, group.protocol_type or "",
                                (group.protocol_name or "") if stable else "", members)

    def list_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state) for every group, optionally filtered by state name (case-insensitive)."""
        wanted = {s.lower() for s in states} if states else None
        return [(g.group_id, g.protocol_type or "", g.state.value) for g in self._groups.values()
                if wanted is None or g.state.value.lower() in wanted]

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Delete empty groups with their offsets (tombstones); NON_EMPTY_GROUP while members remain."""
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if not self.owns(group_id):
                results[group_id] = ErrorCode.not_coordinator
            elif group is None or group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.group_id_not_found
            elif not group.is_(GroupState.EMPTY):
                results[group_id] = ErrorCode.non_empty_group
            else:
                group.transition_to(GroupState.DEAD, self._wall())
                self._cleanup(group, list(group.offsets))
                results[group_id] = ErrorCode.none
        return results

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: refuse topics the consumer group still subscribes to (GROUP_SUBSCRIBED_TO_TOPIC)."""
        if not self.owns(group_id):
            return ErrorCode.not_coordinator, {}
        group = self._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.group_id_not_found, {}
        results: dict[tuple[str, int], ErrorCode] = {}
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = []
            for tp in partitions:
                if group.members and group.is_subscribed_to_topic(tp[0]):
                    results[tp] = ErrorCode.group_subscribed_to_topic
                else:
                    eligible.append(tp)
        elif group.is_(GroupState.EMPTY):
            eligible = list(partitions)
        else:
            return ErrorCode.non_empty_group, {}
        self._cleanup(group, eligible)
        results.update({tp: ErrorCode.none for tp in eligible})
        return ErrorCode.none, results

    def expire(self) -> None:
        """Remove offsets past offsets.retention.minutes (KIP-211 rules) and drop empty groups left without offsets."""
        wall = self._wall()
        retention_ms = self._config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            self._cleanup(group, group.expired_offsets(wall, retention_ms))

    def _cleanup(self, group: Group, partitions: list[tuple[str, int]]) -> None:
        """Kafka's cleanupGroupMetadata: tombstone the removed offsets; an empty group left with no offsets dies."""
        records: list[tuple[bytes, bytes | None]] = []
        for topic, partition in partitions:
            if group.offsets.pop((topic, partition), None) is not None:
                records.append((encode_key(OffsetCommitKey(group.group_id, topic, partition)), None))
        if group.is_(GroupState.EMPTY) and not group.offsets and not group.pending_members:
            group.transition_to(GroupState.DEAD, self._wall())
        if group.is_(GroupState.DEAD):
            # As Kafka: no group metadata tombstone at generation 0 (a group that only stored offsets), so readers
            # of __consumer_offsets that delete a group on that tombstone keep it, as they do on Kafka.
            if group.generation_id > 0:
                records.append((encode_key(GroupMetadataKey(group.group_id)), None))
            del self._groups[group.group_id]
        if records:
            self._log.append(self.partition_for(group.group_id), records, topic_stats=False)

    # ------------------------------------------------------------ persistence

    def _store_group(self, group: Group) -> None:
        """Persist the group as GroupMetadataValue v3 (after a completed rebalance or when it becomes empty)."""
        protocol = group.protocol_name
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp,
            members=[MemberMetadata(m.member_id, m.client_id, m.client_host, m.session_timeout_ms,
                                    m.metadata(protocol) if protocol else b"", m.assignment,
                                    m.group_instance_id, m.rebalance_timeout_ms)
                     for m in group.members.values()],
        )
        self._log.append(self.partition_for(group.group_id),
                         [(encode_key(GroupMetadataKey(group.group_id)), encode_group_metadata_value(value))])

    def load(self) -> None:
        """Take over every offsets partition (tests and tools that run one coordinator alone)."""
        for partition in range(self._config.offsets_topic_num_partitions):
            self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """This broker became leader of `__consumer_offsets` partition `partition`: rebuild its groups and
        offsets from the log. Groups come back Empty with their generation; members are not live any more, so
        a group that had members counts as empty from now (offset retention)."""
        metadata: dict[str, GroupMetadataValue] = {}
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        for raw_key, raw_value in self._log.read(partition):
            key = decode_key(raw_key)
            if isinstance(key, OffsetCommitKey):
                group_offsets = offsets.setdefault(key.group, {})
                if raw_value is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    v = decode_offset_commit_value(raw_value)
                    group_offsets[(key.topic, key.partition)] = OffsetAndMetadata(
                        v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp)
            elif isinstance(key, GroupMetadataKey):
                if raw_value is None:
                    metadata.pop(key.group, None)
                else:
                    metadata[key.group] = decode_group_metadata_value(raw_value)
        self._drop_groups(partition)
        self._owned.add(partition)
        wall = self._wall()
        for group_id in sorted(set(metadata) | {g for g, o in offsets.items() if o}):
            group = Group(group_id, state_timestamp=wall, offsets=offsets.get(group_id, {}))
            meta = metadata.get(group_id)
            if meta is not None:
                group.protocol_type = meta.protocol_type or None
                group.generation_id = meta.generation
                if not meta.members and meta.current_state_timestamp >= 0:
                    group.state_timestamp = meta.current_state_timestamp
            self._groups[group_id] = group

    def unload_partition(self, partition: int) -> None:
        """Leadership of the offsets partition moved away: forget its groups; waiting members are told
        NOT_COORDINATOR and find the new coordinator."""
        self._owned.discard(partition)
        self._drop_groups(partition)

    def _drop_groups(self, partition: int) -> None:
        for group_id in [g for g in self._groups if self.partition_for(g) == partition]:
            del self._groups[group_id]
            for key in [k for k in self._join_waiters if k[0] == group_id]:
                fut = self._join_waiters.pop(key)
                if not fut.done():
                    fut.set_result(JoinResult(ErrorCode.not_coordinator, key[1]))
            for key in [k for k in self._sync_waiters if k[0] == group_id]:
                fut = self._sync_waiters.pop(key)
                if not fut.done():
                    fut.set_result(SyncResult(ErrorCode.not_coordinator))

    # ------------------------------------------------------------ timers

    def tick(self) -> None:
        """Act on every deadline that has passed: sessions, pending members, rebalances, periodic expiry."""
        now = self._now()
        for group in list(self._groups.values()):
            for member_id in group.expired_pending_members(now):
                self._remove_pending_member(group, member_id)
            for member in group.expired_members(now):
                # Removing one member may complete a rebalance, which refreshes the others' sessions.
                if group.members.get(member.member_id) is member and member.session_expired(now):
                    self._remove_member_and_update_group(group, member)
            self._try_complete_join(group)
        if now >= self._next_expire:
            self.expire()
            self._next_expire = now + self._config.offsets_retention_check_interval_ms

    def _next_deadline(self) -> int:
        deadlines = [d for d in (g.next_deadline() for g in self._groups.values()) if d is not None]
        return min(deadlines + [self._next_expire])

    async def run(self) -> None:
        """Drive the timers until close(); sleeps until the nearest deadline or until a request changes them."""
        while not self._closed:
            self.tick()
            self._wakeup.clear()
            delay = max(self._next_deadline() - self._now(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), delay)

    def close(self) -> None:
        """Stop run() and answer every waiting JoinGroup/SyncGroup with NOT_COORDINATOR so clients rediscover."""
        self._closed = True
        self._wakeup.set()
        for key, fut in list(self._join_waiters.items()):
            if not fut.done():
                fut.set_result(JoinResult(ErrorCode.not_coordinator, key[1]))
        for fut in self._sync_waiters.values():
            if not fut.done():
                fut.set_result(SyncResult(ErrorCode.not_coordinator))
        self._join_waiters.clear()
        self._sync_waiters.clear()
