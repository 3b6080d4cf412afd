"""The SLO page: the newest report of `kafkascope slo report`, read by someone who has never seen it.

Run: `kafkascope page --report DIR` (binds 127.0.0.1), or `streamlit run dashboards/streamlit_app.py -- --report DIR`.
The directory may also come from the KAFKASCOPE_REPORT environment variable. DIR is one report directory, or the
reports root of `slo report --every` (slo.live): the page shows the report `latest` names, checks every
REFRESH_S whether a newer one was published (then reruns), and says how old the data is, when the next report is
due, and warns when the report is stale, the data incomplete or synthetic. Nothing here imports the broker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import streamlit as st

from slo import live
from slo.report_html import window_text

REFRESH_S = 10


def _report_dir() -> Path | None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--report")
    known, _ = ap.parse_known_args(sys.argv[1:])
    value = known.report or os.environ.get("KAFKASCOPE_REPORT")
    return Path(value) if value else None


@st.cache_data(max_entries=4)
def _load(report: str, mtime_ns: int) -> tuple[dict, pd.DataFrame]:
    """report.json and the burn-down table; keyed by the directory (a scheduled report's name is unique per run)
    and report.json's mtime (a single directory rewritten in place)."""
    root = Path(report)
    p = root / "burn_down.parquet"
    burn_down = pq.read_table(p).to_pandas() if p.exists() else pd.DataFrame()
    return json.loads((root / "report.json").read_text(encoding="utf-8")), burn_down


@st.fragment(run_every=REFRESH_S)
def _waiting(given: str) -> None:
    """A reports root whose first report is still being made: say so, and rerun the page when it is there."""
    if live.resolve(given) is not None:
        st.rerun(scope="app")
    st.info(live.waiting_text(live.read_schedule(given), int(time.time() * 1000)))


_LEVEL = {"stale": st.error, "incomplete": st.warning, "synthetic": st.warning}


@st.fragment(run_every=REFRESH_S)
def _freshness(given: str, shown: str, report: dict) -> None:
    """The age line and the banners, redrawn every REFRESH_S (a stopped scheduler turns the page stale without
    anyone clicking); a newer published report reruns the whole page."""
    current = live.resolve(given)
    if current is not None and str(current) != shown:
        st.rerun(scope="app")
    root = Path(given)
    f = live.freshness(report, live.read_schedule(root) if (root / live.LATEST).exists() else None,
                       int(time.time() * 1000))
    for kind, text in f["banners"]:
        _LEVEL[kind](text, icon="⚠️")
    st.caption(f["line"])


def _pct(x, digits=3):
    return "–" if x is None else f"{x * 100:.{digits}f}%"


def _hours(x):
    return "never" if x is None else f"{x:.1f} h"


def main() -> None:
    st.set_page_config(page_title="Kafka SLOs", layout="wide")
    given = _report_dir()
    root = live.resolve(given) if given is not None else None
    if root is None:
        if given is not None and live.read_schedule(given):
            _waiting(str(given))
        else:
            st.error("No report: start with `kafkascope page --report DIR` (a `kafkascope slo report --out DIR`, or "
                     "a reports root of `slo report --every`).")
        return
    report, burn_down = _load(str(root), (root / "report.json").stat().st_mtime_ns)
    w, c = report["window"], report["completeness"]
    st.title("Kafka SLOs")
    _freshness(str(given), str(root), report)
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
        st.write("No lag history in this report (run it with --lag-dir: the lag monitor's history-dir, whose "
                 "first files appear after its history-flush interval, 60 s by default).")


main()
