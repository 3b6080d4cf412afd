"""`python -m xmonitor --bootstrap-servers H:P [--config xmonitor.yaml]`: an Xinfra-style probe of a Kafka cluster."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from common import client_properties
from xmonitor import config as configmod


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-servers", "--bootstrap-server", dest="bootstrap_servers", metavar="HOST:PORT",
                   help="the cluster to probe (overrides bootstrap.servers in the config)")
    p.add_argument("--config", metavar="FILE", help="YAML config with Xinfra's keys (see README)")
    p.add_argument("--topic", help="monitor topic (topic)")
    p.add_argument("--cluster-name", dest="cluster_name", help="cluster label (cluster.name)")
    p.add_argument("--prometheus-listener", dest="prometheus_listener", metavar="HOST:PORT",
                   help="serve /metrics here, e.g. 127.0.0.1:9412 (prometheus.listener)")
    p.add_argument("--web.config.file", "--web-config-file", dest="web_config_file", metavar="FILE",
                   help="TLS and basic auth for /metrics, in the Prometheus exporter-toolkit web-config format "
                        "(web.config.file)")
    p.add_argument("--command-config", dest="command_config", metavar="FILE",
                   help="client properties file as for Kafka's tools (security.protocol, sasl.*, ssl.*; Java or "
                        "librdkafka names), applied over client.props")
    p.add_argument("--sli-dir", dest="sli_dir", metavar="DIR", help="write SLI interval files here (sli.dir)")
    p.add_argument("--log-level", default="INFO")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = configmod.load(args.config, bootstrap_servers=args.bootstrap_servers, topic=args.topic,
                             cluster_name=args.cluster_name, prometheus_listener=args.prometheus_listener,
                             sli_dir=args.sli_dir, web_config_file=args.web_config_file)
        cfg.client_props.update(client_properties.load(args.command_config))
    except (configmod.ConfigError, client_properties.ClientPropertiesError) as e:
        print(f"xmonitor: error: {e}", file=sys.stderr)
        return 2
    from xmonitor.app import XMonitor

    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    monitor = XMonitor(cfg)
    try:
        monitor.start()
    except RuntimeError as e:
        print(f"xmonitor: error: {e}", file=sys.stderr)
        monitor.stop()
        return 1
    if monitor.port is not None:
        print(f"xmonitor: run {monitor.run_id}: /metrics on port {monitor.port}", flush=True)
    try:
        while not done.wait(1.0):
            pass
    finally:
        monitor.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="xmonitor", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
