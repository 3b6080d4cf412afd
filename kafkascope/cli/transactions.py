"""`kafkascope transactions`: kafka-transactions.sh's `list`, `describe` and `describe-producers` (Kafka's
TransactionsCommand), with its flags and its tables.

confluent-kafka 2.16 has no admin call for ListTransactions (API 66), DescribeTransactions (65) or
DescribeProducers (61), so these go as single requests (kafkascope/local/broker_request.py, with the TLS and SASL
of --command-config) to the brokers the cluster metadata names: ListTransactions to every broker (each answers for the transaction coordinators it hosts),
DescribeTransactions to the coordinator FindCoordinator(key type 1) names, DescribeProducers to the partition's
leader.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from confluent_kafka import KafkaError

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError, UsageError
from kafkascope.local import broker_request

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset")
CLIENT_ID = "kafkascope-transactions"
TRANSACTION_KEY = 1   # FindCoordinator key type of a transactional id


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("transactions", help="list and describe transactions and producers (kafka-transactions.sh)")
    client.add_connection_args(p)
    # kafka-transactions.sh spells the action as a subcommand; both spellings are accepted
    p.add_argument("action", nargs="?", choices=("list", "describe", "describe-producers"))
    p.add_argument("--list", dest="flag_action", action="store_const", const="list")
    p.add_argument("--describe", dest="flag_action", action="store_const", const="describe")
    p.add_argument("--describe-producers", dest="flag_action", action="store_const", const="describe-producers")
    p.add_argument("--transactional-id", action="append", help="describe: the transactional id (repeatable)")
    p.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                   help="list: only transactions running longer than this (ms); < 0 lists all")
    p.add_argument("--transactional-id-pattern", metavar="REGEX", help="list: transactional ids matching this")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--broker-id", type=int, help="describe-producers: ask this replica instead of the leader")
    p.set_defaults(run=run)


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Kafka's ToolsUtils.prettyPrintTable: each cell padded to its column's width and followed by a tab."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "".join(c.ljust(w) + "\t" for c, w in zip(cells, widths, strict=True))
    return [line(headers), *(line(r) for r in rows)]


def epoch_ms(value: Any) -> int:
    """kio's timestamp (a datetime, None for -1) or plain int as epoch milliseconds."""
    if value is None:
        return -1
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def duration_ms(value: Any) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)


def describe_row(coordinator: int, state: Any, now_ms: int) -> list[str]:
    """DescribeTransactionsCommand's row: start time and duration print None without a transaction."""
    start = epoch_ms(state.transaction_start_time)
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    return [str(coordinator), state.transactional_id, str(state.producer_id), str(state.producer_epoch),
            state.transaction_state, str(duration_ms(state.transaction_timeout)),
            "None" if start < 0 else str(start), "None" if start < 0 else str(now_ms - start), partitions]


def producer_row(p: Any) -> list[str]:
    """DescribeProducersCommand's row: no open transaction prints None."""
    return [str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch), str(p.last_sequence),
            str(p.last_timestamp), "None" if p.current_txn_start_offset < 0 else str(p.current_txn_start_offset)]


def list_rows(answers: dict[int, Any], pattern: str | None) -> list[list[str]]:
    """ListTransactionsCommand's rows from {broker id: response}, filtered by the id pattern (a full match, as
    Java's Pattern.matches; Kafka 4.1 sends it to the broker, which ours does not take, so it is applied here)."""
    regex = re.compile(pattern) if pattern else None
    return [[t.transactional_id, str(broker), str(t.producer_id), t.transaction_state]
            for broker, resp in sorted(answers.items()) for t in resp.transaction_states
            if regex is None or regex.fullmatch(t.transactional_id)]


def error_message(code: Any) -> str:
    return KafkaError(int(code)).str()


