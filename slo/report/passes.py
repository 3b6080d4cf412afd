"""The report's two Spark passes over the window's SLI intervals; everything they return is small.

  1. every ratio SLO's good/total summed per (cluster, topic, partition, leader, minute, HDR payload hashes);
     identical HDR payloads collapse into one row with a multiplicity (cached);
  2. one copy of each distinct payload: its sample count and samples under each latency threshold (slo.hdr).
The latency SLOs' good/total join back by hash; merged histograms per (day, cluster, topic) are built on the
executors from payload x multiplicity, so percentiles are exact merges of HDR histograms, never averages.

The rolling burn-down's history [start - window, start) only feeds per-minute counts (no per-partition grain, no
merged histograms, nothing cached); the latency SLOs' counts come from the same distinct-payload statistics as the
window's, to which only the histograms with a latency SLO add their distinct payloads.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from slo.report.hist import HISTS, latency_thresholds, merge_group, payload_stats
from slo.report.series import Counts
from slo.report.window import STEP_S, Steps, day
from slo.specs import FIELDS, SLOSpec

GROUPINGS = {"cluster": ("cluster",), "topic": ("cluster", "topic"), "leader": ("cluster", "leader"),
             "partition": ("cluster", "topic", "partition", "leader")}


def split_window(df: DataFrame, steps: Steps) -> tuple[DataFrame, DataFrame]:
    """(the window's rows with their day, the history's rows): intervals starting in [pre, start) and
    [start, end), read from the date partitions that can hold them."""
    t_ms = F.unix_millis("interval_start")
    read = (df.where((F.col("date") >= day(steps.pre_ms)) & (F.col("date") <= day(steps.end_ms)))
            .where((t_ms >= steps.pre_ms) & (t_ms < steps.end_ms)))
    rows = read.where(t_ms >= steps.start_ms).withColumn("day", F.date_format("interval_start", "yyyy-MM-dd"))
    return rows, read.where(t_ms < steps.start_ms)


def _row_counts(event_specs: list[SLOSpec]) -> list[Column]:
    """Per group: each ratio SLO's g{i}/t{i}, the rows and the milliseconds they cover."""
    ratio = []
    for i, s in enumerate(event_specs):
        if s.kind == "ratio":
            ratio += [F.sum(F.expr(FIELDS[s.good])).alias(f"g{i}"), F.sum(F.expr(FIELDS[s.total])).alias(f"t{i}")]
    dur = F.unix_millis("interval_end") - F.unix_millis("interval_start")
    return [*ratio, F.count(F.lit(1)).alias("rows"), F.sum(dur).alias("covered_ms")]


def hash_pass(rows: DataFrame, pre: DataFrame, steps: Steps, event_specs: list[SLOSpec],
              lat_hists: list[str]) -> tuple[DataFrame, DataFrame]:
    """Pass 1: (window rows grouped per partition, minute and payload hashes, cached; the history's per minute,
    hashed only where a latency SLO needs samples under its threshold)."""
    step = F.floor((F.unix_millis("interval_start") - F.lit(steps.start_ms)) / (STEP_S * 1000)).cast("long")
    counts = _row_counts(event_specs)
    hashed = (rows.withColumn("step", step)
              .groupBy("cluster", "topic", "partition", "leader", "step", "day",
                       *[F.xxhash64(h).alias(f"hash_{h}") for h in HISTS])
              .agg(*counts).cache())
    pre_hashed = (pre.withColumn("step", step)
                  .groupBy("step", *[F.xxhash64(h).alias(f"hash_{h}") for h in lat_hists]).agg(*counts))
    return hashed, pre_hashed


def _payloads(frame: DataFrame, hists) -> DataFrame:
    return (frame.select(F.explode(F.array(*[F.struct(F.xxhash64(h).alias("h"), F.col(h).alias("payload"))
                                             for h in hists])).alias("p")).select("p.h", "p.payload"))


def payload_pass(spark: SparkSession, rows: DataFrame, pre: DataFrame, ths_all: tuple[int, ...],
                 lat_hists: list[str]) -> DataFrame:
    """Pass 2: each distinct payload once (by hash) with its sample count n and samples le{t} under each
    threshold (cached)."""
    every = _payloads(rows, HISTS).unionByName(_payloads(pre, lat_hists)) if lat_hists else _payloads(rows, HISTS)
    distinct = every.groupBy("h").agg(F.first("payload").alias("payload"))
    return spark.createDataFrame(
        distinct.rdd.map(lambda r: (r["h"], bytearray(r["payload"]), *payload_stats(bytes(r["payload"]), ths_all))),
        ", ".join(["h long", "payload binary", "n long", *[f"le{t} long" for t in ths_all]])).cache()


