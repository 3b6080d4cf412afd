"""PySpark 14-day SLO report over xmonitor's SLI interval files (xmonitor/sli_schema.py).

Spark does the per-row work in two passes over the window's files:
  1. every ratio SLO's good/total summed per (cluster, topic, partition, leader, minute, HDR payload hashes);
     identical HDR payloads collapse into one row with a multiplicity (cached);
  2. one copy of each distinct payload: its sample count and samples under each latency threshold (slo.hdr).
The latency SLOs' good/total join back by hash; merged histograms per (day, cluster, topic) are built on the
executors from payload x multiplicity, so percentiles are exact merges of HDR histograms, never averages.
Everything after that is small: the minute series and the grouped sums go to the driver, where the pure maths in
slo.sli computes SLI, budget, burn, alerts, timeslices. Outputs: Parquet tables, report.json, report.html.

Counting rules: an interval belongs to the window when interval_start is in [start, end): start = end - window
for a rolling window; for a calendar-aligned one (OpenSLO isRolling: false) start is the start of the calendar
period holding the last reported instant, and the budget is the period's, consumed so far. Occurrences count
events; steps (minutes) without any row are "missing": they carry no events for Occurrences, and are left out of
Timeslices' denominator (reported, with the SLI also given counting them as bad).

Burn-down, fixed and rolling: the fixed view accumulates from the window start; the rolling view at each step t is
the budget remaining of the trailing window (same length) ending at t, so it also needs [start - window, start).
Those earlier rows only feed per-minute counts (no per-partition grain, no merged histograms, nothing cached);
the latency SLOs' counts come from the same distinct-payload statistics as the window's, to which only the
histograms with a latency SLO add their distinct payloads.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from slo import hdr, live, sli
from slo.specs import FIELDS, SLOSpec

STEP_S = 60
HISTS = ("e2e_latency_hdr", "produce_latency_hdr")


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d")


def _read(spark: SparkSession, sli_dir: str | Path, cache: str | Path | None = None) -> DataFrame | None:
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


def _sparse(counts: np.ndarray) -> tuple[list[int], list[int]]:
    nz = np.nonzero(counts)[0]
    return nz.tolist(), counts[nz].tolist()


def _merge_group(items) -> tuple[list[int], list[int]]:
    return _sparse(hdr.merge(items))


def _payload_stats(payload: bytes, thresholds: tuple[int, ...]) -> tuple[int, ...]:
    counts = hdr.counts_of(payload)
    return (int(counts.sum()), *(hdr.count_le(counts, t) for t in thresholds))


def _dense(sparse_parts) -> np.ndarray:
    acc = hdr.empty()
    for idx, vals in sparse_parts:
        if idx:
            acc[np.asarray(idx)] += np.asarray(vals, dtype=np.int64)
    return acc


def _num(x):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return None
    return x


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _num(float(obj))
    return obj


def _trailing_burn(bad_all: list[float], total_all: list[float], n_pre: int, target: float,
                   seconds: int) -> list[float]:
    """Burn over the trailing `seconds` at each step of the window (the series hold `n_pre` steps of history
    before it, which count: a window's first hours are not judged on a few minutes of data)."""
    return sli.rolling_burn(bad_all, total_all, max(1, seconds // STEP_S), target)[n_pre:]


def _occurrences(spec: SLOSpec, good: float, total: float, window_s: int, elapsed_s: int) -> dict:
    bad = total - good
    out = {"total": total, "good": good, "bad": bad, "sli": sli.sli(good, total),
           "burn_rate": sli.burn_rate(bad, total, spec.objective.target)}
    out.update(sli.error_budget(total, bad, spec.objective.target, window_s, elapsed_s))
    out["met"] = None if total == 0 else out["sli"] >= spec.objective.target
    return out


def _scope_rows(spec: SLOSpec, i: int, rows, keys: tuple[str, ...], window_s: int, elapsed_s: int,
                allowed: float) -> list[dict]:
    out = []
    for r in rows:
        good, total = r[f"g{i}"] or 0, r[f"t{i}"] or 0
        occ = _occurrences(spec, good, total, window_s, elapsed_s)
        out.append({"slo": spec.name, **{k: r[k] for k in keys}, "total": total, "bad": total - good,
                    "sli": occ["sli"], "burn_rate": occ["burn_rate"], "remaining_ratio": occ["remaining_ratio"],
                    "share_of_window_budget": (total - good) / allowed if allowed > 0 else None})
    return out


def report_window(specs: list[SLOSpec], end_ms: int, window_s: int | None = None) -> dict:
    """The reported period: rolling [end - window, end), or, for a calendar-aligned spec (and no window_s
    override), the calendar period holding the last reported instant end_ms - 1, reported up to end_ms."""
    cal = specs[0].calendar if specs and window_s is None else None
    if cal is None:
        window_s = int(window_s or (specs[0].window_s if specs else 14 * 86400))
        return {"kind": "rolling", "start_ms": end_ms - window_s * 1000, "end_ms": end_ms, "as_of_ms": end_ms,
                "seconds": window_s, "elapsed_seconds": window_s}
    lo, hi = cal.period(end_ms - 1)
    return {"kind": "calendar", "start_ms": lo, "end_ms": hi, "as_of_ms": end_ms, "seconds": (hi - lo) // 1000,
            "elapsed_seconds": (end_ms - lo) // 1000,
            "calendar": {"startTime": cal.start.strftime("%Y-%m-%d %H:%M:%S"), "timeZone": cal.time_zone,
                         "duration": f"{cal.count}{cal.unit}"}}


def _source(sli_dir: str | Path) -> dict:
    """Where the intervals came from: `slo generate` marks its output (slo.live.SYNTHETIC_MARKER)."""
    marker = live.read_marker(sli_dir)
    return {"sli_dir": str(sli_dir), "synthetic": marker is not None, "generator": marker}


def _lag_summary(spark: SparkSession, lag_dir: str | Path, out: Path, end_ms: int) -> Path | None:
    """The lag-history job's output for `lag_dir`: as given, or, for the lag monitor's own history-dir (commits/,
    broker/), replayed now up to end_ms into out/lag-history (the live page's lag SLO). None when there is none
    yet (a young monitor flushes its first history after a minute)."""
    root = Path(lag_dir)
    if (root / "daily_summary").exists():
        return root
    if not all(any((root / t).glob("date=*/*.parquet")) for t in ("commits", "broker")):
        return None
    from slo.jobs.lag_history import lag_history

    lag_history(spark, root, out / "lag-history", to_ms=end_ms)
    return out / "lag-history"


def slo_report(spark: SparkSession, sli_dir: str | Path, specs: list[SLOSpec], out_dir: str | Path,
               end_ms: int | None = None, window_s: int | None = None, lag_dir: str | Path | None = None,
               top: int = 10, sli_cache: str | Path | None = None) -> dict:
    """Run the report; writes Parquet tables, report.json and report.html under out_dir; returns the report.
    sli_cache: compacted closed days of sli_dir (slo.live.compact), read instead of their per-interval files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    event_specs = [s for s in specs if s.kind != "lag"]
    lag_specs = [s for s in specs if s.kind == "lag"]
    df = _read(spark, sli_dir, sli_cache)
    if end_ms is None:
        last = df.agg(F.max("interval_end")).first()[0] if df is not None else None
        end_ms = int(last.timestamp() * 1000) if last is not None else int(dt.datetime.now(dt.UTC).timestamp()) * 1000
    period = report_window(specs, end_ms, window_s)
    start_ms, window_s, elapsed_s = period["start_ms"], period["seconds"], period["elapsed_seconds"]
    n_steps = -(-elapsed_s // STEP_S)
    n_pre = -(-window_s // STEP_S)  # the rolling view's history: one window before the start
    pre_ms = start_ms - n_pre * STEP_S * 1000
    thresholds: dict[str, list[tuple[int, int]]] = {h: [] for h in HISTS}
    for i, s in enumerate(event_specs):
        if s.kind == "latency":
            thresholds[s.histogram].append((i, s.threshold_us))

    lat_hists = [h for h in HISTS if thresholds[h]]
    step_rows: list = []
    pre_rows: list = []
    groups: dict[str, list] = {"cluster": [], "topic": [], "leader": [], "partition": []}
    merged: dict[str, dict] = {h: {} for h in HISTS}
    input_rows, covered_ms, series = 0, 0, 0
    if df is not None:
        t_ms = F.unix_millis("interval_start")
        read = (df.where((F.col("date") >= _day(pre_ms)) & (F.col("date") <= _day(end_ms)))
                .where((t_ms >= pre_ms) & (t_ms < end_ms)))
        rows = read.where(t_ms >= start_ms).withColumn("day", F.date_format("interval_start", "yyyy-MM-dd"))
        pre = read.where(t_ms < start_ms)
        # pass 1: every SLO's ratio good/total summed per (cluster, topic, partition, leader, minute) and per
        # HDR payload hash: identical histograms collapse into one row with a multiplicity
        step = F.floor((t_ms - F.lit(start_ms)) / (STEP_S * 1000)).cast("long")
        ratio = []
        for i, s in enumerate(event_specs):
            if s.kind == "ratio":
                ratio += [F.sum(F.expr(FIELDS[s.good])).alias(f"g{i}"), F.sum(F.expr(FIELDS[s.total])).alias(f"t{i}")]
        dur = F.unix_millis("interval_end") - F.unix_millis("interval_start")
        counts = [*ratio, F.count(F.lit(1)).alias("rows"), F.sum(dur).alias("covered_ms")]
        hashed = (rows.withColumn("step", step)
                  .groupBy("cluster", "topic", "partition", "leader", "step", "day",
                           *[F.xxhash64(h).alias(f"hash_{h}") for h in HISTS])
                  .agg(*counts).cache())
        # the window before the start (rolling view): per-minute counts only, payload hashes only where a
        # latency SLO needs samples under its threshold
        pre_hashed = (pre.withColumn("step", step)
                      .groupBy("step", *[F.xxhash64(h).alias(f"hash_{h}") for h in lat_hists]).agg(*counts))

        def payloads(frame: DataFrame, hists) -> DataFrame:
            return (frame.select(F.explode(F.array(*[F.struct(F.xxhash64(h).alias("h"), F.col(h).alias("payload"))
                                                     for h in hists])).alias("p")).select("p.h", "p.payload"))

        # pass 2: one copy of each distinct payload, its sample count and samples under each latency threshold
        ths_all = tuple(sorted({t for h in HISTS for _, t in thresholds[h]}))
        every = payloads(rows, HISTS).unionByName(payloads(pre, lat_hists)) if lat_hists else payloads(rows, HISTS)
        distinct = every.groupBy("h").agg(F.first("payload").alias("payload"))
        payload_stats = spark.createDataFrame(
            distinct.rdd.map(lambda r: (r["h"], bytearray(r["payload"]), *_payload_stats(bytes(r["payload"]), ths_all))),
            ", ".join(["h long", "payload binary", "n long", *[f"le{t} long" for t in ths_all]])).cache()
        small = payload_stats.drop("payload")
        for h in HISTS:  # merged histograms per (day, cluster, topic), merged on the executors
            per = (hashed.groupBy("day", "cluster", "topic", F.col(f"hash_{h}").alias("h")).agg(F.sum("rows").alias("k"))
                   .join(payload_stats.select("h", "payload"), "h"))
            merged[h] = dict(per.rdd.map(lambda r: ((r["day"], r["cluster"], r["topic"]), (bytes(r["payload"]), r["k"])))
                             .groupByKey().mapValues(_merge_group).collect())
        stats = {h: small.select(F.col("h").alias(f"hash_{h}"), F.col("n").alias(f"n_{h}"),
                                 *[F.col(f"le{t}").alias(f"le{t}_{h}") for _, t in thresholds[h]]) for h in lat_hists}

        def with_stats(frame: DataFrame) -> DataFrame:
            for h in lat_hists:
                frame = frame.join(F.broadcast(stats[h]), f"hash_{h}", "left")
            return frame

        sums = []
        for i, s in enumerate(event_specs):
            if s.kind == "ratio":
                sums += [F.sum(f"g{i}").alias(f"g{i}"), F.sum(f"t{i}").alias(f"t{i}")]
            else:
                n = F.coalesce(F.col(f"n_{s.histogram}"), F.lit(0)) * F.col("rows")
                le = F.coalesce(F.col(f"le{s.threshold_us}_{s.histogram}"), F.lit(0)) * F.col("rows")
                sums += [F.sum(le).alias(f"g{i}"), F.sum(n).alias(f"t{i}")]
        grain = (with_stats(hashed).groupBy("cluster", "topic", "partition", "leader", "step")
                 .agg(*sums, F.sum("rows").alias("rows"), F.sum("covered_ms").alias("covered_ms")).cache())
        gcols = [c for c in grain.columns if c[0] in "gt" and c[1:].isdigit()]
        agg_exprs = [F.sum(c).alias(c) for c in gcols]
        step_rows = grain.groupBy("step").agg(*agg_exprs, F.sum("rows").alias("rows")).collect()
        pre_rows = (with_stats(pre_hashed).groupBy("step")
                    .agg(*sums, F.sum("rows").alias("rows"), F.sum("covered_ms").alias("covered_ms")).collect())
        totals = grain.agg(F.sum("rows"), F.sum("covered_ms"),
                           F.countDistinct("cluster", "topic", "partition")).first()
        input_rows, covered_ms, series = (int(totals[0] or 0), int(totals[1] or 0), int(totals[2] or 0))
        groups["cluster"] = grain.groupBy("cluster").agg(*agg_exprs).collect()
        groups["topic"] = grain.groupBy("cluster", "topic").agg(*agg_exprs).collect()
        groups["leader"] = grain.groupBy("cluster", "leader").agg(*agg_exprs).collect()
        groups["partition"] = grain.groupBy("cluster", "topic", "partition", "leader").agg(*agg_exprs).collect()
        grain.unpersist()
        hashed.unpersist()
        payload_stats.unpersist()

    # ---- driver: the series and the maths
    # per-minute series over [pre_ms, end): the first n_pre steps are the rolling view's history
    good = {i: [0.0] * (n_pre + n_steps) for i in range(len(event_specs))}
    total = {i: [0.0] * (n_pre + n_steps) for i in range(len(event_specs))}
    seen = [False] * (n_pre + n_steps)
    for r in [*step_rows, *pre_rows]:
        k = int(r["step"]) + n_pre
        if 0 <= k < n_pre + n_steps:
            seen[k] = r["rows"] > 0
            for i in range(len(event_specs)):
                good[i][k] = float(r[f"g{i}"] or 0)
                total[i][k] = float(r[f"t{i}"] or 0)
    present = seen[n_pre:]
    seen_cum = list(itertools.accumulate(seen, initial=0))
    pre_count = sum(int(r["rows"] or 0) for r in pre_rows)
    pre_covered = sum(int(r["covered_ms"] or 0) for r in pre_rows)
    step_ms = [start_ms + k * STEP_S * 1000 for k in range(n_steps)]
    step_day = [_day(ms) for ms in step_ms]
    days = sorted(set(step_day))
    interval_ms = covered_ms / input_rows if input_rows else None
    expected_rows = series * elapsed_s * 1000 / interval_ms if interval_ms else 0
    pre_interval = interval_ms or (pre_covered / pre_count if pre_count else None)
    pre_expected = series * n_pre * STEP_S * 1000 / pre_interval if pre_interval else 0
    completeness = {
        "series": series, "rows": input_rows, "interval_seconds": interval_ms / 1000 if interval_ms else None,
        "expected_rows": expected_rows, "missing_rows": max(0.0, expected_rows - input_rows),
        "coverage": input_rows / expected_rows if expected_rows else 0.0,
        "steps": n_steps, "steps_missing": n_steps - sum(present),
        "hours_with_data": sum(present) * STEP_S / 3600, "window_hours": elapsed_s / 3600,
        "rule": "expected rows = series seen in the window x window / mean interval length; missing intervals carry "
                "no events (Occurrences) and are excluded from Timeslices (sli_missing_as_bad counts them as bad)",
        "rolling_history": {
            "start": _iso(pre_ms), "end": _iso(start_ms), "rows": pre_count, "expected_rows": pre_expected,
            "coverage": min(1.0, pre_count / pre_expected) if pre_expected else 0.0,
            "steps": n_pre, "steps_missing": n_pre - sum(seen[:n_pre]),
            "rule": "the rolling burn-down reads one window before the start; a trailing window reaching into "
                    "minutes without data counts only the data present (burn_down.rolling_coverage = its share of "
                    "minutes with data)"},
    }

    tables: dict[str, list[dict]] = {k: [] for k in ("slo_summary", "daily", "scopes", "brokers", "partitions",
                                                      "bad_periods", "alerts", "burn_down", "latency", "lag_groups")}
    report_slos = []
    hours_left = (period["end_ms"] - period["as_of_ms"]) / 3.6e6 if period["kind"] == "calendar" else None
    for i, s in enumerate(event_specs):
        T = s.objective.target
        bad_all = [tt - gg for gg, tt in zip(good[i], total[i], strict=True)]
        g, t, bad = good[i][n_pre:], total[i][n_pre:], bad_all[n_pre:]
        G, TT = sum(g), sum(t)
        occ = _occurrences(s, G, TT, window_s, elapsed_s)
        allowed = occ["allowed_events"]
        trailing_burn = functools.partial(_trailing_burn, bad_all, total[i], n_pre, T)
        burn_24h = trailing_burn(86400)[-1] if n_steps else 0.0
        burn_windows = {name: (trailing_burn(w)[-1] if n_steps else 0.0) for name, w in sli.BURN_WINDOWS.items()}
        exhaustion = sli.exhaustion_hours(occ["remaining_ratio"], burn_24h, window_s, hours_left)
        per_slice = max(1, s.objective.time_slice_window_s // STEP_S)
        sg, st_ = sli.slice_sums(g, per_slice), sli.slice_sums(t, per_slice)
        sp = [any(present[j:j + per_slice]) for j in range(0, n_steps, per_slice)]
        ts = sli.timeslices(sg, st_, sp, s.objective.time_slice_target, T, per_slice * STEP_S,
                            period_slices=None if period["kind"] == "rolling" else window_s // (per_slice * STEP_S))
        alerts = []   # judged with the history too; one firing at the start is cut to it and says so
        for a in sli.alert_periods(bad_all, total[i], STEP_S, T):
            if a["end_step"] > n_pre:
                a.update(since_before_start=a["start_step"] < n_pre, start_step=max(a["start_step"] - n_pre, 0),
                         end_step=a["end_step"] - n_pre)
                alerts.append(a)
        for a in alerts:
            a.update(slo=s.name, start=_iso(step_ms[a["start_step"]]),
                     end=_iso(start_ms + a["end_step"] * STEP_S * 1000))
        periods = sli.bad_periods(bad, allowed, top)
        for p in periods:
            p.update(slo=s.name, start=_iso(step_ms[p["start_step"]]),
                     end=_iso(start_ms + p["end_step"] * STEP_S * 1000), minutes=(p["end_step"] - p["start_step"]))
        daily = []
        for d in days:
            idx = [k for k in range(n_steps) if step_day[k] == d]
            dg, dt_ = sum(g[k] for k in idx), sum(t[k] for k in idx)
            daily.append({"slo": s.name, "date": d, "events": dt_, "bad_events": dt_ - dg, "sli": sli.sli(dg, dt_),
                          "burn_rate": sli.burn_rate(dt_ - dg, dt_, T),
                          "budget_consumed": (dt_ - dg) / allowed if allowed > 0 else None,
                          "steps_missing": sum(1 for k in idx if not present[k])})
        hourly = 3600 // STEP_S
        burn_down, cb, ct = [], 0.0, 0.0
        r1h, r6h, r1d, r3d = (trailing_burn(hours * 3600) for hours in (1, 6, 24, 72))
        # rolling view: the budget left in the trailing window (same length as the report's) ending at each step
        r_win = trailing_burn(n_pre * STEP_S)
        for k in range(n_steps):
            cb += bad[k]
            ct += t[k]
            if (k + 1) % hourly == 0 or k == n_steps - 1:
                burn_down.append({"slo": s.name, "time": _iso(start_ms + (k + 1) * STEP_S * 1000),
                                  "remaining_fixed": 1 - cb / allowed if allowed > 0 else 1.0,
                                  "remaining_to_date": 1 - cb / ((1 - T) * ct) if ct > 0 else 1.0,
                                  "remaining_rolling": 1 - r_win[k],
                                  "rolling_coverage": (seen_cum[n_pre + k + 1] - seen_cum[k + 1]) / n_pre,
                                  "burn_1h": r1h[k], "burn_6h": r6h[k], "burn_1d": r1d[k], "burn_3d": r3d[k]})
        span = (window_s, elapsed_s, allowed)
        scopes = (_scope_rows(s, i, groups["cluster"], ("cluster",), *span)
                  + _scope_rows(s, i, groups["topic"], ("cluster", "topic"), *span))
        brokers = sorted((r for r in _scope_rows(s, i, groups["leader"], ("cluster", "leader"), *span)
                          if r["bad"] > 0), key=lambda r: -r["bad"])
        parts = sorted((r for r in _scope_rows(s, i, groups["partition"], ("cluster", "topic", "partition", "leader"),
                                                *span) if r["bad"] > 0), key=lambda r: -r["bad"])[:top]
        summary = {"slo": s.name, "display_name": s.display_name, "kind": s.kind, "target": T,
                   "budgeting_method": s.budgeting_method, **{f"occ_{k}": v for k, v in occ.items()},
                   "burn_24h": burn_24h, "exhaustion_hours": exhaustion,
                   **{f"ts_{k}": v for k, v in ts.items()}}
        tables["slo_summary"].append(summary)
        tables["daily"] += daily
        tables["scopes"] += [dict(r, scope="cluster" if "topic" not in r else "topic") for r in scopes]
        tables["brokers"] += brokers
        tables["partitions"] += parts
        tables["bad_periods"] += periods
        tables["alerts"] += alerts
        tables["burn_down"] += burn_down
        primary = {"Occurrences": occ["sli"], "Timeslices": ts["sli"], "RatioTimeslices": ts["ratio_timeslices_sli"]}
        report_slos.append({
            "name": s.name, "display_name": s.display_name, "kind": s.kind, "target": T,
            "budgeting_method": s.budgeting_method, "sli": primary[s.budgeting_method],
            "met": None if primary[s.budgeting_method] is None else primary[s.budgeting_method] >= T,
            "threshold_us": s.threshold_us, "occurrences": occ,
            "timeslices": dict(ts, slice_seconds=per_slice * STEP_S, slice_target=s.objective.time_slice_target),
            "burn": {"period": occ["burn_rate"], "trailing_24h": burn_24h, "windows": burn_windows},
            "exhaustion_hours_at_24h_burn": exhaustion,
            "alert_rules": [{"rule": r.name, "severity": r.severity, "long": r.long_s, "short": r.short_s,
                             "burn": r.burn, "budget_consumed_at_fire": r.budget_consumed_at_fire(window_s)}
                            for r in sli.ALERT_RULES],
            "alerts": alerts, "daily": daily, "bad_periods": periods, "brokers": brokers[:top], "partitions": parts,
            "scopes": scopes,
        })

    # ---- latency percentiles from merged HDR
    latency = {"window": {}, "daily": [], "per_topic": []}
    for h in HISTS:
        parts_by = merged[h]
        win = _dense(parts_by.values())
        latency["window"][h] = hdr.summary(win)
        tables["latency"].append({"histogram": h, "scope": "window", "date": None, "cluster": None, "topic": None,
                                  **latency["window"][h]})
        for d in days:
            row = {"histogram": h, "date": d, **hdr.summary(_dense(v for k, v in parts_by.items() if k[0] == d))}
            latency["daily"].append(row)
            tables["latency"].append({"scope": "day", "cluster": None, "topic": None, **row})
        for ct_ in sorted({(k[1], k[2]) for k in parts_by}):
            row = {"histogram": h, "cluster": ct_[0], "topic": ct_[1],
                   **hdr.summary(_dense(v for k, v in parts_by.items() if (k[1], k[2]) == ct_))}
            latency["per_topic"].append(row)
            tables["latency"].append({"scope": "topic", "date": None, **row})

    # ---- consumer lag from the lag-history job's daily summary
    lag = None
    lag_dir = _lag_summary(spark, lag_dir, out, end_ms) if lag_dir and lag_specs else None
    if lag_dir and lag_specs and (Path(lag_dir) / "daily_summary").exists():
        spec = lag_specs[0]
        ls = spark.read.parquet(str(Path(lag_dir) / "daily_summary"))
        rows_ = (ls.where((F.col("date") >= _day(start_ms)) & (F.col("date") <= _day(end_ms - 1)))
                 .groupBy("group").agg(F.sum("instants").alias("instants"),
                                       F.sum(F.col("share_ok") * F.col("instants")).alias("ok"),
                                       F.sum(F.col("share_warn") * F.col("instants")).alias("warn"),
                                       F.sum(F.col("share_err") * F.col("instants")).alias("err"),
                                       F.max("max_lag").alias("max_lag")).orderBy("group").collect())
        groups_out = []
        for r in rows_:
            n = r["instants"] or 0
            share = r["ok"] / n if n else None
            groups_out.append({"group": r["group"], "instants": n, "share_ok": share,
                               "share_warn": r["warn"] / n if n else None, "share_err": r["err"] / n if n else None,
                               "max_lag": r["max_lag"], "met": None if share is None else share >= spec.objective.target,
                               "budget_remaining": None if share is None else
                               1 - (1 - share) / (1 - spec.objective.target)})
        lag = {"slo": spec.name, "target": spec.objective.target, "groups": groups_out,
               "groups_met": sum(1 for g_ in groups_out if g_["met"]), "groups_total": len(groups_out)}
        tables["lag_groups"] = groups_out

    met = [r["met"] for r in report_slos if r["met"] is not None]
    report = {
        "generated_at": _iso(int(dt.datetime.now(dt.UTC).timestamp() * 1000)),
        "window": {**period, "start": _iso(start_ms), "end": _iso(period["end_ms"]), "as_of": _iso(end_ms),
                   "step_seconds": STEP_S},
        "overall": {"slos": len(report_slos), "met": sum(met), "violated": len(met) - sum(met),
                    "worst_budget_remaining": min((r["occurrences"]["remaining_ratio"] for r in report_slos),
                                                  default=None)},
        "completeness": completeness, "slos": report_slos, "latency": latency, "lag": lag,
        "source": _source(sli_dir),
    }
    report = _clean(report)
    for name, rows_ in tables.items():
        if rows_:
            pq.write_table(pa.Table.from_pylist(_clean(rows_)), out / f"{name}.parquet")
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    from slo.report_html import render
    (out / "report.html").write_text(render(report, tables["burn_down"]), encoding="utf-8")
    return report
