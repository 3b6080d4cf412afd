"""`kafkascope zk-exporter`: ZooKeeper `mntr` figures on /metrics (exporter/zk.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from exporter.web_config import WebConfigError
from exporter.web_config import load as load_web_config
from exporter.zk import parse_hosts, serve


def register(sub: argparse._SubParsersAction) -> None:
    """`kafkascope zk-exporter --zookeeper H:P,... [--listen HOST:PORT]`."""
    p = sub.add_parser("zk-exporter", help="export ZooKeeper ensemble metrics (mntr) on /metrics",
                       description="Ask each ZooKeeper server `mntr` on every scrape and serve the figures in "
                                   "Prometheus text format (zk_* names, zk_host label).")
    p.add_argument("--zookeeper", required=True, metavar="H:P,...", help="ZooKeeper servers (a chroot is ignored)")
    p.add_argument("--listen", default="127.0.0.1:9141", metavar="HOST:PORT",
                   help="where to serve /metrics (default 127.0.0.1:9141; port 0 picks a free one)")
    p.add_argument("--web.config.file", "--web-config-file", dest="web_config_file", metavar="FILE",
                   help="TLS and basic auth for /metrics, in the Prometheus exporter-toolkit web-config format")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    hosts = parse_hosts(args.zookeeper)
    host, _, port = args.listen.rpartition(":")
    try:
        web = load_web_config(args.web_config_file) if args.web_config_file else None
    except WebConfigError as e:
        print(f"kafkascope zk-exporter: error: {e}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(hosts, host or "127.0.0.1", int(port), web_config=web))
    except KeyboardInterrupt:
        pass
    return 0
