"""The `__consumer_offsets` records of a consumer-protocol group, byte-exact to Kafka's group-coordinator JSON schemas
(KIP-848), and the group rebuilt from them.

Keys: int16 record type + a non-flexible struct: 3 ConsumerGroupMetadataKey (group), 5 ConsumerGroupMemberMetadataKey,
6 ConsumerGroupTargetAssignmentMetadataKey (group), 7 ConsumerGroupTargetAssignmentMemberKey, 8
ConsumerGroupCurrentMemberAssignmentKey (group, member). Values: int16 version 0 + a flexible struct. We write what
Kafka 4.1 writes: no ConsumerGroupPartitionMetadata (4), the subscribed topics' hash in ConsumerGroupMetadataValue's
tagged MetadataHash instead (ours is a SHA-256 prefix, not Kafka's Murmur3: only "changed or not" is read from it).
Topics are written by id, so encoding and decoding take the name <-> id maps.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping

from broker.coordinator.consumer.assignors import Assignment
from broker.coordinator.consumer.group import ConsumerGroup
from broker.coordinator.consumer.reconcile import ConsumerMember, MemberState
from common.wire import I64, Reader, WireError, Writer, uvarint

METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 3, 4, 5, 6, 7, 8
_MEMBER_KEYED = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT)
# Kafka's MemberState byte values.
_STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1, MemberState.UNRELEASED_PARTITIONS: 2}
_BYTE_STATES = {v: k for k, v in _STATE_BYTES.items()}

RecordKey = tuple[int, str, str | None]


def encode_key(kind: int, group: str, member: str | None = None) -> bytes:
    w = Writer(flexible=False)
    w.int16(kind)
    w.string(group)
    if kind in _MEMBER_KEYED:
        w.string(member or "")
    return w.getvalue()


def decode_key(data: bytes) -> RecordKey | None:
    """(record type, group, member) for the KIP-848 consumer-group records; None for every other record type."""
    r = Reader(data)
    kind = r.int16()
    if not METADATA <= kind <= CURRENT_ASSIGNMENT:
        return None
    group = r.string()
    member = r.string() if kind in _MEMBER_KEYED else None
    r.done()
    return kind, group, member


def metadata_hash(subscribed: Mapping[str, int]) -> int:
    """A signed int64 that changes with the subscribed topics and their partition counts."""
    text = ",".join(f"{t}:{n}" for t, n in sorted(subscribed.items()))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _value(w: Writer) -> Writer:
    w.int16(0)
    return w


def _topic_partitions(w: Writer, assignment: Mapping[str, frozenset[int]], ids: Mapping[str, uuid.UUID]) -> None:
    topics = [(t, ps) for t, ps in sorted(assignment.items()) if ps and t in ids]
    w.array_len(len(topics))
    for topic, parts in topics:
        w.parts.append(ids[topic].bytes)
        w.array_len(len(parts))
        for p in sorted(parts):
            w.int32(p)
        w.tags()


def _read_topic_partitions(r: Reader, names: Mapping[uuid.UUID, str]) -> Assignment:
    """Partitions of topics no longer known (deleted while we were away) are dropped."""
    out: dict[str, frozenset[int]] = {}
    for _ in range(r.array_len()):
        topic_id = uuid.UUID(bytes=bytes(r.take(16)))
        parts = frozenset(r.int32() for _ in range(r.array_len()))
        r.skip_tags()
        if topic_id in names and parts:
            out[names[topic_id]] = parts
    return out


def group_records(group: ConsumerGroup, ids: Mapping[str, uuid.UUID]) -> dict[bytes, bytes]:
    """Every record that describes the group now, key -> value (Kafka writes the same set, record by record)."""
    gid = group.group_id
    w = _value(Writer(flexible=True))
    w.int32(group.group_epoch)
    w.parts += [uvarint(1), uvarint(0), uvarint(8), I64.pack(metadata_hash(group.subscribed_topics))]
    out = {encode_key(METADATA, gid): w.getvalue()}
    w = _value(Writer(flexible=True))
    w.int32(group.assignment_epoch)
    w.tags()
    out[encode_key(TARGET_METADATA, gid)] = w.getvalue()
    for mid, m in group.members.items():
        out[encode_key(MEMBER_METADATA, gid, mid)] = _member_value(m)
        w = _value(Writer(flexible=True))
        _topic_partitions(w, group.target.get(mid, {}), ids)
        w.tags()
        out[encode_key(TARGET_MEMBER, gid, mid)] = w.getvalue()
        w = _value(Writer(flexible=True))
        w.int32(m.member_epoch)
        w.int32(m.previous_member_epoch)
        w.parts.append(bytes([_STATE_BYTES[m.state]]))
        _topic_partitions(w, m.assigned, ids)
        _topic_partitions(w, m.pending_revocation, ids)
        w.tags()
        out[encode_key(CURRENT_ASSIGNMENT, gid, mid)] = w.getvalue()
    return out


def _member_value(m: ConsumerMember) -> bytes:
    w = _value(Writer(flexible=True))
    w.string(m.instance_id)
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.array_len(len(m.subscribed_topic_names))
    for t in m.subscribed_topic_names:
        w.string(t)
    w.string(m.subscribed_topic_regex)
    w.int32(m.rebalance_timeout_ms)
    w.string(m.server_assignor)
    w.tags()
    return w.getvalue()


def _reader(value: bytes) -> Reader:
    r = Reader(value)
    if (version := r.int16()) != 0:
        raise WireError(f"unsupported consumer group record value version {version}")
    r.flexible = True
    return r


def restore(group_id: str, values: Mapping[tuple[int, str | None], bytes], names: Mapping[uuid.UUID, str],
            default_assignor: str) -> tuple[ConsumerGroup, int]:
    """The group as its latest records describe it (tombstones already applied), and the metadata hash stored."""
    group = ConsumerGroup(group_id, assignor=default_assignor)
    stored_hash = 0
    for (kind, member), value in sorted(values.items(), key=lambda kv: kv[0][0]):
        r = _reader(value)
        if kind == METADATA:
            group.group_epoch = r.int32()
            for _ in range(r.uvarint()):
                tag, data = r.uvarint(), r.take(r.uvarint())
                if tag == 0:
                    stored_hash = int.from_bytes(data, "big", signed=True)
        elif kind == TARGET_METADATA:
            group.assignment_epoch = r.int32()
        elif kind == MEMBER_METADATA and member is not None:
            instance, rack, client_id, host = r.nullable_string(), r.nullable_string(), r.string(), r.string()
            topics = tuple(r.string() for _ in range(r.array_len()))
            regex, timeout, assignor = r.nullable_string(), r.int32(), r.nullable_string()
            group.members[member] = ConsumerMember(member, instance, rack, client_id, host, timeout, topics, regex,
                                                   assignor)
        elif kind == TARGET_MEMBER and member is not None:
            group.target[member] = _read_topic_partitions(r, names)
        elif kind == CURRENT_ASSIGNMENT and member in group.members:
            m = group.members[member]
            m.member_epoch, m.previous_member_epoch = r.int32(), r.int32()
            m.state = _BYTE_STATES.get(r.take(1)[0], MemberState.STABLE)
            m.assigned = _read_topic_partitions(r, names)
            m.pending_revocation = _read_topic_partitions(r, names)
    for m in list(group.members.values()):
        group.set_member(m)   # partition owners
    group.target = {mid: t for mid, t in group.target.items() if mid in group.members}
    return group, stored_hash
