"""`kafkascope console-producer`: stdin lines to a topic, parsed like Kafka 3.x's LineMessageReader."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console-producer", help="produce stdin lines (kafka-console-producer.sh)")
    client.add_connection_args(p, "--producer.config")
    p.add_argument("--topic", required=True)
    p.add_argument("--property", action="append", metavar="KEY=VALUE",
                   help="line parsing: parse.key, key.separator, parse.headers, headers.delimiter, "
                        "headers.separator, headers.key.separator, null.marker, ignore.error")
    p.add_argument("--producer-property", action="append", metavar="KEY=VALUE")
    p.set_defaults(run=run)


@dataclass
class LineReader:
    """Splits a line into (headers, key, value) with Kafka's property names and defaults."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> LineReader:
        def flag(name: str) -> bool:
            return props.get(name, "false").lower() == "true"

        def sep(name: str, default: bytes) -> bytes:
            return props[name].encode() if name in props else default

        return cls(flag("parse.key"), sep("key.separator", b"\t"), flag("parse.headers"),
                   sep("headers.delimiter", b"\t"), sep("headers.separator", b","),
                   sep("headers.key.separator", b":"), sep("null.marker", None), flag("ignore.error"))

    def parse(self, line: bytes, lineno: int) -> tuple[list[tuple[str, bytes | None]], bytes | None, bytes | None]:
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            raw, rest = self._split(rest, self.headers_delimiter, "headers delimiter", lineno)
            for item in filter(None, raw.split(self.headers_separator)):
                name, sep, value = item.partition(self.headers_key_separator)
                headers.append((name.decode(), self._null(value) if sep else None))
        key = None
        if self.parse_key:
            key, rest = self._split(rest, self.key_separator, "key separator", lineno)
            key = self._null(key)
        return headers, key, self._null(rest)

    def _split(self, text: bytes, separator: bytes, what: str, lineno: int) -> tuple[bytes, bytes]:
        head, sep, tail = text.partition(separator)
        if sep:
            return head, tail
        if self.ignore_error:
            return b"", text
        raise CliError(f"No {what} found on line number {lineno}: '{text.decode(errors='replace')}'")

    def _null(self, field: bytes) -> bytes | None:
        return None if self.null_marker is not None and field == self.null_marker else field


def run(args: argparse.Namespace) -> int:
    reader = LineReader.from_properties(client.parse_assignments(args.property))
    producer = client.producer(args, client.parse_assignments(args.producer_property, "producer property"))
    failures: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            failures.append(f"Error when sending message to topic {msg.topic()} with key: "
                            f"{len(msg.key() or b'')} bytes, value: {len(msg.value() or b'')} bytes "
                            f"with error: {err.str()}")

    for lineno, raw in enumerate(sys.stdin.buffer, 1):
        headers, key, value = reader.parse(raw.rstrip(b"\r\n"), lineno)
        client.produce(producer, args.topic, value, key, headers, on_delivery)
    # Undelivered records fail by themselves after message.timeout.ms, so this ends.
    while producer.flush(client.TIMEOUT_S):
        pass
    for line in failures:
        print(line, file=sys.stderr)
    if failures:
        raise CliError(f"{len(failures)} record(s) were not delivered")
    return 0

