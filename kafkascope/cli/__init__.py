"""`kafkascope`: Kafka's command-line tools on confluent-kafka, the local stack and the SLO jobs.

Every command is one module of this package with `register(subparsers)`, which adds its parser and sets `run`
(called with the parsed arguments; returns the exit code) as the parser default. COMMANDS is the whole list.
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException

from kafkascope.cli import (
    acls,
    cluster,
    configs,
    console_consumer,
    console_producer,
    consumer_groups,
    consumer_perf,
    dashboards,
    demo,
    e2e_latency,
    fuzz,
    lag,
    page,
    producer_perf,
    server,
    slo,
    topics,
    transactions,
    up,
    xmonitor,
    zk_exporter,
)
from kafkascope.cli.common import CliError, SubParser, error_text

COMMANDS = (server, topics, console_producer, console_consumer, consumer_groups, configs, producer_perf,
            consumer_perf, e2e_latency, demo, lag, slo, page, cluster, zk_exporter, up, fuzz, dashboards, xmonitor,
            acls, transactions)


def build_parser() -> argparse.ArgumentParser:
    p = SubParser(prog="kafkascope", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=SubParser)
    for command in COMMANDS:
        command.register(sub)
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
