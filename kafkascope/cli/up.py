"""`kafkascope up`: the local stack (`make demo`), or with --bootstrap-servers the monitoring half only, for a
cluster you already run. Ctrl-C (or SIGTERM) stops everything `up` started and nothing else."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from kafkascope.cli.common import CliError, UsageError, read_properties
from kafkascope.local.stack.local import DEMO_REPORT_EVERY, PARTS, Stack
from kafkascope.local.stack.watch import (
    WATCH_PARTS,
    ClusterView,
    WatchError,
    WatchOptions,
    WatchStack,
    inspect,
    missing_topic_message,
    plan,
    report_command,
    scrape_job,
)
from slo.specs import parse_duration

WATCH_REPORT_EVERY = "15m"
DESCRIPTION = """\
Without --bootstrap-servers: ZooKeeper + three brokers, the ZooKeeper exporter, xmonitor, the lag monitor with a
sample consumer group, the node exporter, Prometheus with the generated rules, the live SLO report on the probe's
measurements (every 5m by default; the page says the first one is under way until it is published) and the
Streamlit page, all on 127.0.0.1 (what `make demo` runs). --demo-history: a one-shot report on 14 days of
synthetic history instead (the page labels it synthetic).

With --bootstrap-servers: the monitoring half only, against a cluster you already run (ours or Apache Kafka):
xmonitor, the lag monitor, the node exporter, Prometheus scraping them and the --scrape URLs, the rules and alerts,
the scheduled SLO report and the page. Nothing is created on your cluster but the probe's topic (only with
--create-probe-topic) and the probe's consumer groups.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("up", help="the whole suite on 127.0.0.1, or the monitoring half for your cluster",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", metavar="DIR", help="keep state here between runs (default: a temp dir, removed)")
    p.add_argument("--no", dest="leave_out", action="append", default=[], choices=PARTS, metavar="PART",
                   help=f"leave a part out (repeatable): {', '.join(PARTS)}")
    for part in PARTS:
        p.add_argument(f"--no-{part}", dest="leave_out", action="append_const", const=part,
                       help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each process (60)")
    p.add_argument("--report-every", metavar="DURATION",
                   help=f"live SLO report schedule ({WATCH_REPORT_EVERY} watching a cluster, {DEMO_REPORT_EVERY} "
                        "for the local stack)")
    p.add_argument("--security", choices=("sasl_ssl",),
                   help="local stack: SASL_SSL listeners (SCRAM/PLAIN over TLS), ACLs and a super user, every client "
                        "with the admin's client.properties, every /metrics and API endpoint with TLS and basic auth")
    p.add_argument("--demo-history", action="store_true",
                   help="local stack: report once on 14 days of generated (synthetic) SLI history instead of live")
    w = p.add_argument_group("watching a cluster you run")
    w.add_argument("--bootstrap-servers", "--bootstrap-server", metavar="HOST:PORT[,...]",
                   help="start the monitoring half only, against this cluster")
    w.add_argument("--command-config", metavar="FILE",
                   help="client properties for every client (security.protocol, sasl.*, ssl.*)")
    w.add_argument("--cluster-name", default="kafka", metavar="NAME", help="the cluster label (kafka)")
    w.add_argument("--scrape", action="append", default=[], metavar="URL",
                   help="a broker metrics endpoint, e.g. jmx_exporter's http://H:7071/metrics (repeatable; "
                        "default: our brokers' prometheus.listener)")
    w.add_argument("--scrape-node", action="append", default=[], metavar="URL",
                   help="a node exporter on a broker host, e.g. http://H:9100/metrics (repeatable; job node)")
    w.add_argument("--create-probe-topic", action="store_true",
                   help="let xmonitor create (and manage) its probe topic when it is missing")
    w.add_argument("--probe-topic", default="xinfra-monitor-topic", metavar="TOPIC")
    w.add_argument("--dry-run", action="store_true", help="print what would be created and started, then exit")
    p.set_defaults(run=run)


def watch_options(args: argparse.Namespace) -> WatchOptions:
    """WatchOptions from the command line; UsageError for flags that make no sense here."""
    bad = sorted(set(args.leave_out) - set(WATCH_PARTS))
    if bad:
        raise UsageError(f"--no {bad[0]}: not a part when watching a cluster (have {', '.join(WATCH_PARTS)})")
    try:  # bad URLs or durations fail here, before anything is asked of the cluster
        scrape_job(args.scrape)
        scrape_job(args.scrape_node, "node", "--scrape-node")
        every = report_every(args, WATCH_REPORT_EVERY)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return WatchOptions(bootstrap=args.bootstrap_servers, client_props=read_properties(args.command_config),
                        cluster_name=args.cluster_name, scrape=tuple(args.scrape),
                        scrape_node=tuple(args.scrape_node),
                        create_probe_topic=args.create_probe_topic, probe_topic=args.probe_topic,
                        report_every=every,
                        parts=frozenset(p for p in WATCH_PARTS if p not in set(args.leave_out)))


def report_every(args: argparse.Namespace, default: str) -> str:
    """--report-every (or the mode's default); ValueError unless a positive duration."""
    every = args.report_every or default
    if parse_duration(every) <= 0:
        raise ValueError(f"--report-every {every}: must be positive")
    return every


def run(args: argparse.Namespace) -> int:
    watching = bool(args.bootstrap_servers)
    if not watching:
        for flag in ("command_config", "scrape", "scrape_node", "create_probe_topic", "dry_run"):
            if getattr(args, flag):
                raise UsageError(f"--{flag.replace('_', '-')} needs --bootstrap-servers")
    elif args.demo_history or args.security:
        raise UsageError(f"--{'demo-history' if args.demo_history else 'security'} is for the local stack (without "
                         "--bootstrap-servers; a secured cluster you run is watched with --command-config)")
    opts = watch_options(args) if watching else None
    try:
        every = report_every(args, DEMO_REPORT_EVERY)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if opts is not None and args.dry_run:
        return _dry_run(opts)
    tmp = None
    if args.data_dir:
        data_dir = Path(args.data_dir)
    else:
        tmp = data_dir = Path(tempfile.mkdtemp(prefix="kafkascope-up-"))
    try:
        if opts is not None:
            stack = WatchStack(data_dir, opts, view=_inspect_or_refuse(opts))
        else:
            stack = Stack(data_dir, [p for p in PARTS if p not in set(args.leave_out)],
                          demo_history=args.demo_history, report_every=every, security=args.security)
        return _run_stack(stack, data_dir, args.timeout)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _inspect(opts: WatchOptions) -> ClusterView:
    from confluent_kafka import KafkaException

    try:
        return inspect(opts)
    except KafkaException as e:
        raise CliError(f"cannot reach {opts.bootstrap}: {e}") from None


def _inspect_or_refuse(opts: WatchOptions) -> ClusterView:
    """The watched cluster, before anything starts; a missing probe topic without consent is an error."""
    view = _inspect(opts)
    if not view.topic_exists and not opts.create_probe_topic:
        raise CliError(missing_topic_message(opts))
    return view


def _dry_run(opts: WatchOptions) -> int:
    view = _inspect(opts)
    cmd = report_command(opts, Path("DATA_DIR/sli"), Path("DATA_DIR/slo-reports"), Path("DATA_DIR/lag-history"))
    print("\n".join(plan(opts, view, cmd)))
    print("dry run: nothing created, nothing started")
    return 0 if view.topic_exists or opts.create_probe_topic else 1


def _run_stack(stack: Stack | WatchStack, data_dir: Path, timeout_s: float) -> int:
    """Start, print the URLs, wait for Ctrl-C/SIGTERM or a dead child, stop what was started."""
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        try:
            stack.start(progress=lambda s: print(s, flush=True), timeout_s=timeout_s)
        except KeyboardInterrupt:
            raise
        except WatchError as e:
            print(f"kafkascope up: error: {e}", file=sys.stderr, flush=True)
            return 1
        except Exception as e:  # reported, everything started is stopped
            print(f"kafkascope up: error: {e}", file=sys.stderr, flush=True)
            return 1
        print("\nkafkascope is up:\n" + stack.format_urls() + "\n\nCtrl-C stops everything.", flush=True)
        while not stopping.wait(1.0):
            dead = stack.dead_children()
            if dead:
                print(f"kafkascope up: {', '.join(dead)} exited (see {data_dir / 'logs'}); stopping",
                      file=sys.stderr, flush=True)
                code = 1
                break
    except KeyboardInterrupt:
        code = 0
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        print("stopping ...", flush=True)
        stack.stop()
        for s, h in old.items():
            signal.signal(s, h)
        print("stopped", flush=True)
    return code
