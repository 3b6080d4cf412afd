"""`kafkascope console-consumer`: print records like Kafka's console consumer and DefaultMessageFormatter."""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    Message,
    TopicPartition,
)

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError, UsageError

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console-consumer", help="print records (kafka-console-consumer.sh)")
    client.add_connection_args(p, "--consumer.config")
    p.add_argument("--topic", required=True)
    p.add_argument("--group")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--partition", type=int)
    p.add_argument("--offset", help="N, earliest or latest (needs --partition)")
    p.add_argument("--max-messages", type=int)
    p.add_argument("--timeout-ms", type=int, help="exit when no record arrived for this long")
    p.add_argument("--property", action="append", metavar="KEY=VALUE",
                   help="print.key, print.timestamp, print.headers, print.partition, print.offset, "
                        "print.value, key.separator, line.separator, headers.separator, "
                        "headers.key.separator, null.literal")
    p.add_argument("--consumer-property", action="append", metavar="KEY=VALUE")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS,
                   help="read_committed: only records of committed transactions, up to the Last Stable Offset "
                        "(KIP-98); read_uncommitted: everything (the default, as in kafka-console-consumer.sh)")
    p.set_defaults(run=run)


@dataclass
class Formatter:
    """Kafka's DefaultMessageFormatter: the enabled columns in its fixed order, key.separator between."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> Formatter:
        def flag(name: str, default: bool = False) -> bool:
            return props.get(name, str(default)).lower() == "true"

        def text(name: str, default: bytes) -> bytes:
            return props[name].encode() if name in props else default

        return cls(flag("print.timestamp"), flag("print.partition"), flag("print.offset"),
                   flag("print.headers"), flag("print.key"), flag("print.value", True),
                   text("key.separator", b"\t"), text("line.separator", b"\n"),
                   text("headers.separator", b","), text("headers.key.separator", b":"),
                   text("null.literal", b"null"))

    def format(self, msg: Message) -> bytes:
        columns = []
        if self.print_timestamp:
            ts_type, ts = msg.timestamp()
            columns.append(f"{TIMESTAMP_TYPES[ts_type]}:{ts}".encode() if ts_type in TIMESTAMP_TYPES
                           else b"NO_TIMESTAMP")
        if self.print_partition:
            columns.append(f"Partition:{msg.partition()}".encode())
        if self.print_offset:
            columns.append(f"Offset:{msg.offset()}".encode())
        if self.print_headers:
            headers = msg.headers() or []
            columns.append(self.headers_separator.join(
                k.encode() + self.headers_key_separator + self._bytes(v) for k, v in headers)
                if headers else b"NO_HEADERS")
        if self.print_key:
            columns.append(self._bytes(msg.key()))
        if self.print_value:
            columns.append(self._bytes(msg.value()))
        return self.key_separator.join(columns) + self.line_separator

    def _bytes(self, field: bytes | None) -> bytes:
        return self.null_literal if field is None else field


def run(args: argparse.Namespace) -> int:
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    formatter = Formatter.from_properties(client.parse_assignments(args.property))
    # Like Kafka: without --group, a throwaway group that commits nothing.
    defaults = {"group.id": args.group or f"console-consumer-{random.randrange(100000)}",
                "enable.auto.commit": args.group is not None,
                "auto.offset.reset": "earliest" if args.from_beginning else "latest",
                # Kafka's console consumer reads uncommitted by default; librdkafka's default is read_committed
                "isolation.level": "read_uncommitted"}
    props = client.parse_assignments(args.consumer_property, "consumer property")
    if args.isolation_level is not None:   # the flag wins over --consumer-property and the config file
        props["isolation.level"] = args.isolation_level
    consumer = client.consumer(args, props, defaults)
    count = 0
    try:
        if args.partition is None:
            consumer.subscribe([args.topic])
        else:
            consumer.assign([TopicPartition(args.topic, args.partition, _start_offset(args))])
        count = _consume(consumer, formatter, args)
    finally:
        consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def _start_offset(args: argparse.Namespace) -> int:
    offset = args.offset or ("earliest" if args.from_beginning else "latest")
    named = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}
    if offset in named:
        return named[offset]
    try:
        return int(offset)
    except ValueError:
        raise UsageError(f"invalid --offset '{offset}': expected a number, earliest or latest") from None


def _consume(consumer, formatter: Formatter, args: argparse.Namespace) -> int:
    out = sys.stdout.buffer
    idle_limit = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    count, last = 0, time.monotonic()
    try:
        while args.max_messages is None or count < args.max_messages:
            wait = 0.5 if idle_limit is None else max(0.0, min(0.5, last + idle_limit - time.monotonic()))
            msg = consumer.poll(wait)
            if msg is None:
                out.flush()
                if idle_limit is not None and time.monotonic() - last >= idle_limit:
                    break
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise CliError(msg.error().str())
            out.write(formatter.format(msg))
            count += 1
            last = time.monotonic()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a console consumer normally ends
    finally:
        out.flush()
    return count