def merge_histograms(hashed: DataFrame, stats: DataFrame) -> dict[str, dict]:
    """histogram -> (day, cluster, topic) -> sparse merged histogram, merged on the executors."""
    merged = {}
    for h in HISTS:
        per = (hashed.groupBy("day", "cluster", "topic", F.col(f"hash_{h}").alias("h")).agg(F.sum("rows").alias("k"))
               .join(stats.select("h", "payload"), "h"))
        merged[h] = dict(per.rdd.map(lambda r: ((r["day"], r["cluster"], r["topic"]), (bytes(r["payload"]), r["k"])))
                         .groupByKey().mapValues(merge_group).collect())
    return merged


def _event_sums(event_specs: list[SLOSpec]) -> list[Column]:
    """Every SLO's g{i}/t{i}: ratio SLOs sum theirs, latency SLOs the payload statistics x multiplicity."""
    sums = []
    for i, s in enumerate(event_specs):
        if s.kind == "ratio":
            sums += [F.sum(f"g{i}").alias(f"g{i}"), F.sum(f"t{i}").alias(f"t{i}")]
        else:
            n = F.coalesce(F.col(f"n_{s.histogram}"), F.lit(0)) * F.col("rows")
            le = F.coalesce(F.col(f"le{s.threshold_us}_{s.histogram}"), F.lit(0)) * F.col("rows")
            sums += [F.sum(le).alias(f"g{i}"), F.sum(n).alias(f"t{i}")]
    return [*sums, F.sum("rows").alias("rows"), F.sum("covered_ms").alias("covered_ms")]


def _stats_joiner(stats: DataFrame, thresholds: dict[str, list[tuple[int, int]]]):
    """A function joining each latency histogram's payload statistics onto a hashed frame (broadcast: small)."""
    small = stats.drop("payload")
    per_hist = {h: small.select(F.col("h").alias(f"hash_{h}"), F.col("n").alias(f"n_{h}"),
                                *[F.col(f"le{t}").alias(f"le{t}_{h}") for _, t in thresholds[h]])
                for h in HISTS if thresholds[h]}

    def with_stats(frame: DataFrame) -> DataFrame:
        for h, table in per_hist.items():
            frame = frame.join(F.broadcast(table), f"hash_{h}", "left")
        return frame
    return with_stats


def _collect(counts: Counts, grain: DataFrame, pre_rows: DataFrame) -> None:
    """The driver's share: per-minute sums, totals and the per-scope sums of the grain."""
    gcols = [c for c in grain.columns if c[0] in "gt" and c[1:].isdigit()]
    agg_exprs = [F.sum(c).alias(c) for c in gcols]
    counts.step_rows = grain.groupBy("step").agg(*agg_exprs, F.sum("rows").alias("rows")).collect()
    counts.pre_rows = pre_rows.collect()
    totals = grain.agg(F.sum("rows"), F.sum("covered_ms"), F.countDistinct("cluster", "topic", "partition")).first()
    counts.input_rows, counts.covered_ms, counts.series = (int(totals[0] or 0), int(totals[1] or 0),
                                                           int(totals[2] or 0))
    for scope, keys in GROUPINGS.items():
        counts.groups[scope] = grain.groupBy(*keys).agg(*agg_exprs).collect()


def aggregate(spark: SparkSession, df: DataFrame, steps: Steps, event_specs: list[SLOSpec]) -> Counts:
    """Both passes over `df` for the window `steps`, collected."""
    thresholds = latency_thresholds(event_specs)
    lat_hists = [h for h in HISTS if thresholds[h]]
    rows, pre = split_window(df, steps)
    hashed, pre_hashed = hash_pass(rows, pre, steps, event_specs, lat_hists)
    ths_all = tuple(sorted({t for h in HISTS for _, t in thresholds[h]}))
    stats = payload_pass(spark, rows, pre, ths_all, lat_hists)
    counts = Counts(merged=merge_histograms(hashed, stats))
    with_stats = _stats_joiner(stats, thresholds)
    sums = _event_sums(event_specs)
    grain = with_stats(hashed).groupBy("cluster", "topic", "partition", "leader", "step").agg(*sums).cache()
    _collect(counts, grain, with_stats(pre_hashed).groupBy("step").agg(*sums))
    grain.unpersist()
    hashed.unpersist()
    stats.unpersist()
    return counts
