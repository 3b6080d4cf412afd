"""Consumer-protocol groups beside the classic ones (Kafka 4's group coordinator, KIP-848): the pure
ConsumerGroupCoordinator joined to the GroupMetadataManager that owns the offsets partitions, the committed
offsets and the classic groups. One group id is one kind of group at a time; an empty classic group becomes a
consumer group on its first ConsumerGroupHeartbeat (Kafka's offline upgrade), keeping its offsets."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.config import BrokerConfig
from broker.coordinator.consumer.coordinator import (
    ConsumerGroupCoordinator,
    HeartbeatRequest,
    HeartbeatResult,
    settings_from,
)
from broker.coordinator.consumer.group import ConsumerGroup
from broker.coordinator.consumer.records import METADATA, decode_key, group_records, metadata_hash, restore
from broker.coordinator.group_metadata_manager import GroupMetadataManager, OffsetsLog
from broker.coordinator.group_state import GroupState, OffsetAndMetadata
from broker.coordinator.loading import apply_readable
from broker.coordinator.offsets_schema import OffsetCommitKey, encode_key
from broker.errors import ErrorCode, KafkaError
from common.clock import Clock

log = logging.getLogger("broker.coordinator.consumer")

# Every topic by name: (topic id, partition count). The records name topics by id.
TopicTable = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]


@dataclass
class MemberView:
    """One member as ConsumerGroupDescribe shows it; assignments by topic name."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: dict[str, list[int]]
    target_assignment: dict[str, list[int]]


@dataclass
class ConsumerGroupView:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[MemberView] = field(default_factory=list)


def _sorted(assignment: Mapping[str, frozenset[int]]) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


