"""PySpark 14-day SLO report over xmonitor's SLI interval files (xmonitor/sli_schema.py).

Spark does the per-row work in two passes over the window's files (slo.report.passes); everything after that is
small: the minute series and the grouped sums go to the driver, where the pure maths in slo.sli computes SLI,
budget, burn, alerts, timeslices (slo.report.series, slo.report.tables), latency percentiles come from merged HDR
histograms (slo.report.hist) and the lag SLO from the lag-history job (slo.report.lag). Outputs: Parquet tables,
report.json, report.html (slo.report.write).

Counting rules: an interval belongs to the window when interval_start is in [start, end): start = end - window
for a rolling window; for a calendar-aligned one (OpenSLO isRolling: false) start is the start of the calendar
period holding the last reported instant, and the budget is the period's, consumed so far. Occurrences count
events; steps (minutes) without any row are "missing": they carry no events for Occurrences, and are left out of
Timeslices' denominator (reported, with the SLI also given counting them as bad).

Burn-down, fixed and rolling: the fixed view accumulates from the window start; the rolling view at each step t is
the budget remaining of the trailing window (same length) ending at t, so it also needs [start - window, start).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from slo.report.hist import latency_tables
from slo.report.lag import lag_report
from slo.report.passes import aggregate
from slo.report.read import last_end_ms, read_intervals, source
from slo.report.series import Counts, completeness, minute_series
from slo.report.tables import event_tables
from slo.report.window import Steps, report_window
from slo.report.write import assemble, write_report
from slo.specs import SLOSpec


def slo_report(spark: SparkSession, sli_dir: str | Path, specs: list[SLOSpec], out_dir: str | Path,
               end_ms: int | None = None, window_s: int | None = None, lag_dir: str | Path | None = None,
               top: int = 10, sli_cache: str | Path | None = None) -> dict:
    """Run the report; writes Parquet tables, report.json and report.html under out_dir; returns the report.
    sli_cache: compacted closed days of sli_dir (slo.live.compact), read instead of their per-interval files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    event_specs = [s for s in specs if s.kind != "lag"]
    lag_specs = [s for s in specs if s.kind == "lag"]
    df = read_intervals(spark, sli_dir, sli_cache)
    if end_ms is None:
        end_ms = last_end_ms(df)
    period = report_window(specs, end_ms, window_s)
    steps = Steps.of(period, end_ms)
    counts = aggregate(spark, df, steps, event_specs) if df is not None else Counts()
    series = minute_series([*counts.step_rows, *counts.pre_rows], len(event_specs), steps)
    tables, sections = event_tables(event_specs, series, counts.groups, steps, period, top)
    latency, tables["latency"] = latency_tables(counts.merged, steps.days)
    lag = lag_report(spark, lag_dir, lag_specs, out, steps)
    tables["lag_groups"] = lag["groups"] if lag else []
    report = assemble(period, end_ms, completeness(counts, series, steps), sections, latency, lag, source(sli_dir))
    write_report(out, report, tables)
    return report
