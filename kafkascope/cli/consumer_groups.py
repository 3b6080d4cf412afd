"""`kafkascope consumer-groups`: list, describe, reset offsets and delete groups, like kafka-consumer-groups.sh."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError, UsageError

ACTIONS = ("list", "describe", "reset_offsets", "delete")
SCENARIOS = ("to_earliest", "to_latest", "to_offset", "shift_by", "to_datetime")
# Kafka's names for the group states.
STATE_NAMES = {
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.UNKNOWN: "Unknown",
}
# KIP-848 group types as kafka-consumer-groups.sh --type prints them.
TYPE_NAMES = {ConsumerGroupType.CONSUMER: "Consumer", ConsumerGroupType.CLASSIC: "Classic",
              ConsumerGroupType.UNKNOWN: "Unknown"}
MISSING = "-"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consumer-groups", help="inspect and manage consumer groups (kafka-consumer-groups.sh)")
    client.add_connection_args(p)
    actions = p.add_mutually_exclusive_group(required=True)
    for action in ACTIONS:
        actions.add_argument(f"--{action.replace('_', '-')}", action="store_true")
    p.add_argument("--group")
    # Kafka's --state / --type: with --list, show (and, given values, filter by) the state / the group type
    # (classic or consumer, KIP-848); with --describe, --state prints the group's state line.
    p.add_argument("--state", nargs="*", metavar="STATE")
    p.add_argument("--type", nargs="*", metavar="TYPE")
    topics = p.add_mutually_exclusive_group()
    topics.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]")
    topics.add_argument("--all-topics", action="store_true")
    scenario = p.add_mutually_exclusive_group()
    scenario.add_argument("--to-earliest", action="store_true")
    scenario.add_argument("--to-latest", action="store_true")
    scenario.add_argument("--to-offset", type=int)
    scenario.add_argument("--shift-by", type=int)
    scenario.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true")
    mode.add_argument("--execute", action="store_true")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    if action != "list" and not args.group:
        raise UsageError(f"--{action.replace('_', '-')} needs --group")
    if action == "reset_offsets":
        if not (args.topic or args.all_topics):
            raise UsageError("--reset-offsets needs --topic or --all-topics")
        if not any(getattr(args, s) not in (None, False) for s in SCENARIOS):
            raise UsageError("--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, "
                             "--shift-by, --to-datetime")
    admin = client.admin(args)
    globals()[f"_{action}"](admin, args)
    return 0


def _list(admin, args: argparse.Namespace) -> None:
    listing = client.result(admin.list_consumer_groups(request_timeout=client.TIMEOUT_S))
    groups = sorted(listing.valid, key=lambda g: g.group_id)
    if args.state is None and args.type is None:
        for g in groups:
            print(g.group_id)
        return
    states = {s.lower() for s in args.state or ()}
    types = {t.lower() for t in args.type or ()}
    unknown = types - {"classic", "consumer"}
    if unknown:
        raise UsageError(f"unknown group type {sorted(unknown)[0]!r}: the types are classic and consumer")
    rows = []
    for g in groups:
        state, kind = STATE_NAMES.get(g.state, "Unknown"), TYPE_NAMES.get(g.type, "Unknown")
        if (states and state.lower() not in states) or (types and kind.lower() not in types):
            continue
        rows.append([g.group_id] + ([kind] if args.type is not None else []) + ([state] if args.state is not None
                                                                                else []))
    _print_table(["GROUP"] + (["TYPE"] if args.type is not None else []) + (["STATE"] if args.state is not None
                                                                            else []), rows)


def _group(admin, group: str):
    return client.result(admin.describe_consumer_groups([group], request_timeout=client.TIMEOUT_S)[group])


def _committed(admin, group: str) -> dict[TopicPartition, int]:
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=client.TIMEOUT_S)
    tps = client.result(futures[group]).topic_partitions or []
    return {TopicPartition(tp.topic, tp.partition): tp.offset for tp in tps if tp.offset >= 0}


def _list_offsets(admin, specs: dict[TopicPartition, OffsetSpec]) -> dict[TopicPartition, int]:
    if not specs:
        return {}
    futures = admin.list_offsets(specs, request_timeout=client.TIMEOUT_S)
    return {TopicPartition(tp.topic, tp.partition): client.result(f).offset for tp, f in futures.items()}


def _describe(admin, args: argparse.Namespace) -> None:
    desc = _group(admin, args.group)
    if args.state is not None:
        if desc.state in (ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN) and not desc.members:
            raise CliError(f"Consumer group '{args.group}' does not exist.")
        coordinator = f"{desc.coordinator.host}:{desc.coordinator.port} ({desc.coordinator.id})"
        _print_table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "TYPE", "#MEMBERS"],
                     [[args.group, coordinator, desc.partition_assignor or "", STATE_NAMES.get(desc.state, "Unknown"),
                       TYPE_NAMES.get(desc.type, "Unknown"), len(desc.members)]])
        return
    committed = _committed(admin, args.group)
    if desc.state in (ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN) and not committed:
        raise CliError(f"Consumer group '{args.group}' does not exist.")
    owners = {}
    idle_members = []
    for m in desc.members:
        tps = m.assignment.topic_partitions if m.assignment else []
        owners.update({TopicPartition(tp.topic, tp.partition): m for tp in tps})
        if not tps:
            idle_members.append(m)
    partitions = sorted(set(committed) | set(owners), key=lambda tp: (tp.topic, tp.partition))
    ends = _list_offsets(admin, {tp: OffsetSpec.latest() for tp in partitions})
    rows = []
    for tp in partitions:
        member, current, end = owners.get(tp), committed.get(tp), ends.get(tp)
        lag = end - current if current is not None and end is not None else None
        rows.append([args.group, tp.topic, tp.partition, current, end, lag, *_member_columns(member)])
    rows += [[args.group, MISSING, MISSING, MISSING, MISSING, MISSING, *_member_columns(m)]
             for m in idle_members]
    if not desc.members:
        print(f"\nConsumer group '{args.group}' has no active members.")
    _print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)


def _member_columns(member) -> list:
    return [member.member_id, member.host, member.client_id] if member else [None, None, None]


def _print_table(header: list[str], rows: list[list]) -> None:
    """Kafka's layout: every column left-aligned and at least 15 wide (PARTITION 10), the last unpadded."""
    cells = [[MISSING if v is None else str(v) for v in row] for row in rows]
    minimum = [10 if h == "PARTITION" else 15 for h in header]
    widths = [max([minimum[i], len(header[i])] + [len(r[i]) for r in cells]) for i in range(len(header) - 1)]

    def line(values: list[str]) -> str:
        return " ".join(v.ljust(w) for v, w in zip(values, widths, strict=False)) + " " + values[-1]

    print()
    for values in [header, *cells]:
        print(line(values))
    print()


