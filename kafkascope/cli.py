"""`kafkascope`: Kafka's command-line tools on confluent-kafka, for our broker and any Apache Kafka."""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException

from exporter import zk as zk_exporter
from kafkascope import lag_cli, slo_cli
from kafkascope.client import CliError, error_text
from kafkascope.cluster import cli as cluster_cli
from kafkascope.tools import TOOLS
from xmonitor import __main__ as xmonitor_cli


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line instead of argparse's usage dump
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafkascope", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for tool in TOOLS:
        tool.register(sub)
    lag_cli.add_parser(sub)
    slo_cli.add_parser(sub)
    cluster_cli.add_parser(sub)
    zk_exporter.add_parser(sub)
    xp = sub.add_parser("xmonitor", help="Xinfra-style write/read SLI probe (python -m xmonitor)")
    xmonitor_cli.add_arguments(xp)
    xp.set_defaults(run=xmonitor_cli.run)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help or a usage error; return the code so callers need not catch
        return e.code if isinstance(e.code, int) else 2
    prog = f"kafkascope {args.command}"
    try:
        return args.run(args) or 0
    except CliError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KafkaException as e:
        print(f"{prog}: error: {error_text(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
