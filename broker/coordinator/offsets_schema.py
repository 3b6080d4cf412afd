"""Byte-exact `__consumer_offsets` records, from Kafka's group-coordinator JSON schemas.

Keys are `int16 key version` + struct: 0/1 = OffsetCommitKey (group, topic, partition), 2 = GroupMetadataKey (group).
Values are `int16 value version` + struct: OffsetCommitValue v0–v4 and GroupMetadataValue v0–v4, flexible from v4
(compact strings/bytes/arrays and tagged-field buffers). A null value is a tombstone. We write OffsetCommitValue v3
(v1 when an expire timestamp is given) and GroupMetadataValue v3, as Kafka 3.x does; Burrow decodes both.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from common.wire import Reader, Writer

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3
_MAX_VALUE_VERSION = 4
_FLEXIBLE_FROM = 4


class SchemaError(ValueError):
    """A record that does not decode under any supported version."""


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1       # v3+
    expire_timestamp: int = -1   # v1 only


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None   # v3+
    rebalance_timeout: int = -1            # v1+


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: list[MemberMetadata] = field(default_factory=list)
    current_state_timestamp: int = -1      # v2+


def _reader(data: bytes, pos: int = 0, flexible: bool = False) -> Reader:
    return Reader(data, pos, flexible, error=SchemaError)


def _check_version(version: int, name: str) -> None:
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise SchemaError(f"unsupported {name} version {version}")


# ---------------------------------------------------------------- keys

def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """OffsetCommitKey is written with key version 1, GroupMetadataKey with 2 (Kafka's record types)."""
    w = Writer(flexible=False)
    if isinstance(key, OffsetCommitKey):
        w.int16(OFFSET_COMMIT_KEY_VERSION)
        w.string(key.group)
        w.string(key.topic)
        w.int32(key.partition)
    else:
        w.int16(GROUP_METADATA_KEY_VERSION)
        w.string(key.group)
    return w.getvalue()


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """Decode a key; None for record types this coordinator does not own (KIP-848/share/streams records)."""
    r = _reader(data)
    version = r.int16()
    if version in (0, 1):
        key: OffsetCommitKey | GroupMetadataKey = OffsetCommitKey(r.string(), r.string(), r.int32())
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(r.string())
    else:
        return None
    r.done()
    return key


# ---------------------------------------------------------------- OffsetCommitValue

def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Write v3 by default, or v1 when the commit carries an expire timestamp (Kafka's choice)."""
    if version is None:
        version = 1 if value.expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION
    _check_version(version, "OffsetCommitValue")
    w = Writer(flexible=version >= _FLEXIBLE_FROM)
    w.int16(version)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    w.tags()
    return w.getvalue()


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    version = struct.unpack_from(">h", data, 0)[0] if len(data) >= 2 else -1
    _check_version(version, "OffsetCommitValue")
    r = _reader(data, 2, flexible=version >= _FLEXIBLE_FROM)
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    r.skip_tags()
    r.done()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


# ---------------------------------------------------------------- GroupMetadataValue

def encode_group_metadata_value(value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    _check_version(version, "GroupMetadataValue")
    w = Writer(flexible=version >= _FLEXIBLE_FROM)
    w.int16(version)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.array_len(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.tags()
    w.tags()
    return w.getvalue()


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    version = struct.unpack_from(">h", data, 0)[0] if len(data) >= 2 else -1
    _check_version(version, "GroupMetadataValue")
    r = _reader(data, 2, flexible=version >= _FLEXIBLE_FROM)
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.array_len()):
        member_id = r.string()
        group_instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.skip_tags()
        members.append(MemberMetadata(member_id, client_id, client_host, session_timeout, subscription, assignment,
                                      group_instance_id, rebalance_timeout))
    r.skip_tags()
    r.done()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, members, current_state_timestamp)
