"""Shared client plumbing for the tools: connection options, client construction, one-line errors."""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import logging
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from common import client_properties

# Upper bound for any single round trip to the cluster, so a dead broker fails fast and clearly.
TIMEOUT_S = 10.0

# librdkafka logs connection failures to stderr on its own; the tools report errors themselves.
_QUIET = logging.getLogger("kafkascope.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class CliError(Exception):
    """A runtime failure: printed as one line on stderr, exit status 1."""

    exit_code = 1


class UsageError(CliError):
    """Options that parse but do not make sense together: exit status 2, like argparse."""

    exit_code = 2


def error_text(e: KafkaException | KafkaError) -> str:
    err = e.args[0] if isinstance(e, KafkaException) and e.args else e
    return err.str() if isinstance(err, KafkaError) else str(err)


def add_connection_args(p: argparse.ArgumentParser, *config_aliases: str) -> None:
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT",
                   help="the Kafka cluster to connect to")
    p.add_argument("--command-config", *config_aliases, dest="command_config", metavar="FILE",
                   help="client properties file, as for Kafka's tools (Java or librdkafka property names)")


def read_properties(path: str | None) -> dict[str, str]:
    """librdkafka settings from a Kafka client properties file (Java or librdkafka names; common/client_properties)."""
    try:
        return client_properties.load(path)
    except client_properties.ClientPropertiesError as e:
        raise CliError(str(e)) from None


def parse_assignments(items: Iterable[str] | None, what: str = "property") -> dict[str, str]:
    """`["k=v", ...]` from repeatable options into a dict."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"invalid {what} '{item}': expected KEY=VALUE")
        out[key.strip()] = value
    return out


class _AuthErrors:
    """librdkafka's error_cb: a failed SASL/TLS handshake reaches the application only there (the request itself
    just times out as a transport failure), so the tools keep it to name the real cause."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None

    def __call__(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            self.last = err


def client_config(args: argparse.Namespace, props: dict[str, str] | None = None,
                  defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Precedence, lowest first: tool defaults, --command-config file, command-line properties."""
    return {"error_cb": _AuthErrors(), **(defaults or {}), **read_properties(args.command_config), **(props or {}),
            "bootstrap.servers": args.bootstrap_server, "logger": _QUIET}


def probe(client: AdminClient | Producer | Consumer, bootstrap: str, conf: dict[str, Any] | None = None) -> None:
    """Fail within TIMEOUT_S with a clear message when the cluster cannot be reached (naming a failed
    authentication or TLS handshake when that is why)."""
    try:
        client.list_topics(timeout=TIMEOUT_S)
    except KafkaException as e:
        client.poll(0)   # callbacks run only from poll: serve the pending error_cb calls
        errors = (conf or {}).get("error_cb")
        cause = errors.last if isinstance(errors, _AuthErrors) and errors.last is not None else e
        raise CliError(f"cannot reach Kafka at {bootstrap}: {error_text(cause)}") from None


def admin(args: argparse.Namespace) -> AdminClient:
    conf = client_config(args)
    client = AdminClient(conf)
    probe(client, args.bootstrap_server, conf)
    return client


def producer(args: argparse.Namespace, props: dict[str, str] | None = None,
             defaults: dict[str, Any] | None = None) -> Producer:
    conf = client_config(args, props, defaults)
    client = Producer(conf)
    probe(client, args.bootstrap_server, conf)
    return client


def consumer(args: argparse.Namespace, props: dict[str, str] | None = None,
             defaults: dict[str, Any] | None = None) -> Consumer:
    conf = client_config(args, props, defaults)
    client = Consumer(conf)
    try:
        probe(client, args.bootstrap_server, conf)
    except CliError:
        client.close()
        raise
    return client


def produce(producer: Producer, topic: str, value: bytes | None, key: bytes | None = None,
            headers: list | None = None, on_delivery=None) -> None:
    """Producer.produce that waits for room when the local queue is full instead of failing."""
    while True:
        try:
            producer.produce(topic, value, key, headers=headers or None, on_delivery=on_delivery)
            producer.poll(0)
            return
        except BufferError:  # serve delivery reports, which frees queue space, then retry
            producer.poll(0.05)


def result(future: concurrent.futures.Future) -> Any:
    """The result of an admin future, bounded in time; KafkaException propagates to the CLI."""
    try:
        return future.result(timeout=3 * TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        raise CliError(f"no answer from the cluster within {3 * TIMEOUT_S:g} s") from None


def time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    t = datetime.datetime.fromisoformat(text)
    return int((t if t.tzinfo else t.replace(tzinfo=datetime.UTC)).timestamp() * 1000)


class SubParser(argparse.ArgumentParser):
    """argparse with a one-line usage error instead of the usage dump."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
