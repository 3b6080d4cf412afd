"""`kafkascope`: Kafka's command-line tools on confluent-kafka, for our broker and any Apache Kafka."""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException

from exporter import zk as zk_exporter
from kafkascope import lag_cli, slo_cli, up
from kafkascope.client import CliError, error_text
from kafkascope.cluster import cli as cluster_cli
from kafkascope.fuzz import cli as fuzz_cli
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
    up.add_parser(sub)
    fuzz_cli.add_parser(sub)
    dp = sub.add_parser("dashboards", help="Grafana dashboards and Prometheus rules (dashboards/build.py)")
    dsub = dp.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND", required=True, parser_class=_Parser)
    push = dsub.add_parser("push", help="create/overwrite the kafkascope dashboards through Grafana's HTTP API")
    push.add_argument("--url", required=True, help="Grafana base URL, e.g. http://127.0.0.1:3000")
    push.add_argument("--token", required=True, help="service account token (Editor)")
    push.add_argument("--folder", default="kafkascope", help="folder title (kafkascope)")
    push.set_defaults(run=_dashboards_push)
    build = dsub.add_parser("build", help="regenerate dashboards/grafana and dashboards/prometheus (--check: diff)")
    build.add_argument("--check", action="store_true")
    build.set_defaults(run=lambda a: __import__("dashboards.build").build.main(["--check"] if a.check else []))
    xp = sub.add_parser("xmonitor", help="Xinfra-style write/read SLI probe (python -m xmonitor)")
    xmonitor_cli.add_arguments(xp)
    xp.set_defaults(run=xmonitor_cli.run)
    return p


def _dashboards_push(args: argparse.Namespace) -> int:
    from dashboards import grafana

    try:
        uids = grafana.push(args.url, args.token, args.folder)
    except Exception as e:  # noqa: BLE001 - grafana-client / network errors, one line
        raise CliError(f"push to {args.url} failed: {e}") from None
    print(f"pushed {len(uids)} dashboards to {args.url}: {', '.join(uids)}")
    return 0


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
