"""`kafkascope demo`: start a broker, round-trip 1,000 keyed records through a group, show the tools' views."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, Producer

from common.polling import ProcessExited, WaitTimeout, wait_for_port
from kafkascope.cli import common as client
from kafkascope.cli.common import CliError
from kafkascope.local.process import free_port

RECORDS = 1000
STARTUP_TIMEOUT_S = 30.0
CONSUME_TIMEOUT_S = 60.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="end-to-end demo against a throwaway local broker")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="use this running cluster instead of starting our broker")
    p.set_defaults(run=run, command_config=None)


def run(args: argparse.Namespace) -> int:
    if args.bootstrap_server:
        return _demo(args)
    with tempfile.TemporaryDirectory(prefix="kafkascope-demo-") as tmp, _local_broker(Path(tmp)) as bootstrap:
        args.bootstrap_server = bootstrap
        return _demo(args)


@contextmanager
def _local_broker(data_dir: Path):
    """`python -m broker` on a free 127.0.0.1 port; stopped with SIGTERM (then SIGKILL) on exit."""
    port = free_port()
    config = data_dir / "server.properties"
    config.write_text(f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={data_dir / 'logs'}\n"
                      "num.partitions=3\noffsets.topic.num.partitions=5\ngroup.initial.rebalance.delay.ms=0\n")
    log_path = data_dir / "broker.log"
    print(f"Starting broker on 127.0.0.1:{port} (log: {log_path})")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "broker", str(config)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_listening(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        print(f"Broker stopped (exit code {proc.returncode}).")


def _wait_listening(port: int, proc: subprocess.Popen) -> None:
    try:
        wait_for_port("127.0.0.1", port, lambda: proc.poll() is None, STARTUP_TIMEOUT_S, interval_s=0.1)
    except ProcessExited:
        raise CliError(f"the broker exited with code {proc.returncode} during startup") from None
    except WaitTimeout:
        raise CliError(f"the broker did not listen on 127.0.0.1:{port} within {STARTUP_TIMEOUT_S:g} s") from None


def _demo(args: argparse.Namespace) -> int:
    from kafkascope.cli import main  # the demo shows the very commands an SRE would type

    started = time.monotonic()
    bootstrap = args.bootstrap_server
    topic, group = f"demo-{int(time.time())}", "demo-group"

    def tool(*argv: str) -> None:
        print(f"\n$ kafkascope {argv[0]} --bootstrap-server {bootstrap} {' '.join(argv[1:])}", flush=True)
        if main([argv[0], "--bootstrap-server", bootstrap, *argv[1:]]) != 0:
            raise CliError(f"`kafkascope {' '.join(argv)}` failed")

    tool("topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    conf = client.client_config(args)
    producer = Producer({**conf, "acks": "all"})
    for i in range(RECORDS):
        client.produce(producer, topic, f"value-{i}".encode(), f"key-{i % 50}".encode())
    if producer.flush(CONSUME_TIMEOUT_S):
        raise CliError("records were not delivered in time")
    print(f"\nProduced {RECORDS} records with 50 distinct keys to {topic}.")

    consumed = _consume_all(Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                                      "enable.auto.commit": False}), topic)
    print(f"Consumed {consumed} records in group {group} and committed the offsets.")
    tool("consumer-groups", "--describe", "--group", group)
    tool("topics", "--describe", "--topic", topic)
    print(f"\nSummary: {RECORDS} produced, {consumed} consumed, lag {RECORDS - consumed}, "
          f"{time.monotonic() - started:.1f} s against {bootstrap}.")
    return 0 if consumed == RECORDS else 1


def _consume_all(consumer: Consumer, topic: str) -> int:
    count, deadline = 0, time.monotonic() + CONSUME_TIMEOUT_S
    try:
        consumer.subscribe([topic])
        while count < RECORDS and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error():
                    raise CliError(msg.error().str())
                count += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return count
