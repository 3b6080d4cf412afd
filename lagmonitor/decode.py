"""Decode `__consumer_offsets` records (Kafka's format, docs/lag-monitor.md §2.2) without any broker code.

Keys: v0/v1 offset commit, v2 group metadata, anything else is a record type we skip. Offset-commit values v0–v4
(v4 is flexible: a real uvarint string length and tagged fields), group-metadata values v0–v3.
"""

from __future__ import annotations

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
    """A record we deliberately ignore (new record types, other protocols, unsupported versions)."""

    reason: str


Record = OffsetCommit | OffsetTombstone | GroupMetadata | GroupTombstone | Skipped


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
    return Skipped(f"key version {version}")


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
    if not 0 <= version <= 3:
        return Skipped(f"group metadata value version {version}")
    protocol_type = r.lenient_string()
    r.int32()  # generation
    r.lenient_string()  # protocol
    r.lenient_string()  # leader
    if version >= 2:
        r.int64()  # current state timestamp
    if protocol_type != "consumer":
        return Skipped(f"protocol type {protocol_type!r}")
    members = []
    for _ in range(r.int32()):
        r.lenient_string()  # member id
        if version >= 3:
            r.lenient_string()  # group instance id
        client_id, client_host = r.lenient_string(), r.lenient_string()
        if version >= 1:
            r.int32()  # rebalance timeout
        r.int32()  # session timeout
        _bytes(r)  # subscription
        members.append(Member(client_id, client_host, _assignment(_bytes(r))))
    return GroupMetadata(group, members)


def _assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """The consumer protocol's assignment: (topic, partition) pairs; user data and later fields are ignored."""
    if not data:
        return ()
    r = _reader(data)
    if r.int16() < 0:
        raise DecodeError("negative consumer protocol version in an assignment")
    out = []
    for _ in range(r.int32()):
        topic = r.lenient_string()
        out.extend((topic, r.int32()) for _ in range(r.int32()))
    return tuple(out)
