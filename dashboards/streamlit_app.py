"""The SLO page: one report directory of `kafkascope slo report`, read by someone who has never seen it.

Run: `kafkascope page --report DIR` (binds 127.0.0.1), or `streamlit run dashboards/streamlit_app.py -- --report DIR`.
The directory may also come from the KAFKASCOPE_REPORT environment variable. Nothing here imports the broker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import streamlit as st

from slo.report_html import window_text


def _report_dir() -> Path | None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--report")
    known, _ = ap.parse_known_args(sys.argv[1:])
    value = known.report or os.environ.get("KAFKASCOPE_REPORT")
    return Path(value) if value else None


def _table(root: Path, name: str) -> pd.DataFrame:
    p = root / f"{name}.parquet"
    return pq.read_table(p).to_pandas() if p.exists() else pd.DataFrame()


def _pct(x, digits=3):
    return "–" if x is None else f"{x * 100:.{digits}f}%"


def _hours(x):
    return "never" if x is None else f"{x:.1f} h"


def main() -> None:
    st.set_page_config(page_title="Kafka SLOs", layout="wide")
    root = _report_dir()
    if root is None or not (root / "report.json").exists():
        st.error("No report: start with `kafkascope page --report DIR` (a `kafkascope slo report --out DIR`).")
        return
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    burn_down = _table(root, "burn_down")
    w, c = report["window"], report["completeness"]
    st.title("Kafka SLOs")
    st.caption(f"{window_text(w)}. "
               f"{report['overall']['met']} of {report['overall']['slos']} SLOs met. "
               f"Data: {c['rows']:,} intervals from {c['series']} partitions, coverage {_pct(c['coverage'], 2)}, "
               f"{int(c['missing_rows']):,} intervals missing; history for the rolling burn-down "
               f"{_pct(c['rolling_history']['coverage'], 1)} covered.")
    st.info("Error budget = the share of events allowed to fail (1 − target). Budget remaining below 0 means the SLO "
            "is blown. Burn rate 1 spends exactly the budget over the window; 14.4 over 1 h pages.")

    for s in report["slos"]:
        occ = s["occurrences"]
        st.header(s["display_name"])
        cols = st.columns(4)
        cols[0].metric("SLI vs target", _pct(s["sli"]), delta=None if s["sli"] is None else
                       f"{(s['sli'] - s['target']) * 100:+.3f} pts vs {_pct(s['target'], 2)}")
        cols[1].metric("Budget remaining", _pct(occ["remaining_ratio"], 1),
                       help=f"{occ['remaining_events']:.0f} events / {occ['remaining_minutes']:.1f} min")
        cols[2].metric("Burn rate (last 24 h)", f"{s['burn']['trailing_24h']:.2f}×")
        cols[3].metric("Budget exhausted in", _hours(s["exhaustion_hours_at_24h_burn"]),
                       help="at the last 24 h's burn rate; never = no burn in the last 24 h")
        bd = burn_down[burn_down["slo"] == s["name"]] if not burn_down.empty else burn_down
        if not bd.empty:
            bd = bd.assign(time=pd.to_datetime(bd["time"])).set_index("time")
            left, right = st.columns(2)
            left.subheader("Budget burn-down")
            left.line_chart(bd[["remaining_fixed", "remaining_rolling"]].rename(
                columns={"remaining_fixed": "fixed", "remaining_rolling": "rolling"}))
            left.caption("fixed: budget left of this window, from its start; rolling: budget left of the trailing "
                         "window ending at each hour (recovers as old errors age out)")
            right.subheader("Burn rate by window")
            right.line_chart(bd[["burn_1h", "burn_6h", "burn_1d", "burn_3d"]])
        st.subheader("Alert timeline (multi-window burn-rate rules)")
        if s["alerts"]:
            st.dataframe(pd.DataFrame(s["alerts"])[["rule", "severity", "burn", "start", "end"]],
                         hide_index=True)
        else:
            st.write("No alert would have fired.")
        left, right = st.columns(2)
        for col, key, title in ((left, "brokers", "Leader brokers that burnt budget"),
                                (right, "partitions", "Partitions that burnt budget")):
            col.subheader(title)
            if s[key]:
                col.dataframe(pd.DataFrame(s[key]).drop(columns=["slo"]), hide_index=True)
            else:
                col.write("none")
        ts = s["timeslices"]
        st.caption(f"Occurrences SLI {_pct(occ['sli'])} · Timeslices SLI {_pct(ts['sli'])} "
                   f"({ts['bad']} bad of {ts['present']} {ts['slice_seconds']}s slices, {ts['missing']} missing) · "
                   f"RatioTimeslices SLI {_pct(ts['ratio_timeslices_sli'])}")

    st.header("Latency percentiles by day (merged HDR, ms)")
    daily = pd.DataFrame(report["latency"]["daily"])
    if not daily.empty:
        e2e = daily[daily["histogram"] == "e2e_latency_hdr"].set_index("date")[["p50", "p90", "p99", "p99_9", "max"]]
        st.line_chart(e2e / 1000.0)
        st.dataframe(e2e / 1000.0)
    st.header("Consumer lag by group")
    lag = report.get("lag")
    if lag and lag["groups"]:
        st.caption(f"{lag['groups_met']} of {lag['groups_total']} groups OK at least {_pct(lag['target'], 1)} "
                   f"of the time")
        st.bar_chart(pd.DataFrame(lag["groups"]).set_index("group")[["share_ok", "share_warn", "share_err"]])
        st.dataframe(pd.DataFrame(lag["groups"]), hide_index=True)
    else:
        st.write("No lag history in this report (run it with --lag-dir).")


main()
