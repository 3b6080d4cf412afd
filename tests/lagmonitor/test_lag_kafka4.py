"""Kafka 4 `__consumer_offsets`: records captured from Apache Kafka 4.1.1 (consumer-protocol and classic groups) and
constructed ones for what that capture lacks; the monitor's use of them; owners from ConsumerGroupDescribe."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription

from common.clock import ManualClock
from common.wire import uvarint
from lagmonitor import decode
from lagmonitor.api import render_metrics
from lagmonitor.config import LagConfig
from lagmonitor.decode import (
    ConsumerGroupEpoch,
    ConsumerGroupMember,
    ConsumerGroupMemberAssignment,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupTargetEpoch,
    ConsumerGroupTargetMember,
    ConsumerGroupTombstone,
    DecodeError,
    GroupMetadata,
    Member,
    OffsetCommit,
    Skipped,
    decode_record,
)
from lagmonitor.monitor import LagMonitor
from lagmonitor.owners import owners

CAPTURE = Path(__file__).with_name("data") / "kafka-4.1.1-consumer-offsets.json"
TOPIC_ID = "WYDABfVUTaGZ6q-LfN0Psg"   # topic "orders" in the capture
C0, C1 = "k1Sp8PQTQqWYDYeaRITHJg", "5DQ8zONvS26k7XU4RD5BqQ"


def captured() -> list[tuple[int, bytes, bytes | None]]:
    doc = json.loads(CAPTURE.read_text())
    return [(r["offset"], bytes.fromhex(r["key"]), None if r["value"] is None else bytes.fromhex(r["value"]))
            for r in doc["records"]]


def test_every_captured_record_decodes():
    recs = {off: decode_record(k, v) for off, k, v in captured()}
    assert recs[0] == ConsumerGroupMember("g848", C0, "c0", "/127.0.0.1", None, None, ("orders",), None)
    assert recs[1] == ConsumerGroupEpoch("g848", 1, -2582831177788625342)
    assert recs[2] == ConsumerGroupTargetMember("g848", C0, ((TOPIC_ID, (0, 1, 2)),))
    assert recs[3] == ConsumerGroupTargetEpoch("g848", 1)
    # c1 joins: c0 keeps 0 and 1 and must revoke 2 (state 1 = UNREVOKED_PARTITIONS) before c1 gets it
    assert recs[11] == ConsumerGroupMemberAssignment("g848", C0, 1, 1, 1, ((TOPIC_ID, (0, 1)),),
                                                     ((TOPIC_ID, (2,)),))
    assert recs[33] == ConsumerGroupMemberAssignment("g848", C1, 2, 2, 0, ((TOPIC_ID, (2,)),), ())
    assert recs[13] == OffsetCommit("g848", "orders", 1, 1, 1795730455778)   # a consumer-protocol group's commit
    assert recs[44] == ConsumerGroupTombstone("g848", "ConsumerGroupCurrentMemberAssignment", C1)
    assert recs[46] == ConsumerGroupTombstone("g848", "ConsumerGroupMemberMetadata", C1)
    assert recs[57] == ConsumerGroupEpoch("g848", 4, 0)   # emptied, not deleted
    assert recs[49] == GroupMetadata("gclassic", [Member("rdkafka", "/127.0.0.1",
                                                         (("orders", 0), ("orders", 1), ("orders", 2)))])
    assert recs[48] == Skipped("protocol type ''")   # the classic group's record before its first join
    assert not any(isinstance(r, Skipped) for off, r in recs.items() if off != 48)


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _cs(text: str | None) -> bytes:
    return b"\0" if text is None else uvarint(len(text) + 1) + text.encode()


def test_partition_metadata_and_group_tombstone_constructed():
    # ConsumerGroupPartitionMetadataValue (Kafka 4.0 writes it, 4.1 does not): one topic, one partition, one rack
    topic_id = bytes(range(16))
    value = (struct.pack(">h", 0) + uvarint(2) + topic_id + _cs("orders") + struct.pack(">i", 3)
             + uvarint(2) + struct.pack(">i", 0) + uvarint(2) + _cs("rack-a") + b"\0" + b"\0" + b"\0")
    rec = decode_record(struct.pack(">h", 4) + _s("g"), value)
    assert rec == ConsumerGroupPartitionMetadata("g", (("AAECAwQFBgcICQoLDA0ODw", "orders", 3),))
    assert decode_record(struct.pack(">h", 3) + _s("g"), None) == ConsumerGroupTombstone("g", "ConsumerGroupMetadata")


def test_group_metadata_value_v4_is_flexible():
    assignment = struct.pack(">hi", 0, 1) + _s("t") + struct.pack(">ii", 1, 5) + struct.pack(">i", -1)
    value = (struct.pack(">h", 4) + _cs("consumer") + struct.pack(">i", 2) + _cs("range") + _cs("m")
             + struct.pack(">q", 0) + uvarint(2) + _cs("m") + _cs(None) + _cs("cid") + _cs("/h")
             + struct.pack(">ii", 1000, 1000) + uvarint(1) + uvarint(len(assignment) + 1) + assignment + b"\0" + b"\0")
    assert decode_record(struct.pack(">h", 2) + _s("g"), value) == GroupMetadata("g", [Member("cid", "/h",
                                                                                                (("t", 5),))])


@pytest.mark.parametrize("kind,name", [(10, "ShareGroupMemberMetadata"), (15, "ShareGroupStatePartitionMetadata"),
                                       (16, "ConsumerGroupRegularExpression"), (17, "StreamsGroupMetadata"),
                                       (23, "StreamsGroupTopology")])
def test_share_streams_and_regex_records_are_skipped_as_known(kind, name):
    assert decode_record(struct.pack(">h", kind) + _s("g"), b"\0\0garbage") == Skipped(f"{name} record")


def test_newer_value_versions_skip_and_truncation_raises():
    key = struct.pack(">h", 5) + _s("g") + _s("m")
    assert decode_record(key, struct.pack(">h", 1) + b"\0") == Skipped("ConsumerGroupMemberMetadata value version 1")
    with pytest.raises(DecodeError):
        decode_record(key, captured()[0][2][:-6])


def test_monitor_tracks_consumer_groups_counts_skips_and_deletes_on_metadata_tombstone():
    m = LagMonitor(LagConfig(cluster="local"))
    m.broker_offsets({("orders", p): 10 for p in range(3)}, {"orders": 3}, 1_795_730_460_000)
    for off, k, v in captured()[:44]:
        m.apply_record(0, off, k, v, 1_795_730_470_000)
    assert m.consumer_groups == {"g848": {C0: "c0", C1: "c1"}}
    assert m.storage.members["g848"] == 2
    assert "g848" in m.storage.groups   # its commits are stored as any group's
    for off, k, v in captured()[44:]:
        m.apply_record(0, off, k, v, 1_795_730_470_000)
    assert m.consumer_groups == {"g848": {}} and m.storage.members["g848"] == 0
    m.apply_record(0, 58, struct.pack(">h", 99) + _s("g848"), b"\0\0", 1_795_730_470_000)
    m.apply_record(0, 59, struct.pack(">h", 17) + _s("s"), b"\0\0", 1_795_730_470_000)
    assert m.skipped == {"protocol type ''": 1, "key version 99": 1, "StreamsGroupMetadata record": 1}
    text = render_metrics("local", [], {}, skipped=dict(m.skipped))
    assert 'kafkascope_lag_records_skipped_total{reason="key version 99"} 1' in text
    m.apply_record(0, 60, struct.pack(">h", 3) + _s("g848"), None, 1_795_730_470_000)
    assert "g848" not in m.consumer_groups and "g848" not in m.storage.groups
    assert decode.RECORD_NAMES[3] == "ConsumerGroupMetadata"


def _member(client: str, parts: list[tuple[str, int]]) -> MemberDescription:
    return MemberDescription(f"id-{client}", client, "/10.0.0.1",
                             MemberAssignment([TopicPartition(t, p) for t, p in parts]))


def test_owners_only_for_consumer_protocol_groups():
    members = [_member("c0", [("orders", 1), ("orders", 0)]), _member("c1", [])]
    kip848 = ConsumerGroupDescription("g", False, members, "uniform", ConsumerGroupState.STABLE, None,
                                      type=ConsumerGroupType.CONSUMER)
    classic = ConsumerGroupDescription("g", False, members, "range", ConsumerGroupState.STABLE, None,
                                       type=ConsumerGroupType.CLASSIC)
    assert owners(kip848) == [("c0", "/10.0.0.1", (("orders", 0), ("orders", 1))), ("c1", "/10.0.0.1", ())]
    assert owners(classic) is None


def test_set_owners_replaces_the_previous_assignment():
    m = LagMonitor(LagConfig(cluster="local"))
    m.broker_offsets({("orders", p): 10 for p in range(2)}, {"orders": 2}, 1_000_000)
    m.storage.set_owners("g", [("c0", "/a", (("orders", 0), ("orders", 1)))])
    m.storage.set_owners("g", [("c1", "/b", (("orders", 1),))])
    views = {v.partition: (v.owner, v.client_id) for v in m.storage.fetch_group("g", 1_000_000)}
    assert views == {0: ("", ""), 1: ("/b", "c1")}


def test_snapshot_keeps_consumer_protocol_groups(tmp_path):
    """A restart reads nothing again (positions are snapshotted), so the groups to describe are snapshotted too."""
    config = LagConfig(cluster="local", state_dir=str(tmp_path))
    m = LagMonitor(config)
    for off, k, v in captured()[:6]:
        m.apply_record(0, off, k, v, 1_795_730_470_000)
    m.save()
    again = LagMonitor(config)
    assert again.consumer_groups == {"g848": {C0: "c0", C1: "c1"}} and again.positions == {0: 6}


def test_undecodable_records_are_counted_and_their_log_and_series_stay_bounded(caplog):
    """Records in bulk that do not decode (damaged, or forged through `__admin_client`): counted under
    `undecodable`, logged within the broker's budget (20 lines a minute, then one saying how many were left out);
    reasons carrying any version number fold into `other` past 64 reasons."""
    clock = ManualClock()
    m = LagMonitor(LagConfig(cluster="local"), clock)
    key = struct.pack(">h", 5) + _s("g") + _s("m")
    cut = captured()[0][2][:-6]
    with caplog.at_level("WARNING"):
        for off in range(2500):
            m.apply_record(0, off, key, cut, 1_795_730_470_000)
        clock.advance(60_000)   # ms: a minute later the budget is back
        m.apply_record(0, 2500, key, cut, 1_795_730_470_000)
    assert m.skipped == {"undecodable": 2501}
    lines = [r.getMessage() for r in caplog.records if "cannot decode" in r.getMessage()]
    assert len(lines) == 21 and lines[-1].endswith("(2501 so far, 2480 not logged)")
    for version in range(1, 201):
        m.apply_record(1, version, key, struct.pack(">h", version) + b"\0", 1_795_730_470_000)
    assert len(m.skipped) == 64 + 1 and m.skipped["other"] == 200 - 63   # 64 reasons, then "other"
    assert sum(m.skipped.values()) == 2701
