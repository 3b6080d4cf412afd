"""The consumer-lag SLO from the lag-history job's daily summary: the share of instants each group was OK."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from slo.jobs.lag_history import lag_history
from slo.report.window import Steps, day
from slo.specs import SLOSpec


def summary_dir(spark: SparkSession, lag_dir: str | Path, out: Path, end_ms: int) -> Path | None:
    """The lag-history job's output for `lag_dir`: as given, or, for the lag monitor's own history-dir (commits/,
    broker/), replayed now up to end_ms into out/lag-history (the live page's lag SLO). None when there is none
    yet (a young monitor flushes its first history after a minute)."""
    root = Path(lag_dir)
    if (root / "daily_summary").exists():
        return root
    if not all(any((root / t).glob("date=*/*.parquet")) for t in ("commits", "broker")):
        return None
    lag_history(spark, root, out / "lag-history", to_ms=end_ms)
    return out / "lag-history"


def group_sums(spark: SparkSession, summary: Path, steps: Steps) -> list:
    """Per group over the days of the window: instants, instants OK / WARN / ERR, and the largest lag."""
    ls = spark.read.parquet(str(summary / "daily_summary"))
    return (ls.where((F.col("date") >= day(steps.start_ms)) & (F.col("date") <= day(steps.end_ms - 1)))
            .groupBy("group").agg(F.sum("instants").alias("instants"),
                                  F.sum(F.col("share_ok") * F.col("instants")).alias("ok"),
                                  F.sum(F.col("share_warn") * F.col("instants")).alias("warn"),
                                  F.sum(F.col("share_err") * F.col("instants")).alias("err"),
                                  F.max("max_lag").alias("max_lag")).orderBy("group").collect())


def lag_slo(spec: SLOSpec, rows) -> dict:
    """The lag SLO over group_sums' rows: a group meets it when its share of OK instants reaches the target; its
    budget remaining is 1 - (1 - share) / (1 - target)."""
    target = spec.objective.target
    groups = []
    for r in rows:
        n = r["instants"] or 0
        share = r["ok"] / n if n else None
        groups.append({"group": r["group"], "instants": n, "share_ok": share,
                       "share_warn": r["warn"] / n if n else None, "share_err": r["err"] / n if n else None,
                       "max_lag": r["max_lag"], "met": None if share is None else share >= target,
                       "budget_remaining": None if share is None else 1 - (1 - share) / (1 - target)})
    return {"slo": spec.name, "target": target, "groups": groups,
            "groups_met": sum(1 for g in groups if g["met"]), "groups_total": len(groups)}


def lag_report(spark: SparkSession, lag_dir: str | Path | None, lag_specs: list[SLOSpec], out: Path,
               steps: Steps) -> dict | None:
    """The report's lag section (the first lag spec's), or None without a lag spec or lag history."""
    summary = summary_dir(spark, lag_dir, out, steps.end_ms) if lag_dir and lag_specs else None
    if summary is None or not (summary / "daily_summary").exists():
        return None
    return lag_slo(lag_specs[0], group_sums(spark, summary, steps))
