import struct

import pytest
from crc32c import crc32c
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.records.readers import read_batch

from broker.log.records import (
    GZIP,
    HEADER_SIZE,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    Record,
    build_batch,
    crc_ok,
    decode_records,
    iter_batches,
    read_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]


def sample_records(n: int = 5) -> list[Record]:
    return [
        Record(timestamp=1_000 + i, key=None if i == 1 else b"key%d" % i, value=None if i == 2 else b"v" * (i * 40),
               headers=[("h", b"x"), ("n", None)] if i == 3 else [])
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_build_and_decode_round_trip(codec):
    recs = sample_records()
    data = build_batch(recs, 100, compression=codec, producer_id=7, producer_epoch=2, base_sequence=11)
    h = read_header(data)
    assert (h.base_offset, h.record_count, h.last_offset_delta, h.compression) == (100, 5, 4, codec)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 2, 11, 15)
    assert h.size == len(data) and crc_ok(data, 0, h)
    assert (h.base_timestamp, h.max_timestamp) == (1_000, 1_004)
    out = decode_records(data)
    assert [r.offset for r in out] == [100, 101, 102, 103, 104]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in out] == [
        (r.key, r.value, r.headers, r.timestamp) for r in recs]


def test_kio_reader_accepts_built_batch():
    data = build_batch(sample_records(), 3)
    parsed, _ = read_batch(data, 0)
    assert parsed.base_offset == 3 and len(parsed.records) == 5
    assert parsed.records[0].key == b"key0"


@pytest.mark.parametrize("codec", CODECS)
def test_interoperates_with_kafka_python(codec):
    # kafka-python decodes what we build ...
    ours = build_batch(sample_records(), 0, compression=codec)
    theirs_view = list(MemoryRecords(ours).next_batch())
    assert [r.key for r in theirs_view] == [r.key for r in sample_records()]
    # ... and we decode what kafka-python builds (its snappy uses xerial framing).
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i in range(20):
        b.append(i, 2_000 + i, b"k%d" % i, b"value-%d" % i * 10, [])
    built = bytes(b.build())
    assert [(r.offset, r.key, r.timestamp) for r in decode_records(built)] == [
        (i, b"k%d" % i, 2_000 + i) for i in range(20)]


def test_raw_snappy_is_decoded_too():
    import cramjam

    plain = build_batch(sample_records(), 0)
    body = bytes(cramjam.snappy.compress_raw(plain[HEADER_SIZE:]))
    data = bytearray(plain[:HEADER_SIZE] + body)
    struct.pack_into(">ih", data, 8, len(data) - 12, 0)
    struct.pack_into(">h", data, 21, SNAPPY)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    assert [r.key for r in decode_records(bytes(data))] == [r.key for r in sample_records()]


def test_iter_batches_stops_at_torn_tail():
    a, b = build_batch(sample_records(), 0), build_batch(sample_records(2), 5)
    buf = a + b + b[:30]
    assert [(p, h.base_offset) for p, h in iter_batches(buf)] == [(0, 0), (len(a), 5)]
    assert [h.base_offset for _, h in iter_batches(a + b[: len(b) - 1])] == [0]
    assert list(iter_batches(a + bytes(100))) != [] and len(list(iter_batches(a + bytes(100)))) == 1


def test_patching_offset_and_epoch_keeps_crc_and_log_append_time_recomputes_it():
    buf = bytearray(build_batch(sample_records(), 0))
    set_base_offset(buf, 0, 12345)
    set_partition_leader_epoch(buf, 0, 9)
    h = read_header(buf)
    assert (h.base_offset, h.partition_leader_epoch) == (12345, 9) and crc_ok(buf, 0, h)
    set_log_append_time(buf, 0, h, 99_999)
    h2 = read_header(buf)
    assert h2.timestamp_type == 1 and h2.max_timestamp == 99_999
    assert crc32c(bytes(buf[21:])) == h2.crc
    assert all(r.timestamp == 99_999 for r in decode_records(bytes(buf)))


def test_build_batch_keeps_given_offsets_and_last_offset_delta():
    recs = [Record(offset=10, timestamp=5, key=b"a", value=b"1"), Record(offset=13, timestamp=6, key=b"b", value=b"2")]
    data = build_batch(recs, 10, last_offset_delta=7, base_timestamp=1)
    h = read_header(data)
    assert (h.record_count, h.last_offset, h.base_timestamp, h.max_timestamp) == (2, 17, 1, 6)
    assert [r.offset for r in decode_records(data)] == [10, 13]


def test_malformed_records_raise_value_error():
    data = bytearray(build_batch(sample_records(), 0))
    struct.pack_into(">i", data, 57, 50)  # claims more records than present
    with pytest.raises(ValueError):
        decode_records(bytes(data))
