"""`kafkascope lag ...` (Burrow-style lag monitor, offline evaluation) and `kafkascope slo lag-history`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import threading

from kafkascope.cli.common import CliError, read_properties
from lagmonitor.cases import CaseError, evaluate_cases
from lagmonitor.config import ConfigError, LagConfig, read_config


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


def lag_config(args: argparse.Namespace) -> LagConfig:
    """lag.yaml (or the defaults) with the command-line overrides applied; raises OSError, ConfigError."""
    config = read_config(args.config)
    if getattr(args, "http_port", None) is not None:
        config = dataclasses.replace(config, http_port=args.http_port)
    if getattr(args, "web_config_file", None) is not None:
        config = dataclasses.replace(config, web_config_file=args.web_config_file)
    if args.drop_on_offset_tombstone:
        config = dataclasses.replace(config, storage=dataclasses.replace(config.storage,
                                                                        drop_on_offset_tombstone=True))
    return config


def _monitor(args: argparse.Namespace) -> int:
    from exporter.web_config import WebConfigError
    from exporter.web_config import load as load_web_config
    from lagmonitor.api import LagAPI, serve
    from lagmonitor.collector import Collector, wall_ms
    from lagmonitor.monitor import LagMonitor

    if not args.bootstrap_servers:
        print("kafkascope lag: error: --bootstrap-servers is required (or use `lag evaluate`)", file=sys.stderr)
        return 2
    try:
        config = lag_config(args)
        client_props = read_properties(args.command_config)
        web = load_web_config(config.web_config_file) if config.web_config_file else None
    except (OSError, ConfigError, CliError, WebConfigError) as e:
        print(f"kafkascope lag: error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    monitor = LagMonitor(config)
    server = serve(LagAPI(monitor, wall_ms), config.http_port, web_config=web)
    scheme = "https" if web is not None and web.tls is not None else "http"
    print(f"burrow-compatible API on {scheme}://127.0.0.1:{server.server_address[1]}/v3/kafka", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        Collector(args.bootstrap_servers, monitor, client_props=client_props).run(stop)
    finally:
        server.shutdown()
    return 0


def add_tombstone_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drop-on-offset-tombstone", action="store_true",
                        help="drop a partition's window on an offset tombstone (sets storage.drop-on-offset-tombstone; "
                             "Burrow ignores them and keeps the group until expire-group)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """`kafkascope lag`: the live monitor and `lag evaluate`."""
    lag = subparsers.add_parser("lag", help="consumer lag the way Burrow evaluates it",
                                description="Consumer-lag monitor with Burrow's rules.")
    lag.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="the cluster to monitor")
    lag.add_argument("--command-config", metavar="FILE",
                     help="client properties file, as for Kafka's tools (security.protocol, sasl.*, ssl.*)")
    lag.add_argument("--config", metavar="lag.yaml", help="Burrow-style settings (see lagmonitor/config.py)")
    lag.add_argument("--http-port", type=int, help="API port on 127.0.0.1 (overrides http-port; 0 = any)")
    lag.add_argument("--web.config.file", "--web-config-file", dest="web_config_file", metavar="FILE",
                     help="TLS and basic auth for /metrics and the API, in the Prometheus exporter-toolkit "
                          "web-config format (overrides web-config-file)")
    add_tombstone_flag(lag)
    lag.set_defaults(run=_monitor)
    lag_sub = lag.add_subparsers(dest="lag_command", metavar="SUBCOMMAND")
    ev = lag_sub.add_parser("evaluate", help="evaluate partition cases from a JSON file (offline)")
    ev.add_argument("cases", metavar="CASES.json")
    ev.set_defaults(run=_evaluate)
