"""Decode `__consumer_offsets` records (Kafka's format, docs/lag-monitor.md §2.2) without any broker code.

A key starts with an int16 that Kafka 4 calls the record type (CoordinatorRecordType, the `apiKey` of
group-coordinator/src/main/resources/common/message/*Key.json): 0/1 offset commit, 2 classic group metadata, 3–8 and
16 the records of consumer-protocol groups (KIP-848), 10–15 share groups (KIP-932), 17 and 19–23 streams groups
(KIP-1071). Offset-commit values v0–v4 (v4 is flexible: a real uvarint string length and tagged fields),
group-metadata values v0–v4, consumer-group values v0 (flexible). Share and streams records are recognised and
skipped; an unknown record type is skipped as `Skipped(unknown=True)` for the caller to count.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from common.wire import Reader


class DecodeError(ValueError):
    """A record that cannot be decoded; the collector logs it and moves on."""


@dataclass(frozen=True)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True)
class OffsetTombstone:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class Member:
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class GroupMetadata:
    group: str
    members: list[Member] = field(default_factory=list)


@dataclass(frozen=True)
class GroupTombstone:
    group: str


@dataclass(frozen=True)
class Skipped:
    """A record we deliberately ignore (share/streams groups, other protocols, unsupported versions); `unknown`
    marks a record type this decoder does not know (a newer Kafka), which the monitor counts."""

    reason: str
    unknown: bool = False


# ---- consumer-protocol groups (KIP-848): one dataclass per record type, Kafka's field names in snake case.

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]   # (topic id as Kafka prints a Uuid, partitions)


@dataclass(frozen=True)
class ConsumerGroupEpoch:
    """ConsumerGroupMetadataValue: the group epoch (and, since 4.1, KIP-1101's hash of the subscribed topics)."""

    group: str
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadata:
    """ConsumerGroupPartitionMetadataValue (Kafka 4.0; 4.1 no longer writes it): the subscribed topics' metadata
    as (topic id, topic name, partition count)."""

    group: str
    topics: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True)
class ConsumerGroupMember:
    """ConsumerGroupMemberMetadataValue: who a member is and what it subscribes to."""

    group: str
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None


@dataclass(frozen=True)
class ConsumerGroupTargetEpoch:
    """ConsumerGroupTargetAssignmentMetadataValue: the epoch of the target assignment."""

    group: str
    assignment_epoch: int


@dataclass(frozen=True)
class ConsumerGroupTargetMember:
    """ConsumerGroupTargetAssignmentMemberValue: the partitions the assignor gave one member."""

    group: str
    member_id: str
    partitions: TopicPartitions


@dataclass(frozen=True)
class ConsumerGroupMemberAssignment:
    """ConsumerGroupCurrentMemberAssignmentValue: what a member owns now (member epoch, reconciliation state,
    assigned partitions and those it must still revoke)."""

    group: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions
    pending_revocation: TopicPartitions


@dataclass(frozen=True)
class ConsumerGroupTombstone:
    """A consumer-protocol group record deleted (empty value). `record` is Kafka's record type name; the group's
    own ConsumerGroupMetadata tombstone (member_id None) means the group is gone."""

    group: str
    record: str
    member_id: str | None = None


ConsumerGroupRecord = (ConsumerGroupEpoch | ConsumerGroupPartitionMetadata | ConsumerGroupMember
                       | ConsumerGroupTargetEpoch | ConsumerGroupTargetMember | ConsumerGroupMemberAssignment
                       | ConsumerGroupTombstone)
Record = OffsetCommit | OffsetTombstone | GroupMetadata | GroupTombstone | Skipped | ConsumerGroupRecord

# CoordinatorRecordType ids of Kafka 4.1.1 (read from its kafka-group-coordinator jar) → record name.
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16
RECORD_NAMES = {
    3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata",   # Kafka 4.0 only
    10: "ShareGroupMemberMetadata", 11: "ShareGroupMetadata", 12: "ShareGroupTargetAssignmentMetadata",
    13: "ShareGroupTargetAssignmentMember", 14: "ShareGroupCurrentMemberAssignment",
    15: "ShareGroupStatePartitionMetadata", 16: "ConsumerGroupRegularExpression",
    17: "StreamsGroupMetadata", 18: "StreamsGroupPartitionMetadata",   # 18: Kafka 4.0 only
    19: "StreamsGroupMemberMetadata", 20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember", 22: "StreamsGroupCurrentMemberAssignment", 23: "StreamsGroupTopology",
}
# Keys of these records carry a MemberId after the GroupId.
_MEMBER_KEYED = {5, 7, 8}


def _reader(buf: bytes) -> Reader:
    return Reader(buf, error=DecodeError)


def _bytes(r: Reader) -> bytes:
    return r.nullable_bytes() or b""


def decode_record(key: bytes | None, value: bytes | None) -> Record:
    """One `__consumer_offsets` record → what the lag monitor needs. Raises DecodeError on malformed bytes."""
    if not key:
        return Skipped("record without a key")
    r = _reader(key)
    version = r.int16()
    if version in (0, 1):
        group, topic, partition = r.lenient_string(), r.lenient_string(), r.int32()
        if not value:
            return OffsetTombstone(group, topic, partition)
        offset, timestamp = _offset_value(value)
        return OffsetCommit(group, topic, partition, offset, timestamp)
    if version == 2:
        group = r.lenient_string()
        return GroupTombstone(group) if not value else _group_value(group, value)
    name = RECORD_NAMES.get(version)
    if name is None:
        return Skipped(f"key version {version}", unknown=True)
    if not CONSUMER_GROUP_METADATA <= version <= CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        return Skipped(f"{name} record")   # share / streams groups, regex resolutions: no consumer lag in them
    group = r.lenient_string()
    member = r.lenient_string() if version in _MEMBER_KEYED else None
    if not value:
        return ConsumerGroupTombstone(group, name, member)
    return _consumer_group_value(version, name, group, member or "", value)


