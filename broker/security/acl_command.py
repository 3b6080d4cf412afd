"""What kafka-acls.sh (kafka.admin.AclCommand) turns its flags into: the bindings to add, the filters to list
or remove. Argument parsing belongs to the CLI; this is the meaning of the parsed options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    unsupported_operation,
)


class AclCommandError(ValueError):
    """Options kafka-acls refuses (it prints the message and the usage)."""


@dataclass
class AclCommandOptions:
    """The parsed flags; list flags may repeat on the command line."""

    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    cluster: bool = False
    transactional_ids: list[str] = field(default_factory=list)
    delegation_tokens: list[str] = field(default_factory=list)
    user_principals: list[str] = field(default_factory=list)
    resource_pattern_type: str = "LITERAL"
    allow_principals: list[str] = field(default_factory=list)
    deny_principals: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    deny_hosts: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)   # names as typed: Read, describe-configs, All
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    principals: list[str] = field(default_factory=list)   # --principal, for --list


def _pattern_type(opts: AclCommandOptions) -> PatternType:
    pt = PatternType.from_string(opts.resource_pattern_type.replace("-", "_"))
    if pt is PatternType.UNKNOWN:
        raise AclCommandError(f"Invalid resource pattern type {opts.resource_pattern_type}")
    return pt


def resource_filters(opts: AclCommandOptions) -> list[ResourcePatternFilter]:
    """AclCommand.getResourceFilter: one filter per named resource, in the pattern type given."""
    pt = _pattern_type(opts)
    named = [(ResourceType.TOPIC, opts.topics), (ResourceType.GROUP, opts.groups),
             (ResourceType.TRANSACTIONAL_ID, opts.transactional_ids),
             (ResourceType.DELEGATION_TOKEN, opts.delegation_tokens), (ResourceType.USER, opts.user_principals)]
    out = [ResourcePatternFilter(rt, name, pt) for rt, names in named for name in names]
    if opts.cluster:
        out.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, pt))
    return out


def _operation(name: str) -> AclOperation:
    op = AclOperation.from_string(name.replace("-", "_"))
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        try:
            return AclOperation.from_pascal(name)
        except ValueError:
            raise AclCommandError(f"Invalid operation {name}") from None
    return op


def _entries(opts: AclCommandOptions, operations: set[AclOperation]) -> set[AccessControlEntry]:
    """AclCommand.getAcl: each principal × operation × host; hosts default to `*` when principals are given."""
    out: set[AccessControlEntry] = set()
    for principals, hosts, perm in ((opts.allow_principals, opts.allow_hosts, AclPermissionType.ALLOW),
                                    (opts.deny_principals, opts.deny_hosts, AclPermissionType.DENY)):
        for p in principals:
            KafkaPrincipal.parse(p)
            for op in operations:
                for host in hosts or ["*"]:
                    out.add(AccessControlEntry(p, host, op, perm))
    return out


def bindings_to_add(opts: AclCommandOptions) -> list[AclBinding]:
    """--add: the explicit --operation (default All), or --producer / --consumer's fixed sets."""
    pt = _pattern_type(opts)
    if pt not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclCommandError(f"A '--resource-pattern-type' value of '{pt.name}' is not valid when adding acls.")
    if not (opts.allow_principals or opts.deny_principals):
        raise AclCommandError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    filters = resource_filters(opts)
    by_filter: list[tuple[ResourcePatternFilter, set[AccessControlEntry]]] = []
    if opts.producer or opts.consumer:
        by_filter = _convenience(opts, filters)
    else:
        if opts.idempotent:
            raise AclCommandError("--idempotent is only valid with --producer")
        ops = {_operation(o) for o in opts.operations} or {AclOperation.ALL}
        by_filter = [(f, _entries(opts, ops)) for f in filters]
    if not by_filter:
        raise AclCommandError("You must provide at least one resource: --topic <topic> or --cluster or "
                              "--group <group> or --delegation-token <Delegation Token ID>")
    out: list[AclBinding] = []
    for f, entries in by_filter:
        pattern = ResourcePattern(f.resource_type, str(f.name), f.pattern_type)
        for e in sorted(entries, key=lambda e: (e.principal, e.host, e.operation.code, e.permission_type.code)):
            binding = AclBinding(pattern, e)
            problem = unsupported_operation(binding)
            if problem:
                raise AclCommandError(problem)
            out.append(binding)
    return out


def _convenience(opts: AclCommandOptions, filters: list[ResourcePatternFilter]
                 ) -> list[tuple[ResourcePatternFilter, set[AccessControlEntry]]]:
    """--producer: WRITE, DESCRIBE, CREATE on topics, WRITE, DESCRIBE on transactional ids, IDEMPOTENT_WRITE on
    the cluster with --idempotent. --consumer: READ, DESCRIBE on topics, READ on groups."""
    topics = [f for f in filters if f.resource_type is ResourceType.TOPIC]
    if not topics:
        raise AclCommandError("With --producer or --consumer you must specify a --topic")
    out: list[tuple[ResourcePatternFilter, set[AccessControlEntry]]] = []
    Op = AclOperation
    if opts.producer:
        out += [(f, _entries(opts, {Op.WRITE, Op.DESCRIBE, Op.CREATE})) for f in topics]
        out += [(f, _entries(opts, {Op.WRITE, Op.DESCRIBE})) for f in filters
                if f.resource_type is ResourceType.TRANSACTIONAL_ID]
        if opts.idempotent:
            cluster = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            out.append((cluster, _entries(opts, {Op.IDEMPOTENT_WRITE})))
    if opts.consumer:
        groups = [f for f in filters if f.resource_type is ResourceType.GROUP]
        if not groups:
            raise AclCommandError("With --consumer you must specify a --group")
        out += [(f, _entries(opts, {Op.READ, Op.DESCRIBE})) for f in topics]
        out += [(f, _entries(opts, {Op.READ})) for f in groups]
    return out


def filters_for(opts: AclCommandOptions, listing: bool) -> list[AclBindingFilter]:
    """--list (with --principal) or --remove: one filter per resource (all resources when none named);
    --remove with principals removes just those entries."""
    patterns = resource_filters(opts) or [ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)]
    if listing:
        entry_filters = [AccessControlEntryFilter(principal=p) for p in opts.principals] or [AccessControlEntryFilter()]
        return [AclBindingFilter(p, e) for p in patterns for e in entry_filters]
    if not (opts.allow_principals or opts.deny_principals):
        return [AclBindingFilter(p) for p in patterns]
    ops = {_operation(o) for o in opts.operations} or {AclOperation.ALL}
    return [AclBindingFilter(p, AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))
            for p in patterns for e in sorted(_entries(opts, ops), key=repr)]
