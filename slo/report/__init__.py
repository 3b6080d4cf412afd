"""The SLO report's pieces, in the order the job (slo.jobs.slo_report) runs them.

read (the SLI interval files) -> passes (the two Spark passes; the only Spark code besides lag) -> series (per-minute
counts and data completeness) -> tables (each SLO's tables) and hist (merged-HDR percentiles) and lag (the consumer
lag SLO) -> write (report.json, Parquet tables, report.html). window holds the reported period and its steps.
"""
