"""The report's outputs: report.json (JSON-safe: no NaN, no numpy scalars), one Parquet file per non-empty table,
and report.html."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from slo.report.window import STEP_S, iso
from slo.report_html import render


def _num(x):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return None
    return x


def clean(obj):
    """`obj` with numpy scalars as Python numbers and NaN/inf as None (JSON and Arrow take it as is)."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _num(float(obj))
    return obj


def assemble(period: dict, end_ms: int, completeness: dict, slos: list[dict], latency: dict, lag: dict | None,
             source: dict) -> dict:
    """report.json's document (cleaned)."""
    met = [r["met"] for r in slos if r["met"] is not None]
    report = {
        "generated_at": iso(int(dt.datetime.now(dt.UTC).timestamp() * 1000)),
        "window": {**period, "start": iso(period["start_ms"]), "end": iso(period["end_ms"]), "as_of": iso(end_ms),
                   "step_seconds": STEP_S},
        "overall": {"slos": len(slos), "met": sum(met), "violated": len(met) - sum(met),
                    "worst_budget_remaining": min((r["occurrences"]["remaining_ratio"] for r in slos),
                                                  default=None)},
        "completeness": completeness, "slos": slos, "latency": latency, "lag": lag, "source": source,
    }
    return clean(report)


def write_report(out: Path, report: dict, tables: dict[str, list[dict]]) -> None:
    for name, rows in tables.items():
        if rows:
            pq.write_table(pa.Table.from_pylist(clean(rows)), out / f"{name}.parquet")
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    (out / "report.html").write_text(render(report, tables["burn_down"]), encoding="utf-8")
