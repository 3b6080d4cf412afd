"""The offset requests of the group coordinator (Kafka's GroupCoordinator.handleCommitOffsets /
handleTxnCommitOffsets / handleFetchOffsets, and for KIP-848 groups OffsetMetadataManager's member-epoch checks):
who may commit or fetch for a classic or a consumer-protocol group. `GroupCoordinator` delegates to it; the offsets
themselves and their records are the GroupMetadataManager's. Nothing here waits."""

from __future__ import annotations

from broker.coordinator.group_admin import CoordinatorPart
from broker.coordinator.group_metadata_manager import offsets_view
from broker.coordinator.group_state import GroupState, OffsetAndMetadata, member_error
from broker.errors import ErrorCode, KafkaError


class GroupOffsets(CoordinatorPart):
    """OffsetCommit, TxnOffsetCommit and OffsetFetch over the coordinator's group cache and consumer groups."""

    def _now(self) -> int:
        return int(self._clock.monotonic() * 1000)

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[tuple[str, int, int, int, str | None]], api_version: int = 9
                       ) -> dict[tuple[str, int], ErrorCode]:
        """Commit (topic, partition, offset, leader_epoch, metadata) tuples. Consumers without group management
        (assign()) commit with generation -1 and an empty member id, accepted while the group has no members."""
        def all_(error: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {(t, p): error for t, p, *_ in offsets}

        if not self.owns(group_id):
            return all_(ErrorCode.not_coordinator)
        if (consumer_group := self.consumer.group(group_id)) is not None:
            # OffsetCommit v9+: the generation is the member epoch (STALE_MEMBER_EPOCH when behind).
            error = self.consumer.commit_error(consumer_group, member_id, generation_id, api_version)
            return all_(error) if error is not None else self.group_manager.store_offsets(consumer_group, offsets)
        group = self.group_manager.group(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.illegal_generation)
            group = self.group_manager.add_group(group_id)
        if group.is_(GroupState.DEAD):
            return all_(ErrorCode.coordinator_not_available)
        if not (generation_id < 0 and group.is_(GroupState.EMPTY)):
            if group.is_(GroupState.COMPLETING_REBALANCE):
                return all_(ErrorCode.rebalance_in_progress)
            error = member_error(group, member_id, group_instance_id)
            if error is not None:
                return all_(error)
            if generation_id != group.generation_id:
                return all_(ErrorCode.illegal_generation)
            group.members[member_id].last_heartbeat = self._now()

        return self.group_manager.store_offsets(group, offsets)

    def txn_offset_commit_error(self, group_id: str, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> ErrorCode | None:
        """TxnOffsetCommit v3+ with group metadata (KIP-447): a classic group's member must be known and of the
        current generation (Kafka's GroupCoordinator.handleTxnCommitOffsets); without (generation -1, empty
        member id) anything goes, as before KIP-447."""
        if not self.owns(group_id):
            return ErrorCode.not_coordinator
        group = self.group_manager.group(group_id)
        if group is None or self.consumer.group(group_id) is not None:
            return None
        if member_id or group_instance_id:
            error = member_error(group, member_id, group_instance_id)
            if error is not None:
                return error
        if generation_id >= 0 and generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        return None

    def commit_transactional_offsets(self, group_id: str, offsets: list[tuple[str, int, int, int, str | None]]
                                     ) -> None:
        """TxnOffsetCommit offsets whose transaction committed (the COMMIT marker reached the group's offsets
        partition; Kafka's GroupMetadata.completePendingTxnOffsetCommit): already in the log as transactional
        records, they only enter the cache, whatever the membership."""
        if not self.owns(group_id):
            return
        group = self.consumer.group(group_id) or self.group_manager.group(group_id) \
            or self.group_manager.add_group(group_id)
        now = self._wall()
        for topic, partition, offset, leader_epoch, metadata in offsets:
            group.offsets[(topic, partition)] = OffsetAndMetadata(offset, leader_epoch, metadata or "", now)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None, member_id: str | None = None,
                      member_epoch: int = -1) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        """(offset, leader_epoch, metadata) per partition; None asks for all; unknown ones get (-1, -1, "").

        Raises NOT_COORDINATOR for a group this broker does not coordinate, and for a consumer group the member
        check of OffsetFetch v9 (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""
        if not self.owns(group_id):
            raise KafkaError(ErrorCode.not_coordinator)
        if (consumer_group := self.consumer.group(group_id)) is not None:
            error = self.consumer.coordinator.validate_offset_fetch(consumer_group, member_id, member_epoch)
            if error is not None:
                raise KafkaError(error)
            return offsets_view(consumer_group.offsets, partitions)
        return self.group_manager.get_offsets(group_id, partitions)
