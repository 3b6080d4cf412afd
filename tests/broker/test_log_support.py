"""Shared helpers for the log tests (no tests here)."""

from __future__ import annotations

from pathlib import Path

from broker.config import LogConfig
from broker.log.log import PartitionLog
from broker.log.records import Record, build_batch, decode_records, iter_batches
from common.clock import ManualClock


def batch(n: int = 1, *, ts: int, key: bytes | None = b"k", value: bytes | None = b"v", **kw) -> bytes:
    """A client batch of `n` records (offsets 0..n-1) all with timestamp `ts`."""
    return build_batch([Record(timestamp=ts, key=key, value=value) for _ in range(n)], **kw)


def keyed(pairs: list[tuple[bytes, bytes | None]], *, ts: int, **kw) -> bytes:
    return build_batch([Record(timestamp=ts, key=k, value=v) for k, v in pairs], **kw)


def make_log(path: Path, clock: ManualClock, topic: str = "t", partition: int = 0, **cfg) -> PartitionLog:
    return PartitionLog(topic, partition, path / f"{topic}-{partition}", LogConfig(**cfg), clock)


def records_of(data: bytes | memoryview) -> list[Record]:
    out: list[Record] = []
    for pos, h in iter_batches(data):
        out.extend(decode_records(memoryview(data)[pos: pos + h.size]))
    return out


def read_all(plog: PartitionLog, start: int | None = None) -> list[Record]:
    """Every record from `start` (default: log start offset) to the log end offset."""
    out: list[Record] = []
    offset = plog.log_start_offset if start is None else start
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20)
        if not data:
            break
        heads = [h for _, h in iter_batches(data)]
        out.extend(r for r in records_of(data) if r.offset >= offset)
        offset = heads[-1].next_offset
    return out
