"""The report's input: xmonitor's SLI interval files (with closed days from slo.live.compact's cache)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from slo import live


def read_intervals(spark: SparkSession, sli_dir: str | Path, cache: str | Path | None = None) -> DataFrame | None:
    """The SLI intervals; with `cache` (slo.live.compact), its days come from there and the rest from sli_dir."""
    root = Path(sli_dir)
    if not root.exists() or not any(root.glob("date=*/*.parquet")):
        return None
    cached = {p.parent.name for p in Path(cache).glob("date=*/compact-*.parquet")} if cache else set()
    if not cached:
        return spark.read.option("basePath", str(root)).parquet(str(root))
    df = spark.read.option("basePath", str(cache)).parquet(*(str(Path(cache) / d) for d in sorted(cached)))
    rest = sorted(str(p) for p in root.glob("date=*") if p.name not in cached and any(p.glob("*.parquet")))
    if rest:
        df = df.unionByName(spark.read.option("basePath", str(root)).parquet(*rest))
    return df


def last_end_ms(df: DataFrame | None) -> int:
    """The end of the last interval read (the report's default as-of), or now (whole seconds) without any."""
    last = df.agg(F.max("interval_end")).first()[0] if df is not None else None
    return int(last.timestamp() * 1000) if last is not None else int(dt.datetime.now(dt.UTC).timestamp()) * 1000


def source(sli_dir: str | Path) -> dict:
    """Where the intervals came from: `slo generate` marks its output (slo.live.SYNTHETIC_MARKER)."""
    marker = live.read_marker(sli_dir)
    return {"sli_dir": str(sli_dir), "synthetic": marker is not None, "generator": marker}
