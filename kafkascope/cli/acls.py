"""`kafkascope acls`: add, list and remove ACLs, like kafka-acls.sh (kafka.admin.AclCommand).

The flags mean what they mean to kafka-acls (broker/security/acl_command.py); the requests are CreateAcls,
DescribeAcls and DeleteAcls through confluent-kafka's AdminClient, and the output is kafka-acls' own:
"Adding ACLs for resource `ResourcePattern(...)`:" and "Current ACLs for resource `ResourcePattern(...)`:".
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import admin as ck

from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from broker.security.acl_command import AclCommandError, AclCommandOptions, bindings_to_add, filters_for
from kafkascope.cli import common as client
from kafkascope.cli.common import UsageError

NL = "\n"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acls", help="add, list and remove ACLs (kafka-acls.sh)")
    client.add_connection_args(p)
    actions = p.add_mutually_exclusive_group(required=True)
    for flag in ("--add", "--remove", "--list"):
        actions.add_argument(flag, action="store_true")
    many = {"action": "append", "default": []}
    p.add_argument("--topic", dest="topics", metavar="TOPIC", **many)
    p.add_argument("--group", dest="groups", metavar="GROUP", **many)
    p.add_argument("--transactional-id", dest="transactional_ids", metavar="ID", **many)
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--resource-pattern-type", default="LITERAL",
                   help="LITERAL, PREFIXED; for --list/--remove also ANY, MATCH")
    p.add_argument("--allow-principal", dest="allow_principals", metavar="PRINCIPAL", **many)
    p.add_argument("--deny-principal", dest="deny_principals", metavar="PRINCIPAL", **many)
    p.add_argument("--allow-host", dest="allow_hosts", metavar="HOST", **many)
    p.add_argument("--deny-host", dest="deny_hosts", metavar="HOST", **many)
    p.add_argument("--operation", dest="operations", metavar="OP", **many)
    p.add_argument("--principal", dest="principals", metavar="PRINCIPAL", **many, help="with --list")
    p.add_argument("--producer", action="store_true")
    p.add_argument("--consumer", action="store_true")
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--force", action="store_true", help="do not ask before removing")
    p.set_defaults(run=run)


def options(args: argparse.Namespace) -> AclCommandOptions:
    return AclCommandOptions(
        topics=args.topics, groups=args.groups, cluster=args.cluster, transactional_ids=args.transactional_ids,
        resource_pattern_type=args.resource_pattern_type, allow_principals=args.allow_principals,
        deny_principals=args.deny_principals, allow_hosts=args.allow_hosts, deny_hosts=args.deny_hosts,
        operations=args.operations, producer=args.producer, consumer=args.consumer, idempotent=args.idempotent,
        principals=args.principals)


def run(args: argparse.Namespace) -> int:
    opts = options(args)
    try:
        to_add = bindings_to_add(opts) if args.add else []
        filters = [] if args.add else filters_for(opts, listing=args.list)
    except (AclCommandError, ValueError) as e:
        raise UsageError(str(e)) from None
    admin = client.admin(args)
    if args.add:
        for pattern, entries in _by_pattern(to_add).items():
            print(f"Adding ACLs for resource `{pattern_text(pattern)}`: {NL} "
                  f"{NL.join(chr(9) + entry_text(e) for e in entries)} {NL}")
        for fut in admin.create_acls([to_ck(b) for b in to_add]).values():
            client.result(fut)
        _list(admin, _resources_of(to_add))
    elif args.remove:
        _remove(admin, filters, args.force)
    elif opts.principals:   # kafka-acls: one block per principal
        for principal in opts.principals:
            print(f"ACLs for principal `{principal}`")
            _list(admin, filters_for(AclCommandOptions(**{**vars(opts), "principals": [principal]}), True))
    else:
        _list(admin, filters)
    return 0


def _remove(admin: ck.AdminClient, filters: list[AclBindingFilter], force: bool) -> None:
    for f in filters:
        question = (f"Are you sure you want to delete all ACLs for resource filter `{filter_text(f.pattern_filter)}`?"
                    " (y/n)")
        if not force and not _confirm(question):
            continue
        futures = admin.delete_acls([filter_to_ck(f)])
        for fut in futures.values():
            client.result(fut)
    _list(admin, [AclBindingFilter(p.pattern_filter) for p in filters])


def _confirm(question: str) -> bool:
    print(question)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _list(admin: ck.AdminClient, filters: list[AclBindingFilter]) -> None:
    """kafka-acls --list: the ACLs of each resource the filters match, grouped by resource pattern."""
    found: list[AclBinding] = []
    for f in filters:
        found += [from_ck(b) for b in client.result(admin.describe_acls(filter_to_ck(f)))]
    for pattern, entries in _by_pattern(found).items():
        print(f"Current ACLs for resource `{pattern_text(pattern)}`: {NL} "
              f"{NL.join(chr(9) + entry_text(e) for e in entries)} {NL}")


def _by_pattern(bindings: list[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        if b.entry not in out.setdefault(b.pattern, []):
            out[b.pattern].append(b.entry)
    return out


def _resources_of(bindings: list[AclBinding]) -> list[AclBindingFilter]:
    """After --add, kafka-acls lists the resources it added to (exactly those patterns)."""
    patterns = dict.fromkeys(b.pattern for b in bindings)
    return [AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type)) for p in patterns]


# ------------------------------------------------------------ Kafka's toString()s

def pattern_text(p: ResourcePattern) -> str:
    return f"ResourcePattern(resourceType={p.resource_type.name}, name={p.name}, patternType={p.pattern_type.name})"


def filter_text(p: ResourcePatternFilter) -> str:
    name = "<any>" if p.name is None else p.name
    return f"ResourcePattern(resourceType={p.resource_type.name}, name={name}, patternType={p.pattern_type.name})"


def entry_text(e: AccessControlEntry) -> str:
    return (f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
            f"permissionType={e.permission_type.name})")


# ------------------------------------------------------------ confluent-kafka's classes (same wire codes)

def to_ck(b: AclBinding) -> ck.AclBinding:
    p, e = b.pattern, b.entry
    return ck.AclBinding(p.resource_type.code, p.name, p.pattern_type.code, e.principal, e.host,
                         e.operation.code, e.permission_type.code)


def filter_to_ck(f: AclBindingFilter) -> ck.AclBindingFilter:
    p, e = f.pattern_filter, f.entry_filter
    return ck.AclBindingFilter(p.resource_type.code, p.name, p.pattern_type.code, e.principal, e.host,
                               e.operation.code, e.permission_type.code)


def from_ck(b: ck.AclBinding) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(b.restype.value), b.name,
                        PatternType.from_code(b.resource_pattern_type.value)),
        AccessControlEntry(b.principal, b.host, AclOperation.from_code(b.operation.value),
                           AclPermissionType.from_code(b.permission_type.value)))
