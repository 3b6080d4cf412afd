"""The classic consumer-group coordinator (Kafka's GroupCoordinator) over asyncio.

State lives in `group_state.Group`; this module adds the membership protocol and its waiting (JoinGroup/SyncGroup
answers arrive when the rebalance completes) and the timers (session, rebalance, pending-member and offset expiry,
all read from the injected clock). The group cache, the offsets and their persistence to `__consumer_offsets` are
the GroupMetadataManager's (group_metadata_manager.py); the offset requests' checks are group_offsets.py's, the
admin requests group_admin.py's, the KIP-848 groups consumer/service.py's. Everything runs on one event loop; what
runs after a write's replication checks the group again, as Kafka's storeGroup callbacks do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping

from broker.config import BrokerConfig
from broker.coordinator.consumer.coordinator import HeartbeatRequest, HeartbeatResult
from broker.coordinator.consumer.service import ConsumerGroupService, TopicTable
from broker.coordinator.group_admin import GroupAdmin, GroupDescription, MemberDescription
from broker.coordinator.group_metadata_manager import GroupMetadataManager, OffsetsLog, java_string_hash
from broker.coordinator.group_offsets import GroupOffsets
from broker.coordinator.group_state import Group, GroupState, Member, member_error, new_member_id
from broker.coordinator.pending_answers import JoinResult, PendingAnswers, SyncResult
from broker.errors import ErrorCode, KafkaError
from common.clock import Clock

# Named here too for the coordinator's users: OffsetsLog and java_string_hash are the GroupMetadataManager's,
# JoinResult and SyncResult pending_answers'.
__all__ = ["GroupCoordinator", "GroupDescription", "JoinResult", "MemberDescription", "OffsetsLog", "SyncResult",
           "java_string_hash"]

log = logging.getLogger("broker.coordinator")


class GroupCoordinator:
    """Kafka's classic group coordinator for the groups whose `__consumer_offsets` partition this broker leads.

    `load_partition` / `unload_partition` follow that leadership; requests for any other group get
    NOT_COORDINATOR, so clients look the coordinator up again.
    """

    def __init__(self, config: BrokerConfig, clock: Clock, offsets_log: OffsetsLog,
                 topics: TopicTable | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] | None = None) -> None:
        """`topics` gives every topic's (id, partition count): consumer-protocol group records name topics by id;
        without it those groups are not persisted. `group_configs`: a group's config overrides (KIP-848)."""
        self._config = config
        self._clock = clock
        self.group_manager = GroupMetadataManager(config, clock, offsets_log)
        self.consumer = ConsumerGroupService(config, clock, self.group_manager, offsets_log, topics,  # KIP-848
                                             group_configs)
        self.admin = GroupAdmin(self.group_manager, self.consumer, clock)
        self.offsets = GroupOffsets(self.group_manager, self.consumer, clock)
        self._pending = PendingAnswers()
        self._next_expire = self._now() + config.offsets_retention_check_interval_ms
        self._wakeup = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------ time and partitions

    def _now(self) -> int:
        return int(self._clock.monotonic() * 1000)

    def _wall(self) -> int:
        return self._clock.now_ms()

    def partition_for(self, group_id: str) -> int:
        """The `__consumer_offsets` partition of a group (GroupMetadataManager.partition_for)."""
        return self.group_manager.partition_for(group_id)

    def owns(self, group_id: str) -> bool:
        return self.group_manager.owns(group_id)

    async def replicated(self, group_id: str, commit: bool = False) -> ErrorCode:
        """Wait until the records written for the group's offsets partition so far are in its ISR (the mapped
        error otherwise: GroupMetadataManager.replicated)."""
        return await self.group_manager.replicated(group_id, commit)

    def group_state_counts(self) -> Counter[str]:
        """Groups per state name, for the groups this broker coordinates (NumGroups<State>)."""
        return self.group_manager.group_state_counts()

    def num_offsets(self) -> int:
        """Committed offsets held for the groups this broker coordinates (NumOffsets)."""
        return self.group_manager.num_offsets()

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
        if (consumer_group := self.consumer.group(group_id)) is not None:
            if consumer_group.members:   # Kafka 4 without the online upgrade path
                return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)
            try:
                self.consumer.to_classic(group_id)
            except KafkaError as e:
                return JoinResult(e.code, member_id)
        group = self.group_manager.group(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.unknown_member_id, member_id)
            if not (protocol_type and protocols):
                return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)
            group = self.group_manager.add_group(group_id)
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
        error = member_error(group, member_id, group_instance_id)
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
        old = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, new_member.protocols, new_member.rebalance_timeout_ms,
                            new_member.session_timeout_ms)
        member.last_heartbeat = self._now()
        if group.is_(GroupState.STABLE) and unchanged:
            try:
                self.group_manager.store_group(group)
            except KafkaError as e:
                return self._static_rejoin_failed(group, member, old_member_id, old, e.code)
            answer = self._pending.await_join(group.group_id, member.member_id)
            self._pending.answer_after(self._answer_static_rejoin(group, member, old_member_id, old))
            return answer
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

    async def _answer_static_rejoin(self, group: Group, member: Member, old_member_id: str,
                                    old: tuple[list[tuple[str, bytes]], int, int]) -> None:
        """Kafka's storeGroup callback in updateStaticMemberAndRebalance: the new member id is answered once its
        record is replicated; a failed write puts the old member id back and answers the error."""
        new_member_id = member.member_id   # a failure gives the member its old id back
        error = await self.group_manager.replicated(group.group_id)
        if error == ErrorCode.none:
            result = self._join_result(group, new_member_id, skip_assignment=group.is_leader(new_member_id))
        else:
            result = self._static_rejoin_failed(group, member, old_member_id, old, error)
        self._resolve_join(group, new_member_id, result)

    def _static_rejoin_failed(self, group: Group, member: Member, old_member_id: str,
                              old: tuple[list[tuple[str, bytes]], int, int], error: ErrorCode) -> JoinResult:
        log.warning("group %s: the new member id of static member %s not stored: %s", group.group_id,
                    member.group_instance_id, error.name)
        group.restore_static_member(member, old_member_id, old)
        return JoinResult(error, "", group.generation_id, group.protocol_type, group.protocol_name, group.leader_id or "")

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
        return self._pending.await_join(group.group_id, member.member_id)

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
            try:
                self.group_manager.store_group(group)
            except KafkaError as e:   # as Kafka's onCompleteJoin: no member is left to tell, so a warning
                log.warning("failed to write the empty group metadata of %s: %s", group.group_id, e)
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
        self._pending.resolve_join(group.group_id, member_id, result)

    def _resolve_sync(self, group: Group, member_id: str, result: SyncResult) -> None:
        self._pending.resolve_sync(group.group_id, member_id, result)

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
        group = self.group_manager.group(group_id)
        if group is None:
            return SyncResult(ErrorCode.unknown_member_id)
        if group.is_(GroupState.DEAD):
            return SyncResult(ErrorCode.coordinator_not_available)
        error = member_error(group, member_id, group_instance_id)
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
        fut = self._pending.await_sync(group_id, member_id)
        if group.is_leader(member_id):
            given = dict(assignments)
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            try:
                self.group_manager.store_group(group)
            except KafkaError as e:
                self._assignment_not_stored(group, e.code)
                return fut
            self._pending.answer_after(self._complete_sync_when_stored(group, group.generation_id))
        return fut

    async def _complete_sync_when_stored(self, group: Group, generation_id: int) -> None:
        """Kafka's storeGroup callback in doSyncGroup: the assignment goes out once its record is in the offsets
        partition's ISR, so no member works on an assignment a coordinator failover would lose."""
        error = await self.group_manager.replicated(group.group_id)
        # Another member may have joined meanwhile, or the partition moved: then nothing is left to complete.
        if (self.group_manager.group(group.group_id) is not group or not group.is_(GroupState.COMPLETING_REBALANCE)
                or group.generation_id != generation_id):
            return
        if error != ErrorCode.none:
            return self._assignment_not_stored(group, error)
        self._propagate_assignment(group)
        group.transition_to(GroupState.STABLE, self._wall())

    def _assignment_not_stored(self, group: Group, error: ErrorCode) -> None:
        """Kafka's doSyncGroup on a failed store: every waiting member gets the error and the group rebalances."""
        self._reset_and_propagate_assignment_error(group, error)
        self._maybe_prepare_rebalance(group)
        self._wakeup.set()

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
        group = self.group_manager.group(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = member_error(group, member_id, group_instance_id)
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
        group = self.group_manager.group(group_id)
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
            error = member_error(group, member_id, instance_id)
            if error is not None:
                errors.append(error)
                continue
            self._remove_member_and_update_group(group, group.members[member_id])
            errors.append(ErrorCode.none)
        self._wakeup.set()
        return errors

    def consumer_group_heartbeat(self, req: HeartbeatRequest, topics: Mapping[str, int], api_version: int
                                 ) -> HeartbeatResult:
        """KIP-848 ConsumerGroupHeartbeat (wakes the timers: this member's session); answered once `replicated`."""
        result = self.consumer.heartbeat(req, topics, api_version)
        self._wakeup.set()
        return result

    # ------------------------------------------------------------ offsets (group_offsets.py)

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[tuple[str, int, int, int, str | None]], api_version: int = 9
                       ) -> dict[tuple[str, int], ErrorCode]:
        return self.offsets.commit_offsets(group_id, generation_id, member_id, group_instance_id, offsets,
                                           api_version)

    def txn_offset_commit_error(self, group_id: str, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> ErrorCode | None:
        return self.offsets.txn_offset_commit_error(group_id, generation_id, member_id, group_instance_id)

    def commit_transactional_offsets(self, group_id: str, offsets: list[tuple[str, int, int, int, str | None]]
                                     ) -> None:
        self.offsets.commit_transactional_offsets(group_id, offsets)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None, member_id: str | None = None,
                      member_epoch: int = -1) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        return self.offsets.fetch_offsets(group_id, partitions, member_id, member_epoch)

    # ------------------------------------------------------------ admin (group_admin.py)

    def describe_group(self, group_id: str) -> GroupDescription:
        return self.admin.describe_group(group_id)

    def list_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str]]:
        return self.admin.list_groups(states)

    def list_typed_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        return self.admin.list_typed_groups(states)

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        return self.admin.delete_groups(group_ids)

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        return self.admin.delete_offsets(group_id, partitions)

    def expire(self) -> None:
        """Remove offsets past offsets.retention.minutes (KIP-211 rules) and drop empty groups left without offsets."""
        self.group_manager.expire()
        self.consumer.expire_offsets(self._config.offsets_retention_minutes * 60_000)

    # ------------------------------------------------------------ offsets partitions

    def load(self) -> None:
        """Take over every offsets partition (tests and tools that run one coordinator alone)."""
        for partition in range(self._config.offsets_topic_num_partitions):
            self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """This broker became leader of `__consumer_offsets` partition `partition`: its groups and offsets are
        rebuilt from the log (GroupMetadataManager.load_partition); members waiting in a group it held before
        are told NOT_COORDINATOR."""
        self.consumer.unload_partition(partition)   # they come back as empty groups with their offsets
        self._pending.not_coordinator(self.group_manager.load_partition(partition))
        self.consumer.load_partition(partition)

    def unload_partition(self, partition: int) -> None:
        """Leadership of the offsets partition moved away: forget its groups; waiting members are told
        NOT_COORDINATOR and find the new coordinator."""
        self.consumer.unload_partition(partition)
        self._pending.not_coordinator(self.group_manager.unload_partition(partition))

    # ------------------------------------------------------------ timers

    def tick(self) -> None:
        """Act on every deadline that has passed: sessions, pending members, rebalances, periodic expiry."""
        now = self._now()
        self.consumer.tick()
        for group in self.group_manager.groups():
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
        deadlines = [d for d in (g.next_deadline() for g in self.group_manager.groups()) if d is not None]
        if (consumer_deadline := self.consumer.next_deadline()) is not None:
            deadlines.append(consumer_deadline)
        return min(deadlines + [self._next_expire])

    async def run(self) -> None:
        """Drive the timers until close(); sleeps until the nearest deadline or until a request changes them."""
        while not self._closed:
            pause_ms = 0   # a deadline whose work keeps failing must not spin the loop
            try:
                self.tick()
            except Exception:   # one group's failure must not stop every group's sessions and rebalances
                log.exception("the group coordinator's timers failed; going on")
                pause_ms = 1000
            self._wakeup.clear()
            delay = max(self._next_deadline() - self._now(), pause_ms) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), delay)

    def close(self) -> None:
        """Stop run() and answer every waiting JoinGroup/SyncGroup with NOT_COORDINATOR so clients rediscover."""
        self._closed = True
        self._wakeup.set()
        self._pending.close()
