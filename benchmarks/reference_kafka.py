"""Reference Apache Kafka for benchmarks: thin CLI over kafkascope/local/apache_kafka.py.

python -m benchmarks.reference_kafka fetch [--version V]   # resolve jars (kafkascope/local/apache_kafka_artifacts.txt), print libs dir
    # (make reference-kafka fetches 4.1.1 and 3.9.2; tests needing Apache Kafka fetch lazily)
python -m benchmarks.reference_kafka run [--version V] [--port P] [--log-dir D]
    # start a single-node KRaft broker on 127.0.0.1, print its bootstrap, run until Ctrl-C
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from kafkascope.local.apache_kafka import DEFAULT_VERSION, ApacheKafka, ApacheKafkaError, ensure_kafka


def _parse_prop(s: str) -> tuple[str, str]:
    key, sep, value = s.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {s!r}")
    return key.strip(), value.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.reference_kafka",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    fetch = sub.add_parser("fetch", help="resolve the broker jars from Maven Central and print the libs dir")
    fetch.add_argument("--version", default=DEFAULT_VERSION)
    run = sub.add_parser("run", help="start a broker, print its bootstrap, wait for Ctrl-C")
    run.add_argument("--version", default=DEFAULT_VERSION)
    run.add_argument("--port", type=int, default=None, help="PLAINTEXT port (default: a free one)")
    run.add_argument("--log-dir", default=None, help="Kafka data dir to keep/reuse (default: temp dir)")
    run.add_argument(
        "--prop",
        type=_parse_prop,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra server.properties entry (repeatable)",
    )
    run.add_argument("--startup-timeout", type=float, default=60.0)
    args = ap.parse_args(argv)

    try:
        if args.cmd == "fetch":
            print(ensure_kafka(args.version))
            return 0
        stop = threading.Event()
        with ApacheKafka(
            port=args.port,
            log_dir=args.log_dir,
            extra_props=dict(args.prop),
            version=args.version,
            startup_timeout=args.startup_timeout,
        ) as k:
            print(k.bootstrap, flush=True)
            print(
                f"Apache Kafka {k.version} up in {k.startup_seconds:.1f}s; server log {k.server_log}; "
                "Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            # Installed once up (Ctrl-C during startup raises KeyboardInterrupt, which cleans up).
            # Explicit handlers: SIGINT works even when inherited as ignored (`... run &` in a
            # script), and SIGTERM stops the broker cleanly too.
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: stop.set())
            while not stop.wait(0.5):
                if k.process is None or k.process.poll() is not None:
                    print(f"broker exited unexpectedly:\n{k.log_tail()}", file=sys.stderr)
                    return 1
        return 0
    except ApacheKafkaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
