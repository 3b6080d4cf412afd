"""`kafkascope xmonitor`: the Xinfra-style write/read SLI probe (same flags as `python -m xmonitor`)."""

from __future__ import annotations

import argparse

from xmonitor import __main__ as xmonitor_main


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("xmonitor", help="Xinfra-style write/read SLI probe (python -m xmonitor)")
    xmonitor_main.add_arguments(p)
    p.set_defaults(run=xmonitor_main.run)
