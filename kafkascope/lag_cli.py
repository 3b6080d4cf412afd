"""`kafkascope lag ...` (Burrow-style lag monitor, offline evaluation) and `kafkascope slo lag-history`."""

from __future__ import annotations

import argparse
import json
import sys

from slo.lag.cases import CaseError, evaluate_cases


def _evaluate(args: argparse.Namespace) -> int:
    try:
        with open(args.cases, encoding="utf-8") as f:
            raw = json.load(f)
        result = evaluate_cases(raw)
    except (OSError, json.JSONDecodeError, CaseError) as e:
        print(f"kafkascope lag evaluate: error: {e}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `lag` (live monitor, `evaluate`) and `slo lag-history` on the kafkascope command parser."""
    lag = subparsers.add_parser("lag", help="consumer lag the way Burrow evaluates it",
                                description="Consumer-lag monitor with Burrow's rules.")
    lag_sub = lag.add_subparsers(dest="lag_command", metavar="SUBCOMMAND")
    ev = lag_sub.add_parser("evaluate", help="evaluate partition cases from a JSON file (offline)")
    ev.add_argument("cases", metavar="CASES.json")
    ev.set_defaults(run=_evaluate)
