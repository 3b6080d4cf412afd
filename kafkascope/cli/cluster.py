"""`kafkascope cluster up|status|kill|stop|start|pause|resume|down`: a local ZooKeeper + N brokers for fault drills.

    kafkascope cluster up --brokers 3 --data-dir DIR [--racks a,b,c] [--override k=v ...] [--impl apache-kafka]
                          [--security sasl_ssl] [--version 4.1.1 [--controllers N]]
    kafkascope cluster kill|stop|start|pause|resume ID --data-dir DIR     (ID: a node id, or zk)
    kafkascope cluster status --data-dir DIR [--json]
    kafkascope cluster down --data-dir DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import time

from kafkascope.local import kraft
from kafkascope.local import process as proc
from kafkascope.local.apache_kafka import ZK_VERSION
from kafkascope.local.launcher import IMPLS, ClusterError, ClusterLauncher
from kafkascope.local.security import MODES as SECURITY_MODES
from kafkascope.local.zookeeper import ZooKeeperUnavailable

PROG = "kafkascope cluster"


class _Stop(Exception):
    pass


def _on_signal(signum: int, _frame: object) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean shutdown
    raise _Stop(signum)


def _parse_overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClusterError(f"--override expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _new_launcher(args: argparse.Namespace, racks: list[str] | None) -> ClusterLauncher:
    """Apache Kafka 4.x is a KRaft cluster (kafkascope/local/kraft.py); 3.9 and ours keep ZooKeeper."""
    if args.version and args.impl != "apache-kafka":
        raise ClusterError("--version picks an Apache Kafka release: use it with --impl apache-kafka")
    if args.impl == "apache-kafka" and kraft.is_kraft_version(args.version):
        return kraft.KRaftLauncher(args.data_dir, brokers=args.brokers, racks=racks, controllers=args.controllers,
                                   broker_props=_parse_overrides(args.override), version=args.version,
                                   security=args.security)
    if args.controllers:
        raise ClusterError("--controllers is for KRaft clusters (--impl apache-kafka --version 4.x)")
    if args.version and args.version != ZK_VERSION:
        raise ClusterError(f"Apache Kafka {args.version}: the ZooKeeper-mode line pinned here is {ZK_VERSION}")
    return ClusterLauncher(args.data_dir, brokers=args.brokers, racks=racks,
                           broker_props=_parse_overrides(args.override), standalone=args.standalone,
                           zookeeper=not args.no_zookeeper, impl=args.impl, security=args.security,
                           log_dirs=args.log_dirs)


def _up(args: argparse.Namespace) -> int:
    out = sys.stdout
    racks = [r.strip() for r in args.racks.split(",")] if args.racks else None
    launcher = _new_launcher(args, racks)
    if launcher.state_path.exists() and kraft.attach(args.data_dir).launcher_alive():
        raise ClusterError(f"a launcher is already running on {launcher.data_dir}")
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        launcher.start_all(timeout_s=args.timeout)
        print(f"bootstrap servers: {launcher.bootstrap}", file=out)
        if launcher.zookeeper_connect:
            print(f"zookeeper: {launcher.zookeeper_host_port} (brokers use {launcher.zookeeper_connect})"
                  if not launcher.standalone else f"zookeeper: {launcher.zookeeper_host_port} (brokers standalone)",
                  file=out)
        print(f"state: {launcher.state_path}  (kafkascope cluster status --data-dir {launcher.data_dir})", file=out)
        for b in launcher.broker_ids:
            if launcher.metrics_url(b):
                print(f"broker {b} metrics: {launcher.metrics_url(b)}", file=out)
        if isinstance(launcher, kraft.KRaftLauncher):
            print(f"KRaft cluster {launcher.cluster_id} (Apache Kafka {launcher.version}), controllers: "
                  f"{', '.join(map(str, launcher.controller_ids()))}", file=out)
        if launcher.security:
            print(launcher.kit().usage(launcher.bootstrap), file=out)
        table = launcher.format_status()
        print(table, file=out, flush=True)
        while True:
            time.sleep(args.poll_interval)
            current = launcher.format_status()  # also reaps children killed from elsewhere
            if current != table:
                table = current
                print(f"--- {time.strftime('%H:%M:%S')}\n{table}", file=out, flush=True)
    except _Stop:
        print("stopping cluster ...", file=out, flush=True)
    finally:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        try:
            launcher.shutdown()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    print("cluster stopped", file=out, flush=True)
    return 0


def _status(args: argparse.Namespace) -> int:
    launcher = kraft.attach(args.data_dir)
    if args.json:
        json.dump({"impl": launcher.impl, "bootstrap_servers": launcher.bootstrap,
                   "zookeeper": launcher.zookeeper_host_port,
                   "zookeeper_connect": launcher.zookeeper_connect, "launcher_running": launcher.launcher_alive(),
                   "security": launcher.security,
                   "client_properties": str(launcher.kit().client_properties_path) if launcher.security else None,
                   "processes": [dataclasses.asdict(s) for s in launcher.status()]}, sys.stdout, indent=2)
        print()
        return 0
    print(f"bootstrap servers: {launcher.bootstrap}")
    if launcher.zookeeper_connect:
        print(f"zookeeper: {launcher.zookeeper_connect}")
    print(f"launcher: {'running' if launcher.launcher_alive() else 'not running'}")
    if launcher.security:
        print(f"security: {launcher.security} (client properties: {launcher.kit().client_properties_path})")
    if isinstance(launcher, kraft.KRaftLauncher):
        try:
            q = launcher.quorum()
            print(f"quorum: leader {q.leader_id} (the active controller), epoch {q.leader_epoch}, "
                  f"high watermark {q.high_watermark}")
        except ClusterError as e:
            print(f"quorum: unknown ({e})")
    print(launcher.format_status())
    return 0


def _action(args: argparse.Namespace) -> int:
    launcher = kraft.attach(args.data_dir)
    if args.action == "start":
        launcher.start(args.id, timeout_s=args.timeout)
    elif args.action == "stop":
        launcher.stop(args.id, timeout_s=args.timeout)
    else:
        getattr(launcher, args.action)(args.id)
    print(f"{args.id}: {launcher.state_of(args.id)}")
    return 0


def _down(args: argparse.Namespace) -> int:
    launcher = kraft.attach(args.data_dir)
    state = launcher._load()
    if launcher.launcher_alive():  # let the foreground launcher shut down in order
        os.kill(state.launcher_pid, signal.SIGTERM)
        proc.wait_dead(state.launcher_pid, state.launcher_started, args.timeout)
    launcher.shutdown()
    print(launcher.format_status())
    return 0


def _run(handler):
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (ClusterError, ZooKeeperUnavailable) as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
    return run


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("cluster", help="local ZooKeeper + N brokers, with fault drills",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")

    def data_dir(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", required=True, help="cluster directory (configs, logs, cluster.json)")

    up = sub.add_parser("up", help="start ZooKeeper and N brokers; stay in the foreground until Ctrl-C")
    data_dir(up)
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument("--racks", help="comma-separated broker.rack values, assigned round-robin")
    up.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="extra server.properties entry for every broker (repeatable)")
    up.add_argument("--standalone", action="store_true",
                    help="brokers without zookeeper.connect (independent single-node brokers); ZooKeeper still runs")
    up.add_argument("--no-zookeeper", action="store_true", help="do not start ZooKeeper (implies --standalone)")
    up.add_argument("--impl", choices=IMPLS, default="kafkascope",
                    help="whose brokers: ours (default) or Apache Kafka 3.9 in ZooKeeper mode with the JMX exporter "
                         "agent (the reference peer; jars fetched from Maven Central on first use)")
    up.add_argument("--security", choices=SECURITY_MODES,
                    help="sasl_ssl: SASL_SSL listeners only (PLAIN, SCRAM-SHA-512), AclAuthorizer, super user admin; "
                         "writes certificates and client.properties under DATA_DIR/security")
    up.add_argument("--version", help=f"Apache Kafka release with --impl apache-kafka: {ZK_VERSION} (default, "
                                      "ZooKeeper mode) or 4.x, a KRaft cluster without ZooKeeper")
    up.add_argument("--controllers", type=int, default=0,
                    help="KRaft: that many controller-only nodes besides the brokers (default 0: every node is a "
                         "combined broker+controller)")
    up.add_argument("--log-dirs", type=int, default=1, metavar="N",
                    help="log dirs per broker (JBOD; default 1): logs, logs-2, ... in each broker's directory")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each process to be ready")
    up.add_argument("--poll-interval", type=float, default=1.0, help=argparse.SUPPRESS)
    up.set_defaults(run=_run(_up))

    st = sub.add_parser("status", help="each process, its pid, port and state")
    data_dir(st)
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(run=_run(_status))

    helps = {"kill": "SIGKILL (a crash)", "stop": "SIGTERM and wait (controlled shutdown)",
             "start": "start again with the same config and data", "pause": "SIGSTOP (freeze)",
             "resume": "SIGCONT"}
    for action, text in helps.items():
        ap = sub.add_parser(action, help=f"{text} a broker or ZooKeeper")
        ap.add_argument("id", help="broker id, or zk")
        data_dir(ap)
        ap.add_argument("--timeout", type=float, default=30.0, help=argparse.SUPPRESS)
        ap.set_defaults(run=_run(_action), action=action)

    dn = sub.add_parser("down", help="stop the launcher and every process of the cluster")
    data_dir(dn)
    dn.add_argument("--timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    dn.set_defaults(run=_run(_down))
    return p
