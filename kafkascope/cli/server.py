"""`kafkascope broker CONFIG [--override k=v]`: run our Kafka-protocol broker."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker", help="run the kafkascope broker", add_help=False,
                       description="Arguments are passed to `python -m broker` (CONFIG [--override k=v]).")
    p.add_argument("broker_args", nargs=argparse.REMAINDER)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from broker.__main__ import main  # lazily: the CLI tools must not need the broker's imports

    return main(args.broker_args)
