"""report.html: one self-contained page (inline SVG charts, inline CSS; no scripts, no CDN)."""

from __future__ import annotations

import html

CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}.ok{color:#080}.bad{color:#b00}h2{border-bottom:2px solid #ddd;padding-top:12px}
svg{background:#fafafa;border:1px solid #ddd;margin:4px 0}.note{color:#666;font-size:12px}"""


def _f(x, digits=4, pct=False):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x * 100:.{digits - 2}f}%" if pct else f"{x:.{digits}g}"
    return html.escape(str(x))


def line_chart(series: dict[str, list[float]], width=900, height=180, ymin=None, ymax=None, hline=None,
               title="") -> str:
    """Lines over the same x positions; `hline` draws a dashed reference."""
    vals = [v for s in series.values() for v in s if v is not None]
    if not vals:
        return f'<p class="note">{html.escape(title)}: no data</p>'
    lo = min(vals + ([hline] if hline is not None else [])) if ymin is None else ymin
    hi = max(vals + ([hline] if hline is not None else [])) if ymax is None else ymax
    hi = hi if hi > lo else lo + 1
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"]
    pad = 40

    def y(v):
        return height - 20 - (v - lo) / (hi - lo) * (height - 40)

    parts = [f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg"><text x="{pad}" y="14" font-size="12">{html.escape(title)}</text>',
             f'<text x="2" y="{y(hi) + 4:.0f}" font-size="10">{hi:.3g}</text>'
             f'<text x="2" y="{y(lo) + 4:.0f}" font-size="10">{lo:.3g}</text>']
    if hline is not None:
        parts.append(f'<line x1="{pad}" x2="{width}" y1="{y(hline):.1f}" y2="{y(hline):.1f}" stroke="#999" '
                     f'stroke-dasharray="4"/>')
    for n, (name, s) in enumerate(series.items()):
        if not s:
            continue
        step = (width - pad - 10) / max(len(s) - 1, 1)
        pts = " ".join(f"{pad + k * step:.1f},{y(v):.1f}" for k, v in enumerate(s) if v is not None)
        c = colors[n % len(colors)]
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
        parts.append(f'<text x="{width - 200}" y="{14 + 12 * n}" font-size="11" fill="{c}">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def timeline(alerts: list[dict], steps: int, width=900, title="alerts") -> str:
    rules = ["page-fast", "page-slow", "ticket-fast", "ticket-slow"]
    h = 20 + 16 * len(rules)
    parts = [f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{h}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    scale = (width - 110) / max(steps, 1)
    for n, r in enumerate(rules):
        parts.append(f'<text x="2" y="{28 + 16 * n}" font-size="11">{r}</text>')
    for a in alerts:
        n = rules.index(a["rule"]) if a["rule"] in rules else 0
        color = "#d62728" if a["severity"] == "page" else "#ff7f0e"
        parts.append(f'<rect x="{100 + a["start_step"] * scale:.1f}" y="{18 + 16 * n}" '
                     f'width="{max(2.0, (a["end_step"] - a["start_step"]) * scale):.1f}" height="12" fill="{color}">'
                     f'<title>{html.escape(a["rule"])} {a["start"]} – {a["end"]}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def _table(rows: list[dict], cols: list[str], pct: tuple[str, ...] = ()) -> str:
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_f(r.get(c), 6 if c in pct else 4, c in pct)}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def window_text(w: dict) -> str:
    """One line saying which period the report covers (shared with the Streamlit page)."""
    days = f"{w['seconds'] / 86400:g} days"
    if w["kind"] == "calendar":
        c = w["calendar"]
        return (f"Calendar window {w['start']} – {w['end']} ({c['duration']} periods from {c['startTime']} "
                f"{c['timeZone']}, {days}); budget consumed so far, up to {w['as_of']}")
    return f"Rolling window {w['start']} – {w['end']} ({days})"


def render(report: dict, burn_down: list[dict]) -> str:
    w = report["window"]
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>SLO report {w['start']} – {w['end']}</title>"
           f"<style>{CSS}</style></head><body>",
           f"<h1>Kafka SLO report</h1><p>{html.escape(window_text(w))}. "
           f"{report['overall']['met']} of {report['overall']['slos']} SLOs met.</p>"]
    if (report.get("source") or {}).get("synthetic"):
        out.append("<p class='bad'><b>Synthetic data</b>: built on generated SLI intervals (`kafkascope slo "
                   "generate`), not on the probe's measurements.</p>")
    c, h = report["completeness"], report["completeness"]["rolling_history"]
    out.append(f"<p>Data completeness: {c['rows']} interval rows from {c['series']} partitions, "
               f"coverage {_f(c['coverage'], 6, True)}, {int(c['missing_rows'])} missing intervals, "
               f"{c['steps_missing']} minutes without data"
               + (f" ({c['hours_with_data']:.1f} h of the window have data)" if "hours_with_data" in c else "")
               + f". <span class='note'>{html.escape(c['rule'])}</span></p>")
    out.append(f"<p>Rolling burn-down history {h['start']} – {h['end']}: {h['rows']} interval rows, coverage "
               f"{_f(h['coverage'], 6, True)}, {h['steps_missing']} minutes without data. "
               f"<span class='note'>{html.escape(h['rule'])}</span></p>")
    out.append(_table([{"SLO": s["display_name"], "method": s["budgeting_method"], "target": s["target"],
                        "SLI": s["sli"], "met": s["met"], "budget remaining": s["occurrences"]["remaining_ratio"],
                        "burn (period)": s["burn"]["period"], "burn (24h)": s["burn"]["trailing_24h"],
                        "exhaustion (h)": s["exhaustion_hours_at_24h_burn"]} for s in report["slos"]],
                      ["SLO", "method", "target", "SLI", "met", "budget remaining", "burn (period)", "burn (24h)",
                       "exhaustion (h)"], pct=("target", "SLI", "budget remaining")))
    steps = c["steps"]
    for s in report["slos"]:
        occ, ts = s["occurrences"], s["timeslices"]
        bd = [r for r in burn_down if r["slo"] == s["name"]]
        out.append(f"<h2>{html.escape(s['display_name'])} <span class='{'ok' if s['met'] else 'bad'}'>"
                   f"{'met' if s['met'] else 'violated' if s['met'] is False else 'no data'}</span></h2>")
        out.append(_table([
            {"method": "Occurrences", "SLI": occ["sli"], "allowed": occ["allowed_events"],
             "consumed": occ["consumed_events"], "remaining": occ["remaining_events"],
             "remaining min": occ["remaining_minutes"], "remaining ratio": occ["remaining_ratio"]},
            {"method": f"Timeslices ({ts['slice_seconds']}s ≥ {ts['slice_target']})", "SLI": ts["sli"],
             "allowed": ts["allowed_minutes"], "consumed": ts["consumed_minutes"],
             "remaining": ts["remaining_minutes"], "remaining min": ts["remaining_minutes"],
             "remaining ratio": ts["remaining_ratio"]},
            {"method": "RatioTimeslices", "SLI": ts["ratio_timeslices_sli"]}],
            ["method", "SLI", "allowed", "consumed", "remaining", "remaining min", "remaining ratio"], pct=("SLI",)))
        out.append(line_chart({"fixed (from the window start)": [r["remaining_fixed"] for r in bd],
                               "fixed, events to date": [r["remaining_to_date"] for r in bd],
                               # drawn last: without history it coincides with "events to date"
                               "rolling (trailing window)": [r["remaining_rolling"] for r in bd]},
                              hline=0.0, title="error budget remaining, fixed and rolling (hourly)"))
        out.append(line_chart({k: [r[f"burn_{k}"] for r in bd] for k in ("1h", "6h", "1d", "3d")}, hline=1.0,
                              title="burn rate by window"))
        out.append(timeline(s["alerts"], steps, title="multi-window burn-rate alerts"))
        out.append("<h3>Daily</h3>" + _table(s["daily"], ["date", "events", "bad_events", "sli", "burn_rate",
                                                          "budget_consumed", "steps_missing"], pct=("sli",)))
        out.append("<h3>Largest bad periods</h3>" + _table(s["bad_periods"], ["start", "end", "minutes", "bad_events",
                                                                              "budget_share"]))
        out.append("<h3>Leader brokers and partitions that consumed budget</h3>"
                   + _table(s["brokers"], ["cluster", "leader", "bad", "share_of_window_budget"])
                   + _table(s["partitions"], ["cluster", "topic", "partition", "leader", "bad",
                                              "share_of_window_budget"]))
        out.append("<h3>Per cluster and topic</h3>" + _table(s["scopes"], ["cluster", "topic", "total", "bad", "sli",
                                                                          "burn_rate", "remaining_ratio"],
                                                            pct=("sli",)))
    lat = report["latency"]
    out.append("<h2>Latency percentiles (merged HDR, µs)</h2>")
    cols = ["histogram", "count", "p50", "p90", "p99", "p99_9", "max"]
    out.append(_table([{"histogram": k, **v} for k, v in lat["window"].items()], cols))
    e2e = [d for d in lat["daily"] if d["histogram"] == "e2e_latency_hdr"]
    out.append(line_chart({p: [d[p] for d in e2e] for p in ("p50", "p99", "p99_9")},
                          title="e2e latency by day (µs)"))
    out.append(_table(lat["daily"], ["date"] + cols))
    if report.get("lag"):
        out.append("<h2>Consumer lag (share of time OK)</h2>" + _table(
            report["lag"]["groups"], ["group", "instants", "share_ok", "share_warn", "share_err", "max_lag", "met"],
            pct=("share_ok", "share_warn", "share_err")))
    out.append("</body></html>")
    return "\n".join(out)
