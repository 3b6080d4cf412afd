"""PySpark lag-history job: replay the offset history through Burrow's window and rules at every instant.

Reads the monitor's Parquet history (`commits/`, `broker/`), evaluates each group every `step` seconds with the
live code (slo.lag.replay, one RDD cogroup per group; pandas is not needed), and writes
`status_intervals/` (level = group | partition; status, from_ms, to_ms) and `daily_summary/` (per group and
date: share of evaluated time OK/WARN/ERR, max total lag, max lag seconds).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from slo.lag.config import LagConfig
from slo.lag.replay import replay_group

_DDL = ("level string, group string, topic string, partition int, status string, from_ms long, to_ms long, "
        "date string, instants long, share_ok double, share_warn double, share_err double, max_lag long, "
        "max_lag_seconds double")


def _rows(group: str, events: list[dict], from_ms: int, to_ms: int, step_ms: int, config: LagConfig) -> list[tuple]:
    """One group's output rows, in _DDL's column order."""
    events.sort(key=lambda e: (e["time_ms"], e["seq"]))
    h = replay_group(group, events, from_ms, to_ms, step_ms, config)
    nones = (None,) * 7
    rows = [("group", g, None, None, s, f, t, *nones) for g, s, f, t in h.group_intervals]
    rows += [("partition", g, tp, p, s, f, t, *nones) for g, tp, p, s, f, t in h.partition_intervals]
    rows += [("daily", group, None, None, None, None, None, day, d.instants, d.ok / d.instants, d.warn / d.instants,
              d.err / d.instants, d.max_lag, d.max_lag_seconds) for day, d in sorted(h.daily.items())]
    return rows


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
    step_ms = step_s * 1000
    group_topics = commits.where(F.col("topic").isNotNull()).select("group", "topic").distinct()
    broker_per_group = broker.join(group_topics, "topic")

    def keyed(df: DataFrame):
        return df.rdd.map(lambda r: (r["group"], r.asDict()))

    rows = keyed(commits).cogroup(keyed(broker_per_group)).flatMap(
        lambda kv: _rows(kv[0], [*kv[1][0], *kv[1][1]], from_ms, to_ms, step_ms, config))
    result = spark.createDataFrame(rows, _DDL).cache()
    intervals = result.where(F.col("level") != "daily").select("level", "group", "topic", "partition", "status",
                                                               "from_ms", "to_ms")
    daily = result.where(F.col("level") == "daily").select("group", "date", "instants", "share_ok", "share_warn",
                                                           "share_err", "max_lag", "max_lag_seconds")
    intervals.write.mode("overwrite").parquet(str(out / "status_intervals"))
    daily.write.mode("overwrite").partitionBy("date").parquet(str(out / "daily_summary"))
    counts = {"status_intervals": intervals.count(), "daily_summary": daily.count()}
    result.unpersist()
    return counts
