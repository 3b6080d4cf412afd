"""Kafka's storage layer, in Kafka's on-disk layout.

A partition lives in `<log dir>/<topic>-<partition>/`:

- `<20-digit base offset>.log`: record batches stored verbatim (RecordBatch v2);
- `<base>.index` / `<base>.timeindex`: sparse offset and time indexes (rebuilt when missing or corrupt);
- `<offset>.snapshot`: idempotent-producer state as of that offset;
- `log-start-offset`: the log start offset after DeleteRecords or retention;
- `cleaner-offset-checkpoint`: the first offset the log cleaner has not compacted yet.

Transient names: `cleaner-tmp/` and `*.swap` (a compaction swap in progress, finished or discarded on open) and
`<topic>-<partition>.<uuid>-delete` (a deleted partition, removed at startup if a crash left it).

Modules: records (batch header, decode/build), index, segment, producer_state, log (PartitionLog), cleaner,
manager (LogManager).
"""
