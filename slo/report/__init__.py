"""The SLO report's pieces, in the order the job (slo.jobs.slo_report) chains them.

read (the SLI interval files) -> passes (the two Spark passes) -> series (per-minute counts, completeness) ->
tables (each event SLO's tables and report section), hist (merged-HDR latency percentiles), lag (the consumer-lag
SLO from the lag-history job's summary) -> write (Parquet tables, report.json, report.html). window: the reported
period and its minute steps. window, series, tables and hist are plain Python: tested without Spark.
"""
