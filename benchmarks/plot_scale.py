"""The partition cost curves (issue 20) as one SVG of small multiples, from partition_scale's JSON lines.

    python -m benchmarks.plot_scale RUN.jsonl [RUN2.log ...] [--out docs/scale-curves.svg]

Reads every line holding a `{"benchmark": "partition_scale", ...}` object (the benchmark's last line; a whole log
works too) from the files given, and draws one log-log panel per figure: every run's value as a dot, the median
per size joined by a line, ours and Apache Kafka in two colours, and a dashed linear reference (slope 1: the figure
proportional to the partitions) through the first median. On log-log axes a curve parallel to the reference grows
linearly; steeper grows faster. Prints each figure's growth exponents: between consecutive sizes (partition_scale's
`growth`, on the medians) and the least-squares slope over every point.

The SVG is written by hand (no plotting library in the project's dependencies): a few hundred lines of plain SVG
that browsers and GitHub render.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from xml.sax.saxutils import escape

from benchmarks._common import ROOT
from benchmarks.partition_scale import FIGURES, growth

# the totals: per-replica memory is rss_growth_mb / replicas, and failover_s is the session timeout + the rest
# failover_after_first_s is not plotted: below the 0.1 s poll at 1,000 and 3,000, so no log axis can hold it
PLOTTED = ["create_s", "metadata_wire_ms", "metadata_ms", "scrape_ms", "scrape_kb", "rss_growth_mb",
           "failover_beyond_session_s", "restart_s", "shutdown_s", "start_s"]
LABELS = {key: label for key, label, _unit in FIGURES}
COLOURS = {"kafkascope": "#1f77b4", "apache-kafka": "#d62728", "kafkascope-0200": "#8fbce6",
           "kafkascope-before": "#9a9a9a"}
NAMES = {"kafkascope": "kafkascope", "apache-kafka": "Apache Kafka 3.9 (ZooKeeper)",
         "kafkascope-0200": "kafkascope, first scale changes", "kafkascope-before": "kafkascope before the scale work"}
SHORT = {"kafkascope": "ours", "apache-kafka": "Kafka", "kafkascope-0200": "ours 02:00",
         "kafkascope-before": "ours before"}
ORDER = ["kafkascope", "apache-kafka", "kafkascope-0200", "kafkascope-before"]   # legend, slope labels and drawing order
PANEL_W, PANEL_H = 330, 240
MARGIN = {"left": 58, "right": 14, "top": 34, "bottom": 40}
COLUMNS = 4

Points = dict[str, dict[int, list[float]]]   # impl -> size -> the runs' values


# ---- reading ---------------------------------------------------------------------------------------------------

def read_runs(lines: Iterable[str]) -> list[dict]:
    """Every partition_scale result object in `lines` (text before the object on the line is ignored)."""
    runs = []
    for line in lines:
        i = line.find('{"benchmark": "partition_scale"')
        if i >= 0:
            runs.append(json.loads(line[i:]))
    return runs


def points(runs: Iterable[dict], key: str) -> Points:
    """impl -> size -> every run's value of `key` (runs without it, or with an error before it, add nothing)."""
    out: Points = {}
    for run in runs:
        for impl, by_size in run.get("results", {}).items():
            for size, figures in by_size.items():
                v = figures.get(key)
                if isinstance(v, int | float) and v > 0:
                    out.setdefault(impl, {}).setdefault(int(size), []).append(float(v))
    return out


def medians(by_size: dict[int, list[float]]) -> dict[int, float]:
    return {s: statistics.median(v) for s, v in sorted(by_size.items())}


