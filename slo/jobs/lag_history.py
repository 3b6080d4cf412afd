"""PySpark lag-history job: replay the offset history through Burrow's window and rules at every instant.

Reads the monitor's Parquet history (`commits/`, `broker/`), hands each group's events to Python as one Arrow
table (`applyInArrow` keyed by group: the group is Burrow's evaluation unit, its status folds its partitions and
deletes and expiry act on all of them), replays them with the live code (lagmonitor.replay) every `step` seconds,
and writes `status_intervals/` (level = group | partition; status, from_ms, to_ms) and `daily_summary/` (per
group and date: share of evaluated time OK/WARN/ERR, max total lag, max lag seconds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from lagmonitor.config import LagConfig
from lagmonitor.replay import EVENT_COLUMNS, replay_group

_SCHEMA = pa.schema([("level", pa.string()), ("group", pa.string()), ("topic", pa.string()),
                     ("partition", pa.int32()), ("status", pa.string()), ("from_ms", pa.int64()),
                     ("to_ms", pa.int64()), ("date", pa.string()), ("instants", pa.int64()),
                     ("share_ok", pa.float64()), ("share_warn", pa.float64()), ("share_err", pa.float64()),
                     ("max_lag", pa.int64()), ("max_lag_seconds", pa.float64())])


def _event_rows(table: pa.Table, chunk: int = 65_536) -> Iterator[tuple]:
    """The table's EVENT_COLUMNS as Python tuples, converted a chunk at a time (a group has millions of rows)."""
    for batch in table.to_batches(max_chunksize=chunk):
        yield from zip(*(batch.column(c).to_pylist() for c in EVENT_COLUMNS), strict=True)


def _replay(group: str, table: pa.Table, from_ms: int, to_ms: int, step_ms: int, config: LagConfig) -> pa.Table:
    """One group's events (any order) → its output rows in _SCHEMA."""
    table = table.sort_by([("time_ms", "ascending"), ("seq", "ascending")])
    h = replay_group(group, _event_rows(table), from_ms, to_ms, step_ms, config)
    nones = (None,) * 7
    rows = [("group", g, None, None, s, f, t, *nones) for g, s, f, t in h.group_intervals]
    rows += [("partition", g, tp, p, s, f, t, *nones) for g, tp, p, s, f, t in h.partition_intervals]
    rows += [("daily", group, None, None, None, None, None, day, d.instants, d.ok / d.instants, d.warn / d.instants,
              d.err / d.instants, d.max_lag, d.max_lag_seconds) for day, d in h.daily.items()]
    columns = zip(*rows, strict=True) if rows else ([] for _ in _SCHEMA)
    return pa.table([pa.array(c, f.type) for c, f in zip(columns, _SCHEMA, strict=True)], schema=_SCHEMA)


def _read(spark: SparkSession, root: Path, name: str, to_ms: int | None) -> DataFrame:
    df = spark.read.option("basePath", str(root / name)).parquet(str(root / name))
    return df if to_ms is None else df.where(F.col("time_ms") <= to_ms)


def lag_history(spark: SparkSession, input_dir: str | Path, out_dir: str | Path, from_ms: int | None = None,
                to_ms: int | None = None, step_s: int = 60, config: LagConfig | None = None) -> dict[str, int]:
    """Run the job; returns the number of rows written per output."""
    config = config or LagConfig()
    config = dataclasses.replace(config, evaluator=dataclasses.replace(config.evaluator, expire_cache_s=0))
    root, out = Path(input_dir), Path(out_dir)
    commits = _read(spark, root, "commits", to_ms).drop("date")
    broker = _read(spark, root, "broker", to_ms).drop("date")
    if from_ms is None or to_ms is None:
        lo, hi = commits.select("time_ms").union(broker.select("time_ms")).agg(F.min("time_ms"), F.max("time_ms")).first()
        from_ms = lo if from_ms is None else from_ms
        to_ms = hi if to_ms is None else to_ms
    group_topics = commits.where(F.col("topic").isNotNull()).select("group", "topic").distinct()
    events = commits.unionByName(broker.join(group_topics, "topic"), allowMissingColumns=True)

    def replay(key, table):  # unannotated (and not a partial): applyInArrow then takes the (key, Table) form
        return _replay(key[0].as_py(), table, from_ms, to_ms, step_s * 1000, config)

    result = (events.select("group", "seq", *EVENT_COLUMNS).groupBy("group")
              .applyInArrow(replay, from_arrow_schema(_SCHEMA)).cache())
    intervals = result.where(F.col("level") != "daily").select("level", "group", "topic", "partition", "status",
                                                               "from_ms", "to_ms")
    daily = result.where(F.col("level") == "daily").select("group", "date", "instants", "share_ok", "share_warn",
                                                           "share_err", "max_lag", "max_lag_seconds")
    intervals.write.mode("overwrite").parquet(str(out / "status_intervals"))
    daily.write.mode("overwrite").partitionBy("date").parquet(str(out / "daily_summary"))
    counts = {"status_intervals": intervals.count(), "daily_summary": daily.count()}
    result.unpersist()
    return counts
