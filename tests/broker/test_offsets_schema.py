"""__consumer_offsets records against byte vectors written out by hand from Kafka's JSON schemas."""

import pytest

from broker.coordinator.offsets_schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
)


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


OFFSET_KEY = h("0001 0002 6731 0001 74 00000003")          # v1, "g1", "t", partition 3
GROUP_KEY = h("0002 0002 6731")                              # v2, "g1"


def test_keys_encode_and_decode():
    assert encode_key(OffsetCommitKey("g1", "t", 3)) == OFFSET_KEY
    assert decode_key(OFFSET_KEY) == OffsetCommitKey("g1", "t", 3)
    assert encode_key(GroupMetadataKey("g1")) == GROUP_KEY
    assert decode_key(GROUP_KEY) == GroupMetadataKey("g1")
    # Legacy key version 0 has the same layout.
    assert decode_key(h("0000 0002 6731 0001 74 00000003")) == OffsetCommitKey("g1", "t", 3)


def test_unknown_key_versions_are_skipped():
    assert decode_key(h("0003 0002 6731")) is None   # KIP-848 ConsumerGroupMetadataKey


OC_FIELDS = dict(offset=42, metadata="m", commit_timestamp=1000)
OC_VECTORS = {
    0: h("0000 000000000000002a 0001 6d 00000000000003e8"),
    1: h("0001 000000000000002a 0001 6d 00000000000003e8 00000000000007d0"),
    2: h("0002 000000000000002a 0001 6d 00000000000003e8"),
    3: h("0003 000000000000002a 00000005 0001 6d 00000000000003e8"),
    4: h("0004 000000000000002a 00000005 02 6d 00000000000003e8 00"),
}


@pytest.mark.parametrize("version", sorted(OC_VECTORS))
def test_offset_commit_value_versions(version):
    value = OffsetCommitValue(**OC_FIELDS, leader_epoch=5 if version >= 3 else -1,
                              expire_timestamp=2000 if version == 1 else -1)
    assert encode_offset_commit_value(value, version) == OC_VECTORS[version]
    assert decode_offset_commit_value(OC_VECTORS[version]) == value


def test_offset_commit_value_default_versions():
    assert encode_offset_commit_value(OffsetCommitValue(**OC_FIELDS, leader_epoch=5)) == OC_VECTORS[3]
    with_expiry = OffsetCommitValue(**OC_FIELDS, expire_timestamp=2000)
    assert encode_offset_commit_value(with_expiry) == OC_VECTORS[1]


def test_flexible_value_skips_unknown_tags():
    tagged = OC_VECTORS[4][:-1] + h("01 07 02 abcd")
    assert decode_offset_commit_value(tagged).offset == 42


def test_bad_values_raise():
    with pytest.raises(SchemaError):
        decode_offset_commit_value(h("0005 00"))
    with pytest.raises(SchemaError):
        decode_offset_commit_value(OC_VECTORS[3][:-1])
    with pytest.raises(SchemaError):
        decode_offset_commit_value(OC_VECTORS[3] + b"\x00")


MEMBER = MemberMetadata(member_id="m", client_id="c", client_host="/h", session_timeout=10000,
                        subscription=b"\x01", assignment=b"\x02\x03", group_instance_id="i", rebalance_timeout=300000)
# Member fields, then the header.
GM_HEAD = "0008 636f6e73756d6572 00000007 0005 72616e6765 0001 6d"   # consumer, gen 7, range, leader m
M_V0 = "0001 6d 0001 63 0002 2f68 00002710 00000001 01 00000002 0203"
M_V1 = "0001 6d 0001 63 0002 2f68 000493e0 00002710 00000001 01 00000002 0203"
M_V3 = "0001 6d 0001 69 0001 63 0002 2f68 000493e0 00002710 00000001 01 00000002 0203"
M_V4 = "02 6d 02 69 02 63 03 2f68 000493e0 00002710 02 01 03 0203 00"
GM_VECTORS = {
    0: h("0000" + GM_HEAD + "00000001" + M_V0),
    1: h("0001" + GM_HEAD + "00000001" + M_V1),
    2: h("0002" + GM_HEAD + "00000000000003e8" + "00000001" + M_V1),
    3: h("0003" + GM_HEAD + "00000000000003e8" + "00000001" + M_V3),
    4: h("0004 09 636f6e73756d6572 00000007 06 72616e6765 02 6d 00000000000003e8 02" + M_V4 + "00"),
}


@pytest.mark.parametrize("version", sorted(GM_VECTORS))
def test_group_metadata_value_versions(version):
    member = MemberMetadata(
        member_id="m", client_id="c", client_host="/h", session_timeout=10000, subscription=b"\x01",
        assignment=b"\x02\x03", group_instance_id="i" if version >= 3 else None,
        rebalance_timeout=300000 if version >= 1 else -1)
    value = GroupMetadataValue("consumer", 7, "range", "m", [member], 1000 if version >= 2 else -1)
    assert encode_group_metadata_value(value, version) == GM_VECTORS[version]
    assert decode_group_metadata_value(GM_VECTORS[version]) == value


def test_empty_group_metadata_with_null_protocol_and_leader():
    value = GroupMetadataValue("consumer", 8, None, None, [], 1000)
    raw = encode_group_metadata_value(value)
    assert raw == h("0003 0008 636f6e73756d6572 00000008 ffff ffff 00000000000003e8 00000000")
    assert decode_group_metadata_value(raw) == value


def test_round_trip_default_version():
    value = GroupMetadataValue("consumer", 1, "range", "m", [MEMBER], 5)
    assert decode_group_metadata_value(encode_group_metadata_value(value)) == value