class Brokers:
    """Broker addresses and partition leaders from the cluster metadata (confluent-kafka), and one wire request
    to a chosen broker."""

    def __init__(self, args: argparse.Namespace) -> None:
        try:
            self.security = broker_request.client_security(client.client_config(args))
        except broker_request.UnsupportedSecurity as e:
            raise CliError(f"{e} by `kafkascope transactions`") from None
        self.metadata = client.admin(args).list_topics(timeout=client.TIMEOUT_S)
        self.brokers: dict[int, tuple[str, int]] = {b.id: (str(b.host), int(b.port))
                                                     for b in self.metadata.brokers.values()}

    def call(self, broker: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
        host, port = self.brokers[broker]
        try:
            return broker_request.request_sync(host, port, self.security, api_key, version, body, client.TIMEOUT_S,
                                               CLIENT_ID)
        except (OSError, EOFError, TimeoutError) as e:
            raise CliError(f"broker {broker} at {host}:{port}: {e}") from None

    def leader(self, topic: str, partition: int) -> int:
        md = self.metadata.topics.get(topic)
        if md is None:
            raise CliError(f"Topic {topic} not found")
        if md.error is not None:
            raise CliError(f"Topic {topic}: {client.error_text(md.error)}")
        if partition not in md.partitions:
            raise CliError(f"Partition {partition} of topic {topic} not found")
        return md.partitions[partition].leader


def run_list(b: Brokers, args: argparse.Namespace) -> list[str]:
    answers = {}
    for broker in sorted(b.brokers):
        resp = b.call(broker, 66, 1, {"state_filters": [], "producer_id_filters": [],
                                      "duration_filter": args.duration_filter})
        if int(resp.error_code):
            raise CliError(f"Failed to list transactions on broker {broker}: {error_message(resp.error_code)}")
        answers[broker] = resp
    return pretty_table(LIST_HEADERS, list_rows(answers, args.transactional_id_pattern))


def run_describe(b: Brokers, args: argparse.Namespace, now_ms: Callable[[], int]) -> list[str]:
    if not args.transactional_id:
        raise UsageError("describe needs --transactional-id")
    rows = []
    for tid in args.transactional_id:
        found = b.call(min(b.brokers), 10, 4, {"key_type": TRANSACTION_KEY, "coordinator_keys": [tid]})
        coord = found.coordinators[0]
        if int(coord.error_code):
            raise CliError(f"Failed to describe transaction state of transactional-id `{tid}`: "
                           f"{error_message(coord.error_code)}")
        b.brokers.setdefault(coord.node_id, (coord.host, coord.port))
        state = b.call(coord.node_id, 65, 0, {"transactional_ids": [tid]}).transaction_states[0]
        if int(state.error_code):
            raise CliError(f"Failed to describe transaction state of transactional-id `{tid}`: "
                           f"{error_message(state.error_code)}")
        rows.append(describe_row(coord.node_id, state, now_ms()))
    return pretty_table(DESCRIBE_HEADERS, rows)


def run_describe_producers(b: Brokers, args: argparse.Namespace) -> list[str]:
    if args.topic is None or args.partition is None:
        raise UsageError("describe-producers needs --topic and --partition")
    broker = args.broker_id if args.broker_id is not None else b.leader(args.topic, args.partition)
    if broker not in b.brokers:
        raise CliError(f"Broker {broker} not found")
    resp = b.call(broker, 61, 0, {"topics": [{"name": args.topic, "partition_indexes": [args.partition]}]})
    part = resp.topics[0].partitions[0]
    if int(part.error_code):
        raise CliError(f"Failed to describe producers for partition {args.topic}-{args.partition} on broker "
                       f"{broker}: {part.error_message or error_message(part.error_code)}")
    return pretty_table(PRODUCERS_HEADERS, [producer_row(p) for p in part.active_producers])


def run(args: argparse.Namespace) -> int:
    if args.action and args.flag_action and args.action != args.flag_action:
        raise UsageError(f"both {args.action} and --{args.flag_action} given")
    action = args.action or args.flag_action
    if action is None:
        raise UsageError("one of --list, --describe or --describe-producers is required")
    if args.transactional_id_pattern:
        try:
            re.compile(args.transactional_id_pattern)
        except re.error as e:
            raise UsageError(f"invalid --transactional-id-pattern: {e}") from None
    b = Brokers(args)
    if action == "list":
        lines = run_list(b, args)
    elif action == "describe":
        lines = run_describe(b, args, lambda: int(time.time() * 1000))
    else:
        lines = run_describe_producers(b, args)
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
