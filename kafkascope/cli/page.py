"""`kafkascope page --report DIR`: the Streamlit SLO page for a report directory."""

from __future__ import annotations

import argparse
import os
import sys

from dashboards.catalog import STREAMLIT_APP


def _page(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "streamlit", "run", str(STREAMLIT_APP), "--server.address", "127.0.0.1",
           "--server.port", str(args.port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--", "--report", str(args.report)]
    os.execv(sys.executable, cmd)  # become streamlit: signals reach it directly
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """`kafkascope page --report DIR`."""
    page = subparsers.add_parser("page", help="the Streamlit SLO page for a report directory (127.0.0.1)")
    page.add_argument("--report", required=True, metavar="DIR", help="output of `kafkascope slo report`")
    page.add_argument("--port", type=int, default=8501)
    page.set_defaults(run=_page)
