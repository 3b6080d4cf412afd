"""`kafkascope topics`: create, list, describe, alter and delete topics, like kafka-topics.sh."""

from __future__ import annotations

import argparse

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic, ResourceType

from kafkascope.cli import common as client
from kafkascope.cli.common import CliError, UsageError

ACTIONS = ("create", "list", "describe", "alter", "delete")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("topics", help="manage topics (kafka-topics.sh)")
    client.add_connection_args(p)
    actions = p.add_mutually_exclusive_group(required=True)
    for action in ACTIONS:
        actions.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topic")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--config", action="append", metavar="KEY=VALUE", help="topic config for --create")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    if action in ("create", "alter", "delete") and not args.topic:
        raise UsageError(f"--{action} needs --topic")
    if action == "alter" and args.partitions is None:
        raise UsageError("--alter needs --partitions")
    admin = client.admin(args)
    globals()[f"_{action}"](admin, args)
    return 0


def _fail(err: KafkaError, topic: str) -> None:
    messages = {
        KafkaError.TOPIC_ALREADY_EXISTS: f"Topic '{topic}' already exists.",
        KafkaError.UNKNOWN_TOPIC_OR_PART: f"Topic '{topic}' does not exist as expected",
    }
    raise CliError(messages.get(err.code(), err.str()))


def _await(futures: dict, topic: str, tolerated: int | None) -> bool:
    """Wait for a per-topic admin future; False when it failed with the `tolerated` error code."""
    try:
        client.result(futures[topic])
    except KafkaException as e:
        err = e.args[0]
        if err.code() == tolerated:
            return False
        _fail(err, topic)
    return True


def _create(admin, args: argparse.Namespace) -> None:
    new = NewTopic(args.topic, num_partitions=args.partitions or -1,
                   replication_factor=args.replication_factor or -1,
                   config=client.parse_assignments(args.config, "config"))
    tolerated = KafkaError.TOPIC_ALREADY_EXISTS if args.if_not_exists else None
    if _await(admin.create_topics([new], request_timeout=client.TIMEOUT_S), args.topic, tolerated):
        print(f"Created topic {args.topic}.")


def _delete(admin, args: argparse.Namespace) -> None:
    tolerated = KafkaError.UNKNOWN_TOPIC_OR_PART if args.if_exists else None
    _await(admin.delete_topics([args.topic], request_timeout=client.TIMEOUT_S), args.topic, tolerated)


def _alter(admin, args: argparse.Namespace) -> None:
    tolerated = KafkaError.UNKNOWN_TOPIC_OR_PART if args.if_exists else None
    futures = admin.create_partitions([NewPartitions(args.topic, args.partitions)],
                                      request_timeout=client.TIMEOUT_S)
    _await(futures, args.topic, tolerated)


def _topic_names(admin, exclude_internal: bool) -> list[str]:
    topics = admin.list_topics(timeout=client.TIMEOUT_S).topics
    return sorted(t for t in topics if not (exclude_internal and t.startswith("__")))


def _list(admin, args: argparse.Namespace) -> None:
    for name in _topic_names(admin, args.exclude_internal):
        print(name)


def _describe(admin, args: argparse.Namespace) -> None:
    names = [args.topic] if args.topic else _topic_names(admin, args.exclude_internal)
    if not names:
        return
    described = admin.describe_topics(TopicCollection(names), request_timeout=client.TIMEOUT_S)
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names],
                                     request_timeout=client.TIMEOUT_S)
    configs = {res.name: fut for res, fut in configs.items()}
    for name in names:
        try:
            desc = client.result(described[name])
        except KafkaException as e:
            if args.if_exists and e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            _fail(e.args[0], name)
        entries = client.result(configs[name]).values()
        # Like Kafka: show what is not the built-in default (topic overrides, broker static configs).
        overrides = ",".join(f"{e.name}={e.value}" for e in sorted(entries, key=lambda e: e.name)
                             if not e.is_default)
        partitions = sorted(desc.partitions, key=lambda p: p.id)
        rf = len(partitions[0].replicas) if partitions else 0
        print(f"Topic: {name}\tTopicId: {_kafka_uuid(desc.topic_id)}\tPartitionCount: {len(partitions)}\t"
              f"ReplicationFactor: {rf}\tConfigs: {overrides}")
        for p in partitions:
            leader = p.leader.id if p.leader is not None else "none"
            print(f"\tTopic: {name}\tPartition: {p.id}\tLeader: {leader}\t"
                  f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}")


def _kafka_uuid(topic_id) -> str:
    """Kafka prints topic ids in URL-safe base64; the client's str() uses the standard alphabet."""
    return str(topic_id).translate(str.maketrans("+/", "-_"))


def _ids(nodes) -> str:
    return ",".join(str(n.id) for n in nodes)