class ConsumerGroupService:
    """What the handlers and the GroupCoordinator call for consumer-protocol groups."""

    def __init__(self, config: BrokerConfig, clock: Clock, group_manager: GroupMetadataManager,
                 offsets_log: OffsetsLog | None = None, topics: TopicTable | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] | None = None) -> None:
        """Without an offsets log and a topic table (tests of the classic coordinator alone) nothing is persisted.
        `group_configs` gives a group's config overrides (KIP-848)."""
        self._clock = clock
        self._manager = group_manager
        self._log = offsets_log
        self._topics = topics
        self._written: dict[str, dict[bytes, bytes]] = {}   # per group: the records the log holds now
        self.coordinator = ConsumerGroupCoordinator(settings_from(
            config.group_consumer_session_timeout_ms, config.group_consumer_heartbeat_interval_ms,
            config.group_consumer_assignors, config.group_coordinator_rebalance_protocols,
            config.group_consumer_max_size), group_configs)

    @property
    def enabled(self) -> bool:
        return self.coordinator.settings.enabled

    def _now(self) -> int:
        return int(self._clock.monotonic() * 1000)

    def group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id, if this broker coordinates it."""
        return self.coordinator.group(group_id) if self._manager.owns(group_id) else None

    def groups(self) -> list[ConsumerGroup]:
        return list(self.coordinator.groups.values())

    # ------------------------------------------------------------ ConsumerGroupHeartbeat

    def heartbeat(self, req: HeartbeatRequest, topics: Mapping[str, int], api_version: int) -> HeartbeatResult:
        if not self.enabled:
            return HeartbeatResult(ErrorCode.unsupported_version, "The consumer group protocol is not enabled "
                                   "(group.coordinator.rebalance.protocols).", None, -1)
        if not self._manager.owns(req.group_id):
            return HeartbeatResult(ErrorCode.not_coordinator, None, None, -1)
        classic = self._manager.group(req.group_id)
        if classic is not None and req.group_id not in self.coordinator.groups:
            if not (classic.is_(GroupState.EMPTY) or classic.is_(GroupState.DEAD)) or classic.pending_members:
                return HeartbeatResult(ErrorCode.group_id_not_found,
                                       f"Group {req.group_id} is not a consumer group.", None, -1)
            if req.member_epoch == 0 and self.coordinator.validate(req, api_version) is None:
                try:
                    self._convert(req.group_id)
                except KafkaError as e:   # still the empty classic group; the member tries again
                    return HeartbeatResult(e.code, e.message, None, -1)
        result = self.coordinator.heartbeat(req, topics, self._now(), api_version)
        try:
            self._persist(req.group_id)
        except KafkaError as e:   # the member finds the coordinator again and goes on from its epoch
            self._revert(req.group_id)
            return HeartbeatResult(e.code, e.message, None, -1)
        return result

    def _convert(self, group_id: str) -> None:
        """Kafka's offline upgrade: an empty classic group becomes a consumer group with the same offsets. Its
        GroupMetadata record is tombstoned (Kafka's maybeDeleteEmptyClassicGroup), else a reload would bring the
        classic group back once the consumer group is gone."""
        classic = self._manager.drop_converted(group_id)
        group = self.coordinator.create(group_id)
        if classic is not None:
            group.offsets = classic.offsets
        log.info("converted empty classic group %s to a consumer group", group_id)

    def to_classic(self, group_id: str) -> None:
        """An empty consumer group handed back to the classic side (a JoinGroup, a DeleteGroups): only its
        offsets remain, which the classic group then holds. Its records are tombstoned first: a failed write
        raises with the consumer group as it was."""
        written = self._written.get(group_id, {})
        if written and self._log is not None:
            self._manager.write(group_id, [(k, None) for k in written])
        self._written.pop(group_id, None)
        group = self.coordinator.groups.pop(group_id)
        classic = self._manager.add_group(group_id)
        classic.offsets = group.offsets

    # ------------------------------------------------------------ describe

    def describe(self, group_id: str) -> ConsumerGroupView:
        """ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for an unknown or classic group, as Kafka 4 answers."""
        if not self._manager.owns(group_id):
            return ConsumerGroupView(group_id, ErrorCode.not_coordinator)
        group = self.coordinator.group(group_id)
        if group is None:
            kind = "is not a consumer group" if self._manager.group(group_id) is not None else "not found"
            return ConsumerGroupView(group_id, ErrorCode.group_id_not_found, f"Group {group_id} {kind}.")
        members = [MemberView(m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                              list(m.subscribed_topic_names), m.subscribed_topic_regex, _sorted(m.assigned),
                              _sorted(group.target.get(m.member_id, {})))
                   for m in group.members.values()]
        return ConsumerGroupView(group_id, ErrorCode.none, None, group.state.value, group.group_epoch,
                                 group.assignment_epoch, group.assignor, members)

    # ------------------------------------------------------------ offsets

    def commit_error(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                     api_version: int) -> ErrorCode | None:
        """OffsetCommit by a member: its current epoch, v9+ (Kafka's ConsumerGroup.validateOffsetCommit)."""
        return self.coordinator.validate_offset_commit(group, member_id, member_epoch, api_version)

    def delete_offsets(self, group: ConsumerGroup, partitions: list[tuple[str, int]]
                       ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetDelete on a consumer group (Kafka's OffsetMetadataManager.deleteOffsets): a topic the group
        subscribes to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC); any other partition is answered NONE and its
        offset, if there is one, tombstoned."""
        topics = {name: n for name, (_, n) in self._topics().items()} if self._topics is not None else {}
        results: dict[tuple[str, int], ErrorCode] = {}
        deleted = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp[0], topics):
                results[tp] = ErrorCode.group_subscribed_to_topic
                continue
            results[tp] = ErrorCode.none
            if group.offsets.pop(tp, None) is not None:
                deleted.append(tp)
        self._tombstone_offsets(group.group_id, deleted)
        return results

    def _tombstone_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> None:
        if partitions and self._log is not None:
            self._manager.write(group_id, [(encode_key(OffsetCommitKey(group_id, *tp)), None) for tp in partitions],
                                topic_stats=False)

    def expire_offsets(self, retention_ms: int) -> None:
        """Kafka's offset expiry for consumer groups: an offset of a topic the group does not subscribe to (every
        topic, once the group is empty) expires `retention_ms` after its commit; an empty group left without
        offsets is deleted."""
        wall = self._clock.now_ms()
        for group in list(self.coordinator.groups.values()):
            subscribed = set(group.subscribed_topics) if group.members else set()
            expired = [tp for tp, o in group.offsets.items() if tp[0] not in subscribed and (
                wall >= o.expire_timestamp if o.expire_timestamp >= 0 else wall - o.commit_timestamp >= retention_ms)]
            for tp in expired:
                del group.offsets[tp]
            try:
                self._tombstone_offsets(group.group_id, expired)
            except KafkaError as e:   # as Kafka's expiry: logged; a reload brings them back to expire again
                log.error("failed to write %d offset tombstones for group %s: %s", len(expired), group.group_id, e)
            if not group.members and not group.offsets:
                del self.coordinator.groups[group.group_id]
                self._persist_logged(group.group_id)
                log.info("consumer group %s expired (empty, no offsets left)", group.group_id)

    # ------------------------------------------------------------ timers and partitions

    def tick(self) -> None:
        for group_id, member_id in self.coordinator.expire(self._now()):
            log.info("member %s of consumer group %s removed (session or rebalance timeout)", member_id, group_id)
            self._persist_logged(group_id)

    def next_deadline(self) -> int | None:
        return self.coordinator.next_deadline()

    def unload_partition(self, partition: int) -> None:
        """Offsets partition moved away: forget its consumer groups (members find the new coordinator)."""
        for group_id in [g for g in self.coordinator.groups if self._manager.partition_for(g) == partition]:
            del self.coordinator.groups[group_id]
            self._written.pop(group_id, None)

    # ------------------------------------------------------------ __consumer_offsets

    def _persist(self, group_id: str) -> None:
        """Append what changed in the group's records since the last write (tombstones for what went away)."""
        if self._log is None or self._topics is None:
            return
        group = self.coordinator.groups.get(group_id)
        ids = {name: topic_id for name, (topic_id, _) in self._topics().items()}
        now = group_records(group, ids) if group is not None else {}
        before = self._written.get(group_id, {})
        records: list[tuple[bytes, bytes | None]] = [(k, v) for k, v in now.items() if before.get(k) != v]
        records += [(k, None) for k in before if k not in now]
        if records:
            self._manager.write(group_id, records)
        if now:
            self._written[group_id] = now
        else:
            self._written.pop(group_id, None)

    def _persist_logged(self, group_id: str) -> None:
        """`_persist` from a timer, where no request waits for the outcome: a failed write is logged, and what it
        held stays unwritten, so the group's next write carries it."""
        try:
            self._persist(group_id)
        except KafkaError as e:
            log.warning("failed to write the records of consumer group %s: %s", group_id, e)

    def load_partition(self, partition: int) -> None:
        """Rebuild the consumer groups of an offsets partition this broker now leads (after the GroupMetadataManager
        loaded its offsets): members come back with their epochs and assignments and a fresh session, so clients
        go on heartbeating; offsets move from the classic holder the manager made to the consumer group."""
        if self._log is None or self._topics is None:
            return
        latest: dict[str, dict[tuple[int, str | None], bytes]] = {}

        def apply(raw_key: bytes, raw_value: bytes | None) -> None:
            key = decode_key(raw_key)
            if key is None:
                return
            kind, group_id, member = key
            values = latest.setdefault(group_id, {})
            if raw_value is None:
                values.pop((kind, member), None)
            else:
                values[(kind, member)] = raw_value

        apply_readable(self._log.read(partition), apply, f"__consumer_offsets-{partition}")
        for group_id, values in latest.items():
            if (METADATA, None) not in values:
                continue   # deleted: only tombstones, or members without a group record
            holder = self._manager.group(group_id)   # the offsets the manager loaded move to the consumer group
            group = self._rebuild(group_id, values, holder.offsets if holder is not None else {},
                                  f"__consumer_offsets-{partition}")
            if group is not None:
                self._manager.forget(group_id)
                log.info("loaded consumer group %s at epoch %d with %d members", group_id, group.group_epoch,
                         len(group.members))

    def _rebuild(self, group_id: str, values: Mapping[tuple[int, str | None], bytes],
                 offsets: dict[tuple[str, int], OffsetAndMetadata], where: str) -> ConsumerGroup | None:
        """Install the group its records describe, with `offsets`: members get a fresh session, so clients go on
        heartbeating. None (and nothing installed) if a record is damaged."""
        assert self._topics is not None
        table = self._topics()
        names = {topic_id: name for name, (topic_id, _) in table.items()}
        try:
            group, stored_hash = restore(group_id, values, names, self.coordinator.settings.assignors[0])
        except ValueError as e:   # a damaged record: the group is left out, its offsets stay classic-held
            log.warning("consumer group %s not loaded from %s: %s", group_id, where, e)
            return None
        group.assignor = group.preferred_assignor(self.coordinator.settings.assignors[0])
        current = group.subscription_metadata({name: n for name, (_, n) in table.items()})
        # Unchanged topics: no rebalance on load; changed (or unknown) ones: the next heartbeat bumps the epoch.
        group.subscribed_topics = current if metadata_hash(current) == stored_hash else {}
        now = self._now()
        for m in group.members.values():
            m.session_deadline_ms = now + self.coordinator.session_timeout_ms(group_id)
        group.offsets = offsets
        self.coordinator.groups[group_id] = group
        self._written[group_id] = group_records(group, {n: i for n, (i, _) in table.items()})
        return group

    def _revert(self, group_id: str) -> None:
        """As Kafka's CoordinatorRuntime undoes a write that failed: the group goes back to what its records hold
        (a member that joined is gone again, an epoch bump undone), so the client's retry meets the state it
        knows. Otherwise every failed join would leave a member that no client heartbeats for, holding
        partitions until its session expires. The offsets are kept: commits are written on their own."""
        group = self.coordinator.groups.pop(group_id, None)
        offsets = group.offsets if group is not None else {}
        written = self._written.get(group_id)
        if not written or self._topics is None:   # a group its first write would have made: a classic holder again
            if offsets:
                self._manager.add_group(group_id).offsets = offsets
            return
        values: dict[tuple[int, str | None], bytes] = {}
        for raw_key, value in written.items():
            key = decode_key(raw_key)
            assert key is not None   # written by group_records
            values[(key[0], key[2])] = value
        rebuilt = self._rebuild(group_id, values, offsets, "its last write")
        if rebuilt is None:
            if offsets:
                self._manager.add_group(group_id).offsets = offsets
            return
        for m in rebuilt.members.values():   # sessions run on: a revert must not keep a silent member alive
            if group is not None and (was := group.members.get(m.member_id)) is not None:
                m.session_deadline_ms = was.session_deadline_ms
