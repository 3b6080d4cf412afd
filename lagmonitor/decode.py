"""Decode `__consumer_offsets` records (Kafka's format, docs/lag-monitor.md §2.2) without any broker code.

Keys: v0/v1 offset commit, v2 group metadata, anything else is a record type we skip. Offset-commit values v0–v4
(v4 is flexible: a real uvarint string length and tagged fields), group-metadata values v0–v3.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


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


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise DecodeError(f"truncated at byte {self.pos}")
        self.pos += n
        return self.buf[self.pos - n:self.pos]

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self._take(8))[0]

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            b = self._take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise DecodeError("uvarint too long")

    def string(self) -> str:
        """int16 length; -1 (null) reads as "" as in Burrow."""
        n = self.int16()
        return "" if n < 0 else self._take(n).decode("utf-8", "replace")

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        return "" if n < 0 else self._take(n).decode("utf-8", "replace")

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n < 0 else self._take(n)


def decode_record(key: bytes | None, value: bytes | None) -> Record:
    """One `__consumer_offsets` record → what the lag monitor needs. Raises DecodeError on malformed bytes."""
    if not key:
        return Skipped("record without a key")
    r = _Reader(key)
    version = r.int16()
    if version in (0, 1):
        group, topic, partition = r.string(), r.string(), r.int32()
        if not value:
            return OffsetTombstone(group, topic, partition)
        offset, timestamp = _offset_value(value)
        return OffsetCommit(group, topic, partition, offset, timestamp)
    if version == 2:
        group = r.string()
        return GroupTombstone(group) if not value else _group_value(group, value)
    return Skipped(f"key version {version}")


def _offset_value(value: bytes) -> tuple[int, int]:
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise DecodeError(f"offset commit value version {version}")
    offset = r.int64()
    if version >= 3:
        r.int32()  # leader epoch
    r.compact_string() if version >= 4 else r.string()  # metadata
    return offset, r.int64()


def _group_value(group: str, value: bytes) -> Record:
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 3:
        return Skipped(f"group metadata value version {version}")
    protocol_type = r.string()
    r.int32()  # generation
    r.string()  # protocol
    r.string()  # leader
    if version >= 2:
        r.int64()  # current state timestamp
    if protocol_type != "consumer":
        return Skipped(f"protocol type {protocol_type!r}")
    members = []
    for _ in range(r.int32()):
        r.string()  # member id
        if version >= 3:
            r.string()  # group instance id
        client_id, client_host = r.string(), r.string()
        if version >= 1:
            r.int32()  # rebalance timeout
        r.int32()  # session timeout
        r.bytes_()  # subscription
        members.append(Member(client_id, client_host, _assignment(r.bytes_())))
    return GroupMetadata(group, members)


def _assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """The consumer protocol's assignment: (topic, partition) pairs; user data and later fields are ignored."""
    if not data:
        return ()
    r = _Reader(data)
    if r.int16() < 0:
        raise DecodeError("negative consumer protocol version in an assignment")
    out = []
    for _ in range(r.int32()):
        topic = r.string()
        out.extend((topic, r.int32()) for _ in range(r.int32()))
    return tuple(out)