def _offset_value(value: bytes) -> tuple[int, int]:
    r = _reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise DecodeError(f"offset commit value version {version}")
    offset = r.int64()
    if version >= 3:
        r.int32()  # leader epoch
    r.flexible = version >= 4    # v4 writes metadata as a compact string
    r.lenient_string()  # metadata
    return offset, r.int64()


def _group_value(group: str, value: bytes) -> Record:
    r = _reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        return Skipped(f"group metadata value version {version}")
    r.flexible = version >= 4   # GroupMetadataValue.json: "flexibleVersions": "4+"
    protocol_type = r.lenient_string()
    r.int32()  # generation
    r.lenient_string()  # protocol
    r.lenient_string()  # leader
    if version >= 2:
        r.int64()  # current state timestamp
    if protocol_type != "consumer":
        return Skipped(f"protocol type {protocol_type!r}")
    members = []
    for _ in range(r.array_len()):
        r.lenient_string()  # member id
        if version >= 3:
            r.lenient_string()  # group instance id
        client_id, client_host = r.lenient_string(), r.lenient_string()
        if version >= 1:
            r.int32()  # rebalance timeout
        r.int32()  # session timeout
        _bytes(r)  # subscription
        members.append(Member(client_id, client_host, _assignment(_bytes(r))))
        r.skip_tags()
    return GroupMetadata(group, members)


def _uuid(r: Reader) -> str:
    """A Kafka Uuid as Uuid.toString() prints it: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(bytes(r.take(16))).decode().rstrip("=")


def _topic_partitions(r: Reader) -> TopicPartitions:
    """[]TopicPartitions / []TopicPartition of the KIP-848 values: a Uuid, an []int32, tagged fields."""
    out = []
    for _ in range(r.array_len()):
        topic_id = _uuid(r)
        out.append((topic_id, tuple(r.int32() for _ in range(r.array_len()))))
        r.skip_tags()
    return tuple(out)


def _consumer_group_value(kind: int, name: str, group: str, member: str, value: bytes) -> Record:
    """The value of a consumer-protocol group record; all are flexible and at version 0 in Kafka 4.0 and 4.1 (later
    fields are tagged, so skip_tags reads past what a newer broker adds)."""
    r = _reader(value)
    version = r.int16()
    if version != 0:
        return Skipped(f"{name} value version {version}")
    r.flexible = True
    rec: Record
    if kind == CONSUMER_GROUP_METADATA:
        epoch = r.int32()
        metadata_hash = 0
        for _ in range(r.uvarint()):   # tag 0: MetadataHash (4.1, KIP-1101); others skipped
            tag, size = r.uvarint(), r.uvarint()
            data = r.take(size)
            if tag == 0 and size == 8:
                metadata_hash = int.from_bytes(data, "big", signed=True)
        return ConsumerGroupEpoch(group, epoch, metadata_hash)
    if kind == CONSUMER_GROUP_PARTITION_METADATA:
        topics = []
        for _ in range(r.array_len()):
            topic_id, topic, count = _uuid(r), r.lenient_string(), r.int32()
            for _ in range(r.array_len()):   # PartitionMetadata: partition, racks
                r.int32()
                for _ in range(r.array_len()):
                    r.lenient_string()
                r.skip_tags()
            r.skip_tags()
            topics.append((topic_id, topic, count))
        rec = ConsumerGroupPartitionMetadata(group, tuple(topics))
    elif kind == CONSUMER_GROUP_MEMBER_METADATA:
        instance_id, rack_id = r.nullable_string("replace"), r.nullable_string("replace")
        client_id, client_host = r.lenient_string(), r.lenient_string()
        subscribed = tuple(r.lenient_string() for _ in range(r.array_len()))
        regex = r.nullable_string("replace")
        r.int32()   # rebalance timeout
        r.nullable_string("replace")   # server assignor
        rec = ConsumerGroupMember(group, member, client_id, client_host, instance_id, rack_id, subscribed,
                                  regex or None)
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        rec = ConsumerGroupTargetEpoch(group, r.int32())
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        rec = ConsumerGroupTargetMember(group, member, _topic_partitions(r))
    else:
        epoch, previous = r.int32(), r.int32()
        state = int.from_bytes(r.take(1), "big", signed=True)   # int8 MemberState
        rec = ConsumerGroupMemberAssignment(group, member, epoch, previous, state, _topic_partitions(r),
                                            _topic_partitions(r))
    r.skip_tags()
    return rec


def _assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """The consumer protocol's assignment: (topic, partition) pairs; user data and later fields are ignored."""
    if not data:
        return ()
    r = _reader(data)
    if r.int16() < 0:
        raise DecodeError("negative consumer protocol version in an assignment")
    out: list[tuple[str, int]] = []
    for _ in range(r.int32()):
        topic = r.lenient_string()
        out.extend((topic, r.int32()) for _ in range(r.int32()))
    return tuple(out)