def fit_exponent(by_size: dict[int, list[float]]) -> float | None:
    """Least-squares slope of log(value) on log(size) over every point; None with fewer than two sizes."""
    xs = [math.log(s) for s, vs in by_size.items() for _ in vs]
    ys = [math.log(v) for vs in by_size.values() for v in vs]
    if len(set(xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


# ---- drawing ---------------------------------------------------------------------------------------------------

class LogScale:
    """log10 of a value to a pixel coordinate between `p0` (at `lo`) and `p1` (at `hi`)."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float) -> None:
        if not 0 < lo < hi:
            raise ValueError(f"a log scale needs 0 < lo < hi (got {lo}, {hi})")
        self.lo, self.hi, self.p0, self.p1 = math.log10(lo), math.log10(hi), p0, p1

    def __call__(self, v: float) -> float:
        return self.p0 + (math.log10(v) - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)


def log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 x 10^k inside [lo, hi]; with fewer than two of those, every 1..9 x 10^k inside."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mantissas in ((1, 2, 5), range(1, 10)):
        ticks = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in mantissas if lo <= m * 10.0 ** k <= hi]
        if len(ticks) >= 2:
            return ticks
    return [lo, hi]


def tick_label(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def value_range(pts: Points, reference: list[tuple[float, float]]) -> tuple[float, float]:
    """The y range: every point and the reference line, widened by a quarter decade each side."""
    vals = [v for by_size in pts.values() for vs in by_size.values() for v in vs] + [v for _, v in reference]
    lo, hi = min(vals), max(vals)
    return lo / 10 ** 0.25, hi * 10 ** 0.25


def reference_line(pts: Points, sizes: list[int]) -> list[tuple[float, float]]:
    """Slope 1 through the first median of ours (else of the first implementation with points)."""
    impl = "kafkascope" if "kafkascope" in pts else next(iter(pts))
    first_size, first = next(iter(medians(pts[impl]).items()))
    return [(s, first * s / first_size) for s in (sizes[0], sizes[-1])]


def ordered(impls: Iterable[str]) -> list[str]:
    return sorted(impls, key=lambda i: (ORDER.index(i) if i in ORDER else len(ORDER), i))


def panel(key: str, pts: Points, sizes: list[int], x0: float, y0: float) -> list[str]:
    """One figure's panel, its top-left corner at (x0, y0): axes, ticks, reference, dots and median lines."""
    left, top = x0 + MARGIN["left"], y0 + MARGIN["top"]
    right, bottom = x0 + PANEL_W - MARGIN["right"], y0 + PANEL_H - MARGIN["bottom"]
    out = [f'<text x="{x0 + PANEL_W / 2:.1f}" y="{y0 + 16:.1f}" class="title">{escape(LABELS.get(key, key))}</text>']
    if not pts:
        return [*out, f'<text x="{(left + right) / 2:.1f}" y="{(top + bottom) / 2:.1f}" class="note">no data</text>']
    ref = reference_line(pts, sizes)
    ylo, yhi = value_range(pts, ref)
    xs = LogScale(sizes[0] / 1.25, sizes[-1] * 1.25, left, right)
    ys = LogScale(ylo, yhi, bottom, top)
    out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" '
               'class="frame"/>')
    for s in sizes:
        out.append(f'<line x1="{xs(s):.1f}" y1="{bottom:.1f}" x2="{xs(s):.1f}" y2="{top:.1f}" class="grid"/>')
        out.append(f'<text x="{xs(s):.1f}" y="{bottom + 14:.1f}" class="xtick">{s:,}</text>')
    for t in log_ticks(ylo, yhi):
        out.append(f'<line x1="{left:.1f}" y1="{ys(t):.1f}" x2="{right:.1f}" y2="{ys(t):.1f}" class="grid"/>')
        out.append(f'<text x="{left - 4:.1f}" y="{ys(t) + 3:.1f}" class="ytick">{tick_label(t)}</text>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 30:.1f}" class="axis">partitions (RF=3)</text>')
    (ax, ay), (bx, by) = ref
    out.append(f'<line x1="{xs(ax):.1f}" y1="{ys(ay):.1f}" x2="{xs(bx):.1f}" y2="{ys(by):.1f}" class="linear" data-ref="linear"/>')
    for n, impl in enumerate(ordered(pts)):
        by_size, colour = pts[impl], COLOURS.get(impl, "#555555")
        line = " ".join(f"{xs(s):.1f},{ys(v):.1f}" for s, v in medians(by_size).items())
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2" '
                   f'data-impl="{escape(impl)}"/>')
        for s, vs in sorted(by_size.items()):
            for v in vs:
                out.append(f'<circle cx="{xs(s):.1f}" cy="{ys(v):.1f}" r="3" fill="{colour}" fill-opacity="0.6" '
                           f'data-impl="{escape(impl)}" data-size="{s}" data-value="{v:.6g}"/>')
        exp = fit_exponent(by_size)
        if exp is not None:   # colour as a style: the stylesheet's text fill would override an attribute
            out.append(f'<text x="{left + 6:.1f}" y="{top + 14 + 13 * n:.1f}" class="exp" style="fill: {colour}">'
                       f'{escape(SHORT.get(impl, impl))}: slope {exp:.2f}</text>')
    return out


