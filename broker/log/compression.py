"""Record-batch compression codecs, with decompression bounded in what it may allocate.

A batch's records section comes from the client, and several formats carry a declared uncompressed size that
a decoder allocates up front (lz4's frame content size, zstd's frame content size, snappy's length prefix).
A forged size must not make the broker allocate gigabytes, so every codec here decompresses with an output
limit: streaming decoders (zlib, lz4.frame, zstandard) asked for at most the limit plus one byte, snappy's
declared length checked before cramjam allocates it. Too much output is a ValueError (CORRUPT_MESSAGE to the
producer), as is any decoding failure.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from common.wire import WireError, read_uvarint

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
# The most a records section may decompress to. Clients bound a batch by its uncompressed size
# (librdkafka's batch.size, the Java producer's max.request.size, both 1 MB by default); 64 MiB leaves room
# for a 64x larger message.max.bytes while keeping one request's decompression far from the memory limit.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

_INT32 = struct.Struct(">i")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
# Max uncompressed bytes per xerial block, as Kafka's Java snappy stream writes them.
_XERIAL_BLOCK = 32 * 1024


def decompress(codec: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a batch's records section; ValueError if it is malformed or would exceed `limit` bytes."""
    try:
        if codec == GZIP:
            out = _gzip(bytes(data), limit)
        elif codec == SNAPPY:
            out = _snappy(bytes(data), limit)
        elif codec == LZ4:
            out = _lz4(bytes(data), limit)
        elif codec == ZSTD:
            out = _zstd(bytes(data), limit)
        else:
            raise ValueError(f"unknown compression codec {codec}")
    except ValueError:
        raise
    except Exception as e:  # each library raises its own error types
        raise ValueError(f"codec {codec}: {e}") from None
    if len(out) > limit:
        raise ValueError(f"records decompress to more than {limit} bytes")
    return out


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section the way Kafka's Java client does (snappy in xerial framing, lz4 frame)."""
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i: i + _XERIAL_BLOCK]))
            out += _INT32.pack(len(block)) + block
        return bytes(out)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _gzip(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while data:  # gzip members may follow each other
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            break
        if not d.eof:
            raise ValueError("gzip stream is truncated")
        data = d.unused_data
    return bytes(out)


def _lz4(data: bytes, limit: int) -> bytes:
    # lz4.frame allocates max_length up front: ask in steps sized to the input rather than the whole limit
    d = lz4.frame.LZ4FrameDecompressor()
    step = max(1 << 20, 4 * len(data))
    out = bytearray(d.decompress(data, max_length=min(step, limit + 1)))
    for _ in range(limit // step + 1):
        if d.eof or len(out) > limit:
            break
        before = len(out)
        out += d.decompress(b"", max_length=min(step, limit + 1 - len(out)))
        if len(out) == before:
            break  # needs input it will not get
    if len(out) <= limit and not d.eof:
        raise ValueError("lz4 frame is truncated")
    return bytes(out)


def _zstd(data: bytes, limit: int) -> bytes:
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        return reader.read(limit + 1)


def _snappy_raw(block: bytes, limit: int) -> bytes:
    try:
        declared, _ = read_uvarint(block, 0, len(block), limit=10)
    except WireError:
        raise ValueError("snappy length prefix is malformed") from None
    if declared > limit:
        raise ValueError(f"snappy block declares {declared} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy(data: bytes, limit: int) -> bytes:
    # Java clients frame snappy the xerial way: 16-byte header, then [int32 length][raw block] chunks.
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw(data, limit)
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("xerial chunk header is truncated")
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError(f"xerial chunk of {n} bytes runs past the records")
        out += _snappy_raw(data[pos: pos + n], limit - len(out))
        pos += n
    return bytes(out)

