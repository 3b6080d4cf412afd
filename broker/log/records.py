"""RecordBatch v2 (magic 2): the 61-byte header, batch iteration, record decoding and batch building.

The broker stores batches verbatim; only the header is parsed on the hot path. Records are decoded where a
record-level decision is unavoidable (compacted topics, the cleaner, ListOffsets by timestamp).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from mmap import mmap

from crc32c import crc32c

from broker.log.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress
from common.wire import read_varint, write_varint

HEADER_SIZE = 61
# Bytes counted by batchLength start after baseOffset + batchLength.
LOG_OVERHEAD = 12
# batchLength of a batch with no records: the header minus baseOffset and batchLength.
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
CRC_START = 21
MAGIC = 2

COMPRESSION_NAMES = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRS = struct.Struct(">h")


@dataclass(slots=True)
class BatchHeader:
    """Every field of a v2 batch header, as stored (big-endian on the wire)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch including baseOffset and batchLength."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & ATTR_LOG_APPEND_TIME else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, wrapping past INT32_MAX to 0 as producers do."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


@dataclass(slots=True)
class Record:
    """One record. `offset` is absolute; `timestamp` is milliseconds."""

    offset: int = -1
    timestamp: int = -1
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def read_header(buf: bytes | bytearray | memoryview | mmap, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch starting at `pos` (no validation)."""
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def header_is_sane(h: BatchHeader) -> bool:
    """Structural checks that tell a real header from garbage or zeroes (magic, lengths, count)."""
    return (
        h.magic == MAGIC
        and h.batch_length >= MIN_BATCH_LENGTH
        and h.last_offset_delta >= 0
        and h.base_offset >= 0
    )


def crc_ok(buf: bytes | bytearray | memoryview, pos: int, h: BatchHeader) -> bool:
    """True when the stored CRC-32C matches the batch bytes from attributes to the end."""
    return crc32c(memoryview(buf)[pos + CRC_START: pos + h.size]) == h.crc


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each complete batch; stops quietly at a torn, partial or garbage tail."""
    end = len(buf)
    while end - pos >= HEADER_SIZE:
        h = read_header(buf, pos)
        if not header_is_sane(h) or pos + h.size > end:
            return
        yield pos, h
        pos += h.size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Patch baseOffset in place (outside the CRC)."""
    _BASE_OFFSET.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Patch partitionLeaderEpoch in place (outside the CRC)."""
    _EPOCH.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp = now; both are inside the CRC, so recompute it."""
    h.attributes |= ATTR_LOG_APPEND_TIME
    h.max_timestamp = now_ms
    _ATTRS.pack_into(buf, pos + 21, h.attributes)
    struct.pack_into(">q", buf, pos + 35, now_ms)
    h.crc = crc32c(memoryview(buf)[pos + CRC_START: pos + h.size])
    _CRC.pack_into(buf, pos + 17, h.crc)


# ---------------------------------------------------------------- varints and records

def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise ValueError("record field runs past the batch")
    return buf[pos: pos + n], pos + n


def records_section(batch: bytes | memoryview, h: BatchHeader | None = None) -> bytes:
    """The (decompressed) records bytes of one batch."""
    h = h or read_header(batch)
    body = memoryview(batch)[HEADER_SIZE: h.size]
    return decompress(h.compression, body) if h.compression else bytes(body)


def decode_records(batch: bytes | memoryview) -> list[Record]:
    """Decode every record of one batch (decompressing if needed). LogAppendTime batches report maxTimestamp.

    Raises ValueError on malformed record data.
    """
    h = read_header(batch)
    buf = records_section(batch, h)
    out: list[Record] = []
    pos = 0
    log_append = h.timestamp_type == 1
    try:
        for _ in range(h.record_count):
            length, pos = read_varint(buf, pos)
            end = pos + length
            if length < 0 or end > len(buf):
                raise ValueError("record length runs past the batch")
            pos += 1  # attributes: unused
            ts_delta, pos = read_varint(buf, pos)
            off_delta, pos = read_varint(buf, pos)
            key, pos = _read_bytes(buf, pos)
            value, pos = _read_bytes(buf, pos)
            n_headers, pos = read_varint(buf, pos)
            headers = []
            for _ in range(n_headers):
                hk, pos = _read_bytes(buf, pos)
                hv, pos = _read_bytes(buf, pos)
                headers.append(((hk or b"").decode("utf-8", "replace"), hv))
            if pos != end:
                raise ValueError("record length does not match its fields")
            ts = h.max_timestamp if log_append else h.base_timestamp + ts_delta
            out.append(Record(h.base_offset + off_delta, ts, key, value, headers))
    except IndexError:
        raise ValueError("truncated record") from None
    return out


def _encode_record(out: bytearray, offset_delta: int, ts_delta: int, r: Record) -> None:
    body = bytearray(b"\x00")
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    for part in (r.key, r.value):
        if part is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(part))
            body += part
    write_varint(body, len(r.headers))
    for hk, hv in r.headers:
        kb = hk.encode()
        write_varint(body, len(kb))
        body += kb
        if hv is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(hv))
            body += hv
    write_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    *,
    compression: int = NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type: int = 0,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Write a valid v2 batch.

    A record's `offset` is absolute (delta = offset - base_offset); -1 means "next after the previous record".
    A `timestamp` of -1 means now. `last_offset_delta` may exceed the last record's delta (the cleaner keeps a
    batch's original last offset after dropping records).
    """
    now = time.time_ns() // 1_000_000
    deltas, stamps = [], []
    prev = -1
    for r in records:
        d = r.offset - base_offset if r.offset >= 0 else prev + 1
        deltas.append(d)
        stamps.append(r.timestamp if r.timestamp >= 0 else now)
        prev = d
    first_ts = base_timestamp if base_timestamp is not None else (stamps[0] if stamps else now)
    body = bytearray()
    for r, d, ts in zip(records, deltas, stamps, strict=True):
        _encode_record(body, d, ts - first_ts, r)
    payload = compress(compression, bytes(body)) if compression else bytes(body)
    attributes = compression | (ATTR_LOG_APPEND_TIME if timestamp_type else 0)
    attributes |= (ATTR_TRANSACTIONAL if is_transactional else 0) | (ATTR_CONTROL if is_control else 0)
    lod = last_offset_delta if last_offset_delta is not None else (deltas[-1] if deltas else 0)
    max_ts = max_timestamp if max_timestamp is not None else max(stamps, default=first_ts)
    out = bytearray(HEADER_SIZE) + payload
    _HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0,
                      attributes, lod, first_ts, max_ts, producer_id, producer_epoch, base_sequence,
                      len(records))
    _CRC.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