STYLE = """<style>
text { font-family: sans-serif; font-size: 10px; fill: #222; }
.title { font-size: 12px; font-weight: bold; text-anchor: middle; }
.xtick { text-anchor: middle; } .ytick { text-anchor: end; } .axis { text-anchor: middle; fill: #555; }
.note { text-anchor: middle; fill: #888; }
.exp { font-size: 10px; font-weight: bold; paint-order: stroke; stroke: white; stroke-width: 3px; }
.frame { fill: none; stroke: #999; } .grid { stroke: #e4e4e4; }
.linear { stroke: #777; stroke-width: 1.2; stroke-dasharray: 5 4; }
</style>"""


def svg(figures: dict[str, Points], title: str) -> str:
    """The whole document: a legend line, then the panels in rows of COLUMNS."""
    sizes = sorted({s for pts in figures.values() for by_size in pts.values() for s in by_size})
    if not sizes:
        raise ValueError("no partition_scale figures to plot")
    if len(sizes) == 1:
        sizes = [sizes[0], sizes[0] * 10]   # a single size still gets a decade of axis
    rows = math.ceil(len(figures) / COLUMNS)
    width, height = COLUMNS * PANEL_W, 46 + rows * PANEL_H
    body = [f'<text x="10" y="18" class="title" style="text-anchor: start">{escape(title)}</text>']
    lx = 10.0
    for impl in ordered({i for pts in figures.values() for i in pts}):
        name = NAMES.get(impl, impl)
        body.append(f'<circle cx="{lx + 5:.1f}" cy="34" r="4" fill="{COLOURS.get(impl, "#555555")}"/>'
                    f'<text x="{lx + 13:.1f}" y="38">{escape(name)}</text>')
        lx += 30 + 6 * len(name)   # ~6 px a character at 10 px sans-serif
    body.append(f'<line x1="{lx:.1f}" y1="34" x2="{lx + 24:.1f}" y2="34" class="linear"/>'
                f'<text x="{lx + 30:.1f}" y="38">linear (slope 1) through ours at the smallest size; dots: runs, '
                'lines: medians; slope: least-squares fit</text>')
    for n, (key, pts) in enumerate(figures.items()):
        body += panel(key, pts, sizes, (n % COLUMNS) * PANEL_W, 46 + (n // COLUMNS) * PANEL_H)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">\n{STYLE}\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")


# ---- report ----------------------------------------------------------------------------------------------------

def exponent_lines(figures: dict[str, Points]) -> list[str]:
    """Per figure and implementation: the medians, the step exponents and the fitted slope."""
    out = []
    for key, pts in figures.items():
        for impl, by_size in pts.items():
            med = medians(by_size)
            steps = ", ".join(f"{g['from']:,}->{g['to']:,} {'n/a' if g['exponent'] is None else g['exponent']}"
                              for g in growth(dict(med.items())))
            fit = fit_exponent(by_size)
            meds = ", ".join(f"{s:,}: {v:.4g} (n={len(by_size[s])})" for s, v in med.items())
            out.append(f"{key:<26} {impl:<13} medians {meds}; steps {steps or '-'}; "
                       f"fit {'n/a' if fit is None else f'{fit:.2f}'}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.plot_scale", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="partition_scale output (JSON lines or whole logs)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "scale-curves.svg")
    ap.add_argument("--title", default="kafkascope vs Apache Kafka 3.9: cost in partitions, 3 brokers, RF=3 "
                                       "(log-log)")
    args = ap.parse_args(argv)
    runs = []
    for f in args.files:
        try:
            runs += read_runs(f.read_text().splitlines())
        except OSError as e:
            ap.error(f"cannot read {f}: {e.strerror}")
    if not runs:
        ap.error("no partition_scale result lines in the files given")
    figures = {key: points(runs, key) for key in PLOTTED}
    args.out.write_text(svg(figures, args.title))
    print(f"{len(runs)} runs -> {args.out}")
    print("\n".join(exponent_lines(figures)))


if __name__ == "__main__":
    main()
