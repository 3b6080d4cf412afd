"""Offset history sink: what the collector saw, as Parquet files partitioned by date, written atomically.

Two tables under the history directory, each `TABLE/date=YYYY-MM-DD/part-*.parquet`:
`commits` (commits and the deletes that change group state) and `broker` (log-end offsets, topic deletions).
`seq` orders events that share a millisecond, so a replay applies them exactly as the live monitor did.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COMMITS = pa.schema([("seq", pa.int64()), ("time_ms", pa.int64()), ("kind", pa.string()), ("group", pa.string()),
                     ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                     ("order", pa.int64()), ("timestamp", pa.int64())])
BROKER = pa.schema([("seq", pa.int64()), ("time_ms", pa.int64()), ("kind", pa.string()), ("topic", pa.string()),
                    ("partition", pa.int32()), ("offset", pa.int64()), ("partition_count", pa.int32())])

COMMIT, OFFSET_DELETE, GROUP_DELETE, GROUP_TOPIC_DELETE = "commit", "offset_delete", "group_delete", "group_topic_delete"
BROKER_OFFSET, TOPIC_DELETE = "offset", "topic_delete"


def date_of(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000, UTC).strftime("%Y-%m-%d")


def write_table(root: str | Path, name: str, table: pa.Table) -> list[Path]:
    """Write one file per date partition: to a hidden temp name, then rename into place."""
    written = []
    dates = [date_of(t) for t in table.column("time_ms").to_pylist()]
    for day in sorted(set(dates)):
        part = table.filter(pa.array([d == day for d in dates]))
        directory = Path(root) / name / f"date={day}"
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / f"part-{part.column('seq')[0].as_py():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = directory / f".{final.name}.tmp"
        pq.write_table(part, tmp)
        os.replace(tmp, final)
        written.append(final)
    return written


class HistorySink:
    """Buffers rows and flushes them as Parquet; `seq` continues from `first_seq` (kept in snapshots)."""

    def __init__(self, root: str | Path, first_seq: int = 0) -> None:
        self.root = Path(root)
        self.seq = first_seq
        self._commits: list[tuple] = []
        self._broker: list[tuple] = []

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def commit(self, time_ms: int, kind: str, group: str, topic: str | None = None, partition: int | None = None,
               offset: int | None = None, order: int | None = None, timestamp: int | None = None) -> None:
        self._commits.append((self._next(), time_ms, kind, group, topic, partition, offset, order, timestamp))

    def broker(self, time_ms: int, kind: str, topic: str, partition: int | None = None, offset: int | None = None,
               partition_count: int | None = None) -> None:
        self._broker.append((self._next(), time_ms, kind, topic, partition, offset, partition_count))

    def flush(self) -> None:
        for name, schema, rows in (("commits", COMMITS, self._commits), ("broker", BROKER, self._broker)):
            if rows:
                columns = list(zip(*rows, strict=True))
                write_table(self.root, name, pa.table([pa.array(c, f.type) for c, f in zip(columns, schema,
                                                                                           strict=True)],
                                                      schema=schema))
                rows.clear()
