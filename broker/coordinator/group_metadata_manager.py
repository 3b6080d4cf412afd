"""Kafka's GroupMetadataManager: the groups of the `__consumer_offsets` partitions this broker leads, their
committed offsets, and their persistence (group metadata and offset commit records, loaded back on leadership,
tombstoned on expiry and deletion). The membership protocol is the GroupCoordinator's (group_coordinator.py).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from broker.config import BrokerConfig
from broker.coordinator.group_state import Group, GroupState, OffsetAndMetadata
from broker.coordinator.loading import apply_readable
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
from common.clock import Clock

log = logging.getLogger("broker.coordinator")

# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096
# A failed append of a coordinator's records, as Kafka answers it (GroupMetadataManager.storeGroup; the new
# coordinator's GroupCoordinatorService.normalizeException maps the same way).
_STORE_ERRORS: dict[ErrorCode, ErrorCode] = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}
# storeOffsets differs in what too large a commit is, and keeps a timeout as it is.
_COMMIT_ERRORS: dict[ErrorCode, ErrorCode] = {**{k: v for k, v in _STORE_ERRORS.items() if k != ErrorCode.request_timed_out},
                  ErrorCode.message_too_large: ErrorCode.invalid_commit_offset_size,
                  ErrorCode.record_list_too_large: ErrorCode.invalid_commit_offset_size}

TopicPartition = tuple[str, int]


class OffsetsHolder(Protocol):
    """A group whose offsets are stored: a classic Group, or a consumer-protocol group (KIP-848)."""

    group_id: str
    offsets: dict[tuple[str, int], OffsetAndMetadata]


class OffsetsLog(Protocol):
    """The `__consumer_offsets` topic as the coordinator sees it; the broker implements it over the real log."""

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], topic_stats: bool = True) -> None:
        """Append one batch of keyed records (value None = tombstone), synchronously; `topic_stats` False: not
        counted in BrokerTopicMetrics (Kafka's cleanup writes bypass ReplicaManager)."""

    def read(self, partition: int) -> Iterable[tuple[bytes, bytes | None]]:
        """Every record currently in the partition, in offset order."""

    async def replicated(self, partition: int) -> ErrorCode:
        """Wait until everything appended to the partition so far is in its ISR's logs (offsets.commit.timeout.ms
        at most): NONE, or why not (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT)."""


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The internal-topic partition that owns a group id or transactional id: Kafka's
    Utils.abs(key.hashCode) % partitions, where abs(Integer.MIN_VALUE) is 0 (GroupMetadataManager and
    TransactionStateManager.partitionFor)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def offsets_view(stored: dict[TopicPartition, OffsetAndMetadata], partitions: list[TopicPartition] | None
                 ) -> dict[TopicPartition, tuple[int, int, str | None]]:
    """(offset, leader_epoch, metadata) per partition; None asks for all; unknown ones get (-1, -1, "")."""
    if partitions is None:
        return {tp: (o.offset, o.leader_epoch, o.metadata) for tp, o in stored.items()}
    out: dict[TopicPartition, tuple[int, int, str | None]] = {}
    for tp in partitions:
        o = stored.get(tp)
        out[tp] = (o.offset, o.leader_epoch, o.metadata) if o is not None else (-1, -1, "")
    return out


class GroupMetadataManager:
    """The group cache of the owned offsets partitions, and every read and write of `__consumer_offsets`."""

    def __init__(self, config: BrokerConfig, clock: Clock, offsets_log: OffsetsLog) -> None:
        self._config = config
        self._clock = clock
        self._log = offsets_log
        self._groups: dict[str, Group] = {}
        self._owned: set[int] = set()

    def _wall(self) -> int:
        return self._clock.now_ms()

    # ------------------------------------------------------------ ownership and the cache

    def partition_for(self, group_id: str) -> int:
        """Kafka: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions."""
        return coordinator_partition(group_id, self._config.offsets_topic_num_partitions)

    def owns(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned

    def group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def add_group(self, group_id: str) -> Group:
        """A new, empty group (the caller checked there is none)."""
        group = self._groups[group_id] = Group(group_id, state_timestamp=self._wall())
        return group

    def forget(self, group_id: str) -> Group | None:
        """Drop a group from the cache without writing anything (it becomes a consumer-protocol group)."""
        return self._groups.pop(group_id, None)

    def drop_converted(self, group_id: str) -> Group | None:
        """An empty classic group becoming a consumer group: forget it and tombstone its GroupMetadata record (only
        a group that completed a rebalance wrote one), keeping its offsets for the consumer group. A failed write
        raises with the group still cached."""
        group = self._groups.get(group_id)
        if group is not None and group.generation_id > 0:
            self.write(group_id, [(encode_key(GroupMetadataKey(group_id)), None)], topic_stats=False)
        self._groups.pop(group_id, None)
        return group

    def groups(self) -> list[Group]:
        return list(self._groups.values())

    def group_state_counts(self) -> Counter[str]:
        """Groups per state name (Kafka's NumGroups<State> gauges)."""
        return Counter(g.state.value for g in self._groups.values())

    def num_offsets(self) -> int:
        """Committed offsets (group, partition) held for the groups of the owned partitions (NumOffsets)."""
        return sum(len(g.offsets) for g in self._groups.values())

    # ------------------------------------------------------------ offsets

    def store_offsets(self, group: OffsetsHolder, offsets: list[tuple[str, int, int, int, str | None]]
                      ) -> dict[TopicPartition, ErrorCode]:
        """Kafka's storeOffsets: append one record per acceptable commit (topic, partition, offset, leader_epoch,
        metadata), then cache them; oversized metadata is refused per partition."""
        wall = self._wall()
        results: dict[TopicPartition, ErrorCode] = {}
        records: list[tuple[bytes, bytes | None]] = []
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        for topic, partition, offset, leader_epoch, metadata in offsets:
            meta = metadata or ""
            if len(meta.encode()) > OFFSET_METADATA_MAX_BYTES:
                results[(topic, partition)] = ErrorCode.offset_metadata_too_large
                continue
            accepted[(topic, partition)] = OffsetAndMetadata(offset, leader_epoch, meta, wall)
            records.append((encode_key(OffsetCommitKey(group.group_id, topic, partition)),
                            encode_offset_commit_value(OffsetCommitValue(offset, meta, wall, leader_epoch))))
            results[(topic, partition)] = ErrorCode.none
        if records:
            try:
                self._log.append(self.partition_for(group.group_id), records)
            except KafkaError as e:   # nothing cached: the consumer retries on the code Kafka gives it
                failed = _COMMIT_ERRORS.get(e.code, e.code)
                return {tp: failed if code == ErrorCode.none else code for tp, code in results.items()}
            group.offsets.update(accepted)
        return results

    def write(self, group_id: str, records: list[tuple[bytes, bytes | None]], topic_stats: bool = True) -> None:
        """Append a coordinator's records for the group; a failure raises the code Kafka's storeGroup answers."""
        try:
            self._log.append(self.partition_for(group_id), records, topic_stats)
        except KafkaError as e:
            raise KafkaError(_STORE_ERRORS.get(e.code, e.code), e.message) from None

    async def replicated(self, group_id: str, commit: bool = False) -> ErrorCode:
        """Wait until the group's records written so far are replicated (Kafka answers a coordinator write once
        the offsets partition's high watermark passes it): NONE, or the code storeGroup answers (`commit`: the
        one storeOffsets answers) for why not."""
        error = await self._log.replicated(self.partition_for(group_id))
        return (_COMMIT_ERRORS if commit else _STORE_ERRORS).get(error, error)

    def get_offsets(self, group_id: str, partitions: list[TopicPartition] | None
                    ) -> dict[TopicPartition, tuple[int, int, str | None]]:
        """(offset, leader_epoch, metadata) per partition; None asks for all; unknown ones get (-1, -1, "")."""
        group = self._groups.get(group_id)
        return offsets_view(group.offsets if group is not None else {}, partitions)

    def expire(self) -> None:
        """Remove offsets past offsets.retention.minutes (KIP-211 rules) and drop empty groups left without offsets."""
        wall = self._wall()
        retention_ms = self._config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            self.cleanup(group, group.expired_offsets(wall, retention_ms))

    def cleanup(self, group: Group, partitions: list[TopicPartition]) -> None:
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
            try:
                self.write(group.group_id, records, topic_stats=False)
            except KafkaError as e:   # as Kafka's cleanupGroupMetadata: logged; a reload brings them back to expire
                log.error("failed to write %d tombstones for group %s: %s", len(records), group.group_id, e)

    # ------------------------------------------------------------ group metadata

    def store_group(self, group: Group) -> None:
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
        self.write(group.group_id, [(encode_key(GroupMetadataKey(group.group_id)), encode_group_metadata_value(value))])

    def _read_partition(self, partition: int
                        ) -> tuple[dict[str, GroupMetadataValue], dict[str, dict[TopicPartition, OffsetAndMetadata]]]:
        """The latest group metadata and offsets per group in one offsets partition (tombstones applied)."""
        metadata: dict[str, GroupMetadataValue] = {}
        offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}

        def apply(raw_key: bytes, raw_value: bytes | None) -> None:
            key = decode_key(raw_key)
            if isinstance(key, OffsetCommitKey):
                if raw_value is None:
                    offsets.setdefault(key.group, {}).pop((key.topic, key.partition), None)
                else:
                    v = decode_offset_commit_value(raw_value)
                    offsets.setdefault(key.group, {})[(key.topic, key.partition)] = OffsetAndMetadata(
                        v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp)
            elif isinstance(key, GroupMetadataKey):
                if raw_value is None:
                    metadata.pop(key.group, None)
                else:
                    metadata[key.group] = decode_group_metadata_value(raw_value)

        apply_readable(self._log.read(partition), apply, f"__consumer_offsets-{partition}")
        return metadata, offsets

    def load_partition(self, partition: int) -> list[str]:
        """Become the owner of offsets partition `partition`: rebuild its groups and offsets from the log. Groups
        come back Empty with their generation; members are not live any more, so a group that had members counts
        as empty from now (offset retention). Returns the ids of the groups dropped from the cache first."""
        metadata, offsets = self._read_partition(partition)
        dropped = self.unload_partition(partition)
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
        return dropped

    def unload_partition(self, partition: int) -> list[str]:
        """Forget the partition and its groups; returns the ids of the groups dropped."""
        self._owned.discard(partition)
        dropped = [g for g in self._groups if self.partition_for(g) == partition]
        for group_id in dropped:
            del self._groups[group_id]
        return dropped
