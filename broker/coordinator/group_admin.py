"""The admin side of the group coordinator (DescribeGroups, ListGroups, DeleteGroups, OffsetDelete), for classic
and KIP-848 consumer groups alike. `GroupCoordinator` delegates to it; it reads the coordinator's
GroupMetadataManager and ConsumerGroupService and never waits."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.coordinator.consumer.service import ConsumerGroupService
from broker.coordinator.group_metadata_manager import GroupMetadataManager
from broker.coordinator.group_state import CONSUMER_PROTOCOL_TYPE, GroupState
from broker.errors import ErrorCode, KafkaError
from common.clock import Clock


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


class CoordinatorPart:
    """What GroupCoordinator's delegates share: its group cache, its consumer groups and its clock."""

    def __init__(self, group_manager: GroupMetadataManager, consumer: ConsumerGroupService, clock: Clock) -> None:
        self.group_manager = group_manager
        self.consumer = consumer
        self._clock = clock

    def owns(self, group_id: str) -> bool:
        return self.group_manager.owns(group_id)

    def _wall(self) -> int:
        return self._clock.now_ms()


class GroupAdmin(CoordinatorPart):
    """The admin requests over the coordinator's group cache and consumer groups (GroupCoordinator delegates)."""

    def describe_group(self, group_id: str) -> GroupDescription:
        """Kafka's GroupSummary: metadata/assignments and the protocol only while Stable; unknown groups are Dead."""
        if not self.owns(group_id):
            return GroupDescription(group_id, ErrorCode.not_coordinator, GroupState.DEAD.value, "", "")
        if (consumer_group := self.consumer.group(group_id)) is not None:
            # Metadata and assignments are the classic protocol's bytes; ConsumerGroupDescribe has the partitions.
            return GroupDescription(group_id, ErrorCode.none, consumer_group.state.value, CONSUMER_PROTOCOL_TYPE, "",
                                    [MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host,
                                                       b"", b"") for m in consumer_group.members.values()])
        group = self.group_manager.group(group_id)
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
        """(group_id, protocol_type, state) for every classic group, optionally filtered by state name."""
        return [g[:3] for g in self.list_typed_groups(states) if g[3] == "classic"]

    def list_typed_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(group_id, protocol_type, state, group type) for every group, classic and consumer (KIP-848),
        optionally filtered by state name (case-insensitive)."""
        wanted = {s.lower() for s in states} if states else None
        listed = [(g.group_id, g.protocol_type or "", g.state.value, "classic") for g in self.group_manager.groups()]
        listed += [(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state.value, "consumer") for g in self.consumer.groups()]
        return [g for g in listed if wanted is None or g[2].lower() in wanted]

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Delete empty groups with their offsets (tombstones); NON_EMPTY_GROUP while members remain."""
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            if (consumer_group := self.consumer.group(group_id)) is not None:
                if consumer_group.members:
                    results[group_id] = ErrorCode.non_empty_group
                    continue
                try:
                    self.consumer.to_classic(group_id)   # then deleted with its offsets as a classic group is
                except KafkaError as e:
                    results[group_id] = e.code
                    continue
            group = self.group_manager.group(group_id)
            if not self.owns(group_id):
                results[group_id] = ErrorCode.not_coordinator
            elif group is None or group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.group_id_not_found
            elif not group.is_(GroupState.EMPTY):
                results[group_id] = ErrorCode.non_empty_group
            else:
                group.transition_to(GroupState.DEAD, self._wall())
                self.group_manager.cleanup(group, list(group.offsets))
                results[group_id] = ErrorCode.none
        return results

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: refuse topics the consumer group still subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); a classic
        group using another protocol type must be empty (NON_EMPTY_GROUP), as Kafka's validateOffsetDelete."""
        if not self.owns(group_id):
            return ErrorCode.not_coordinator, {}
        if (consumer_group := self.consumer.group(group_id)) is not None:   # KIP-848: deletable at any time
            return ErrorCode.none, self.consumer.delete_offsets(consumer_group, partitions)
        group = self.group_manager.group(group_id)
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
        self.group_manager.cleanup(group, eligible)
        results.update({tp: ErrorCode.none for tp in eligible})
        return ErrorCode.none, results
