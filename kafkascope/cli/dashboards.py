"""`kafkascope dashboards push | build`: the Grafana dashboards and Prometheus rules (dashboards/)."""

from __future__ import annotations

import argparse

from kafkascope.cli.common import CliError, SubParser


def register(sub: argparse._SubParsersAction) -> None:
    dp = sub.add_parser("dashboards", help="Grafana dashboards and Prometheus rules (dashboards/build.py)")
    dsub = dp.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND", required=True, parser_class=SubParser)
    push = dsub.add_parser("push", help="create/overwrite the kafkascope dashboards through Grafana's HTTP API")
    push.add_argument("--url", required=True, help="Grafana base URL, e.g. http://127.0.0.1:3000")
    push.add_argument("--token", required=True, help="service account token (Editor)")
    push.add_argument("--folder", default="kafkascope", help="folder title (kafkascope)")
    push.set_defaults(run=_push)
    build = dsub.add_parser("build", help="regenerate dashboards/grafana and dashboards/prometheus (--check: diff)")
    build.add_argument("--check", action="store_true")
    build.set_defaults(run=_build)


def _build(args: argparse.Namespace) -> int:
    from dashboards import build

    return build.main(["--check"] if args.check else [])


def _push(args: argparse.Namespace) -> int:
    from dashboards import grafana

    try:
        uids = grafana.push(args.url, args.token, args.folder)
    except Exception as e:  # grafana-client / network errors, one line
        raise CliError(f"push to {args.url} failed: {e}") from None
    print(f"pushed {len(uids)} dashboards to {args.url}: {', '.join(uids)}")
    return 0
