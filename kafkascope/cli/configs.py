"""`kafkascope configs`: describe and alter topic and broker configs, like kafka-configs.sh."""

from __future__ import annotations

import argparse

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

from kafkascope.cli import common as client
from kafkascope.cli.common import UsageError

ENTITY_TYPES = {"topics": (ResourceType.TOPIC, "topic"), "brokers": (ResourceType.BROKER, "broker")}
# Without --all Kafka shows only the dynamic overrides of the entity.
DYNAMIC_SOURCE = {"topics": ConfigSource.DYNAMIC_TOPIC_CONFIG, "brokers": ConfigSource.DYNAMIC_BROKER_CONFIG}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("configs", help="describe and alter configs (kafka-configs.sh)")
    client.add_connection_args(p)
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--describe", action="store_true")
    actions.add_argument("--alter", action="store_true")
    p.add_argument("--entity-type", choices=sorted([*ENTITY_TYPES, "users"]))
    p.add_argument("--entity-name")
    p.add_argument("--topic", help="same as --entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", help="same as --entity-type brokers --entity-name ID")
    p.add_argument("--all", action="store_true", help="with --describe: every config, not only overrides")
    p.add_argument("--add-config", metavar="K=V,K2=[V1,V2]")
    p.add_argument("--delete-config", metavar="K,K2")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    entity_type, name = _entity(args)
    admin = client.admin(args)
    if entity_type == "users":   # SCRAM credentials (KIP-554)
        from kafkascope.cli import configs_users

        return configs_users.run(admin, name, args, _parse_add_config(args.add_config or ""))
    if args.describe:
        names = [name] if name is not None else _all_names(admin, entity_type)
        for n in names:
            _describe(admin, entity_type, n, args.all)
    else:
        if name is None:
            raise UsageError("--alter needs --entity-name")
        _alter(admin, entity_type, name, args)
    return 0


def _entity(args: argparse.Namespace) -> tuple[str, str | None]:
    if args.topic is not None:
        return "topics", args.topic
    if args.broker is not None:
        return "brokers", args.broker
    if args.entity_type is None:
        raise UsageError("needs --entity-type (or --topic/--broker)")
    return args.entity_type, args.entity_name


def _all_names(admin, entity_type: str) -> list[str]:
    metadata = admin.list_topics(timeout=client.TIMEOUT_S)
    if entity_type == "topics":
        return sorted(metadata.topics)
    return [str(b) for b in sorted(metadata.brokers)]


def _describe(admin, entity_type: str, name: str, show_all: bool) -> None:
    resource_type, label = ENTITY_TYPES[entity_type]
    resource = ConfigResource(resource_type, name)
    entries = client.result(admin.describe_configs([resource], request_timeout=client.TIMEOUT_S)[resource])
    shown = [e for e in entries.values() if show_all or e.source == DYNAMIC_SOURCE[entity_type].value]
    print(f"{'All' if show_all else 'Dynamic'} configs for {label} {name} are:")
    for e in sorted(shown, key=lambda e: e.name):
        synonyms = ", ".join(f"{ConfigSource(s.source).name}:{s.name}={_value(s)}" for s in e.synonyms.values())
        print(f"  {e.name}={_value(e)} sensitive={str(e.is_sensitive).lower()} synonyms={{{synonyms}}}")


def _value(entry: ConfigEntry) -> str:
    return "null" if entry.is_sensitive or entry.value is None else entry.value


def _alter(admin, entity_type: str, name: str, args: argparse.Namespace) -> None:
    if not (args.add_config or args.delete_config):
        raise UsageError("--alter needs --add-config and/or --delete-config")
    resource_type, label = ENTITY_TYPES[entity_type]
    ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
           for k, v in _parse_add_config(args.add_config or "").items()]
    ops += [ConfigEntry(k.strip(), None, incremental_operation=AlterConfigOpType.DELETE)
            for k in (args.delete_config or "").split(",") if k.strip()]
    resource = ConfigResource(resource_type, name, incremental_configs=ops)
    client.result(admin.incremental_alter_configs([resource], request_timeout=client.TIMEOUT_S)[resource])
    print(f"Completed updating config for {label} {name}.")


def _parse_add_config(text: str) -> dict[str, str]:
    """`k=v,k2=[a,b]`: commas split pairs except inside brackets, which hold list values (Kafka's syntax)."""
    pairs, depth, current = [], 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            pairs.append(current)
            current = ""
        else:
            current += ch
    pairs.append(current)
    values = client.parse_assignments((p for p in pairs if p.strip()), "config")
    return {k: v[1:-1] if v.startswith("[") and v.endswith("]") else v for k, v in values.items()}
