"""Bounded decompression: forged sizes and bombs are a ValueError, never a huge allocation."""

from __future__ import annotations

import resource
import struct

import cramjam
import pytest

from broker.log.compression import GZIP, LZ4, SNAPPY, ZSTD, compress, decompress
from broker.log.records import Record, build_batch, decode_records

DATA = b"".join(b"record %d " % i for i in range(20000))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_round_trip_and_the_output_limit(codec: int) -> None:
    packed = compress(codec, DATA)
    assert decompress(codec, packed) == DATA
    assert decompress(codec, packed, limit=len(DATA)) == DATA
    with pytest.raises(ValueError):
        decompress(codec, packed, limit=len(DATA) - 1)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_truncated_streams_are_refused(codec: int) -> None:
    packed = compress(codec, DATA)
    with pytest.raises(ValueError):
        decompress(codec, packed[: len(packed) // 2])


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_a_bomb_stops_at_the_limit(codec: int) -> None:
    bomb = compress(codec, bytes(64 * 1024 * 1024))  # 64 MiB of zeros in well under 1 MiB
    assert len(bomb) < 1024 * 1024
    with pytest.raises(ValueError, match="more than"):
        decompress(codec, bomb, limit=8 * 1024 * 1024)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_forged_declared_sizes_do_not_allocate() -> None:
    before = _rss_mb()
    # zstd: frame content size rewritten to 2**40 (single-segment frame, 8-byte content size field)
    z = bytes(cramjam.zstd.compress(b"hello" * 100))
    forged_zstd = z[:4] + bytes([0xE0]) + struct.pack("<Q", 2**40) + z[7:]
    # snappy (raw): the varint length prefix says 4 GiB
    forged_snappy = b"\xff\xff\xff\xff\x0f" + bytes(cramjam.snappy.compress_raw(b"hello" * 100))[2:]
    for codec, data in ((ZSTD, forged_zstd), (SNAPPY, forged_snappy)):
        with pytest.raises(ValueError):
            decompress(codec, data)
    assert _rss_mb() - before < 100


def test_a_batch_whose_records_decompress_past_the_limit_is_malformed() -> None:
    batch = build_batch([Record(key=b"k", value=b"v" * 1000)], compression=LZ4)
    assert decode_records(batch)[0].value == b"v" * 1000
    forged = bytearray(batch)
    forged[61 + 6] ^= 0xFF  # inside the lz4 frame descriptor: the header checksum no longer matches
    with pytest.raises(ValueError):
        decode_records(bytes(forged))