def _require_inactive(desc, group: str) -> None:
    if desc.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN):
        raise CliError(f"Assignments can only be reset if the group '{group}' is inactive, "
                       f"but the current state is {STATE_NAMES[desc.state]}.")


def _partitions_to_reset(admin, args: argparse.Namespace, committed: dict[TopicPartition, int]) -> list:
    if args.all_topics:
        return sorted(committed, key=lambda tp: (tp.topic, tp.partition))
    metadata = admin.list_topics(timeout=client.TIMEOUT_S).topics
    out = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        if topic not in metadata or metadata[topic].error is not None:
            raise CliError(f"Topic '{topic}' does not exist")
        try:
            ids = [int(p) for p in parts.split(",")] if parts else sorted(metadata[topic].partitions)
        except ValueError:
            raise UsageError(f"invalid --topic '{spec}': expected TOPIC or TOPIC:P,P...") from None
        out += [TopicPartition(topic, p) for p in ids]
    return out


def _new_offsets(admin, args: argparse.Namespace, tps: list, committed: dict) -> dict[TopicPartition, int]:
    earliest = _list_offsets(admin, {tp: OffsetSpec.earliest() for tp in tps})
    latest = _list_offsets(admin, {tp: OffsetSpec.latest() for tp in tps})
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_datetime:
        found = _list_offsets(admin, {tp: OffsetSpec.for_timestamp(_parse_datetime(args.to_datetime))
                                      for tp in tps})
        # Like Kafka: no record at or after the time means the log end.
        return {tp: off if off >= 0 else latest[tp] for tp, off in found.items()}
    if args.to_offset is not None:
        wanted = dict.fromkeys(tps, args.to_offset)
    else:
        missing = [tp for tp in tps if tp not in committed]
        if missing:
            raise CliError(f"Cannot shift offset for partition {missing[0].topic}-{missing[0].partition} "
                           f"since there is no current committed offset")
        wanted = {tp: committed[tp] + args.shift_by for tp in tps}
    # Kafka clamps requested offsets into the log's range.
    return {tp: min(max(off, earliest[tp]), latest[tp]) for tp, off in wanted.items()}


def _parse_datetime(text: str) -> int:
    """Kafka's format, YYYY-MM-DDTHH:mm:SS.sss with an optional zone (Z, +hh:mm); local time without one."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"invalid --to-datetime '{text}': expected YYYY-MM-DDTHH:mm:SS.sss") from None
    return int((when if when.tzinfo else when.astimezone()).timestamp() * 1000)


def _reset_offsets(admin, args: argparse.Namespace) -> None:
    _require_inactive(_group(admin, args.group), args.group)
    committed = _committed(admin, args.group)
    tps = _partitions_to_reset(admin, args, committed)
    new = _new_offsets(admin, args, tps, committed)
    if args.execute:
        request = ConsumerGroupTopicPartitions(
            args.group, [TopicPartition(tp.topic, tp.partition, off) for tp, off in new.items()])
        futures = admin.alter_consumer_group_offsets([request], request_timeout=client.TIMEOUT_S)
        client.result(futures[args.group])
    elif not args.dry_run:
        print("WARN: No action will be performed as the --execute option is missing. "
              "Add --dry-run to keep this behaviour explicitly.", file=sys.stderr)
    fmt = "%-30s %-30s %-10s %-15s"
    print("\n" + fmt % ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
    for tp, off in sorted(new.items(), key=lambda item: (item[0].topic, item[0].partition)):
        print(fmt % (args.group, tp.topic, tp.partition, off))
    print()


def _delete(admin, args: argparse.Namespace) -> None:
    futures = admin.delete_consumer_groups([args.group], request_timeout=client.TIMEOUT_S)
    try:
        client.result(futures[args.group])
    except KafkaException as e:
        raise CliError(f"Deletion of consumer group '{args.group}' failed: {client.error_text(e)}") from None
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
