"""`kafkascope lag ...` (Burrow-style lag monitor, offline evaluation) and `kafkascope slo lag-history`."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import signal
import sys
import threading

from kafkascope.client import CliError, read_properties
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


def _config(args: argparse.Namespace) -> LagConfig:
    """lag.yaml (or the defaults) with the command-line overrides applied; raises OSError, ConfigError."""
    config = read_config(args.config)
    if getattr(args, "http_port", None) is not None:
        config = dataclasses.replace(config, http_port=args.http_port)
    if args.drop_on_offset_tombstone:
        config = dataclasses.replace(config, storage=dataclasses.replace(config.storage,
                                                                        drop_on_offset_tombstone=True))
    return config


def _monitor(args: argparse.Namespace) -> int:
    from lagmonitor.api import LagAPI, serve
    from lagmonitor.collector import Collector, wall_ms
    from lagmonitor.monitor import LagMonitor

    if not args.bootstrap_servers:
        print("kafkascope lag: error: --bootstrap-servers is required (or use `lag evaluate`)", file=sys.stderr)
        return 2
    try:
        config = _config(args)
        client_props = read_properties(args.command_config)
    except (OSError, ConfigError, CliError) as e:
        print(f"kafkascope lag: error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    monitor = LagMonitor(config)
    server = serve(LagAPI(monitor, wall_ms), config.http_port)
    print(f"burrow-compatible API on http://127.0.0.1:{server.server_address[1]}/v3/kafka", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        Collector(args.bootstrap_servers, monitor, client_props=client_props).run(stop)
    finally:
        server.shutdown()
    return 0


def _time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    t = datetime.datetime.fromisoformat(text)
    return int((t if t.tzinfo else t.replace(tzinfo=datetime.UTC)).timestamp() * 1000)


def _lag_history(args: argparse.Namespace) -> int:
    from slo.jobs.lag_history import lag_history
    from slo.spark import session

    try:
        config = _config(args)
    except (OSError, ConfigError) as e:
        print(f"kafkascope slo lag-history: error: {e}", file=sys.stderr)
        return 2
    spark = session("kafkascope-lag-history", args.master)
    try:
        counts = lag_history(spark, args.input, args.out, args.from_ms, args.to_ms, args.step, config)
    finally:
        spark.stop()
    print(json.dumps(counts))
    return 0


def _add_tombstone_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drop-on-offset-tombstone", action="store_true",
                        help="drop a partition's window on an offset tombstone (sets storage.drop-on-offset-tombstone; "
                             "Burrow ignores them and keeps the group until expire-group)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `lag` (live monitor, `evaluate`) and `slo lag-history` on the kafkascope command parser."""
    lag = subparsers.add_parser("lag", help="consumer lag the way Burrow evaluates it",
                                description="Consumer-lag monitor with Burrow's rules.")
    lag.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="the cluster to monitor")
    lag.add_argument("--command-config", metavar="FILE",
                     help="client properties file, as Kafka's tools (security.protocol, sasl.*, ssl.*)")
    lag.add_argument("--config", metavar="lag.yaml", help="Burrow-style settings (see lagmonitor/config.py)")
    lag.add_argument("--http-port", type=int, help="API port on 127.0.0.1 (overrides http-port; 0 = any)")
    _add_tombstone_flag(lag)
    lag.set_defaults(run=_monitor)
    lag_sub = lag.add_subparsers(dest="lag_command", metavar="SUBCOMMAND")
    ev = lag_sub.add_parser("evaluate", help="evaluate partition cases from a JSON file (offline)")
    ev.add_argument("cases", metavar="CASES.json")
    ev.set_defaults(run=_evaluate)

    slo = subparsers.add_parser("slo", help="SLO batch jobs (PySpark)")
    slo_sub = slo.add_subparsers(dest="slo_command", metavar="JOB", required=True)
    hist = slo_sub.add_parser("lag-history", help="replay lag history through Burrow's rules: status intervals, "
                                                  "daily summary")
    hist.add_argument("--input", required=True, metavar="DIR", help="the lag monitor's history-dir")
    hist.add_argument("--out", required=True, metavar="DIR")
    hist.add_argument("--from", dest="from_ms", type=_time_ms, metavar="T", help="epoch ms or ISO time")
    hist.add_argument("--to", dest="to_ms", type=_time_ms, metavar="T", help="epoch ms or ISO time")
    hist.add_argument("--step", type=int, default=60, metavar="S", help="seconds between evaluations (60)")
    hist.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    hist.add_argument("--config", metavar="lag.yaml", help="the monitor's storage/evaluator settings")
    _add_tombstone_flag(hist)
    hist.set_defaults(run=_lag_history)
    from kafkascope import slo_cli  # slo generate / slo report

    slo_cli.add_jobs(slo_sub)
