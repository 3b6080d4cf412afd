"""__consumer_offsets decoding: hand-built bytes for every key/value version, and records our broker writes."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from common.wire import uvarint
from lagmonitor.decode import (
    DecodeError,
    GroupMetadata,
    GroupTombstone,
    Member,
    OffsetCommit,
    OffsetTombstone,
    Skipped,
    decode_record,
)


def s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def by(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def commit_key(version: int) -> bytes:
    return struct.pack(">h", version) + s("g1") + s("orders") + struct.pack(">i", 3)


def offset_value(version: int, metadata: str = "meta") -> bytes:
    v = struct.pack(">hq", version, 1234)
    if version >= 3:
        v += struct.pack(">i", 7)
    if version == 4:
        v += uvarint(len(metadata) + 1) + metadata.encode()
    else:
        v += s(metadata)
    v += struct.pack(">q", 1_700_000_000_123)
    if version == 1:
        v += struct.pack(">q", 1_700_000_999_000)
    if version == 4:
        v += uvarint(0)
    return v


def assignment(pairs: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(pairs))
    for topic, parts in pairs.items():
        out += s(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + by(b"user")


def group_value(version: int, protocol_type: str = "consumer", members: int = 2) -> bytes:
    v = struct.pack(">h", version) + s(protocol_type) + struct.pack(">i", 5) + s("range") + s("m-0")
    if version >= 2:
        v += struct.pack(">q", 1_700_000_000_000)
    v += struct.pack(">i", members)
    for i in range(members):
        v += s(f"m-{i}")
        if version >= 3:
            v += s(None)
        v += s(f"client-{i}") + s(f"/10.0.0.{i}")
        if version >= 1:
            v += struct.pack(">i", 60_000)
        v += struct.pack(">i", 10_000) + by(b"subscription") + by(assignment({"orders": [i, i + 2]}))
    return v


@pytest.mark.parametrize("key_version", [0, 1])
@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
def test_offset_commit_every_key_and_value_version(key_version, value_version):
    rec = decode_record(commit_key(key_version), offset_value(value_version))
    assert rec == OffsetCommit("g1", "orders", 3, 1234, 1_700_000_000_123)


def test_offset_value_v4_uses_a_real_uvarint_for_long_metadata():
    rec = decode_record(commit_key(1), offset_value(4, metadata="x" * 300))
    assert rec == OffsetCommit("g1", "orders", 3, 1234, 1_700_000_000_123)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_every_value_version(version):
    rec = decode_record(struct.pack(">h", 2) + s("g1"), group_value(version))
    assert rec == GroupMetadata("g1", [Member("client-0", "/10.0.0.0", (("orders", 0), ("orders", 2))),
                                       Member("client-1", "/10.0.0.1", (("orders", 1), ("orders", 3)))])


def test_group_metadata_without_members_and_other_protocols():
    key = struct.pack(">h", 2) + s("g1")
    assert decode_record(key, group_value(3, members=0)) == GroupMetadata("g1", [])
    assert isinstance(decode_record(key, group_value(3, protocol_type="connect")), Skipped)
    assert isinstance(decode_record(key, struct.pack(">h", 5) + group_value(3)[2:]), Skipped)


def test_tombstones():
    assert decode_record(commit_key(1), None) == OffsetTombstone("g1", "orders", 3)
    assert decode_record(commit_key(0), b"") == OffsetTombstone("g1", "orders", 3)
    assert decode_record(struct.pack(">h", 2) + s("g1"), None) == GroupTombstone("g1")


@pytest.mark.parametrize("version", [24, 99, -1])
def test_unknown_key_versions_are_skipped(version):
    # 24 and up: record types later than Kafka 4.1's CoordinatorRecordType; the monitor counts them.
    rec = decode_record(struct.pack(">h", version) + s("whatever"), b"\x00\x00")
    assert rec == Skipped(f"key version {version}", unknown=True)


@pytest.mark.parametrize("key,value", [
    (commit_key(1), offset_value(3)[:-3]),
    (commit_key(1), struct.pack(">h", 5) + offset_value(0)[2:]),
    (commit_key(1)[:-1], offset_value(0)),
    (struct.pack(">h", 2) + s("g1"), group_value(3)[:-5]),
])
def test_malformed_records_raise_decode_error(key, value):
    with pytest.raises(DecodeError):
        decode_record(key, value)


def read_offsets_topic(bootstrap: str, want, timeout_s: float = 30.0):
    """Decode __consumer_offsets from the beginning until `want(records)` holds."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    meta = c.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
    c.assign([TopicPartition("__consumer_offsets", p, 0) for p in meta.partitions])
    records: list = []
    deadline = time.monotonic() + timeout_s
    try:
        while not want(records):
            assert time.monotonic() < deadline, f"condition not met; decoded {records}"
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                records.append(decode_record(msg.key(), msg.value()))
    finally:
        c.close()
    return records


def test_records_written_by_our_broker(shared_broker, topic_name):
    p = Producer({"bootstrap.servers": shared_broker.bootstrap})
    for i in range(5):
        p.produce(topic_name, value=b"v%d" % i)
    p.flush(10)
    group = f"decode-{topic_name}"
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": group, "client.id": "decoder-test",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic_name])
    got = 0
    deadline = time.monotonic() + 30
    while got < 5 and time.monotonic() < deadline:
        m = c.poll(0.5)
        got += m is not None and m.error() is None
    c.commit(asynchronous=False)
    c.close()

    def mine(records):
        commits = [r for r in records if isinstance(r, OffsetCommit) and r.group == group]
        metas = [r for r in records if isinstance(r, GroupMetadata) and r.group == group and r.members]
        return commits and metas

    records = read_offsets_topic(shared_broker.bootstrap, mine)
    [commit] = [r for r in records if isinstance(r, OffsetCommit) and r.group == group]
    assert (commit.topic, commit.partition, commit.offset) == (topic_name, 0, 5)
    assert abs(commit.timestamp - time.time() * 1000) < 60_000
    meta = next(r for r in records if isinstance(r, GroupMetadata) and r.group == group and r.members)
    assert meta.members[0].client_id == "decoder-test"
    assert meta.members[0].assignment == ((topic_name, 0),)
