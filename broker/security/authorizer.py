"""The authorizer's decision, as kafka.security.authorizer.AclAuthorizer and StandardAuthorizer make it,
over an in-memory AclStore (what a standalone broker keeps in its metadata, or a cache of ZooKeeper).

authorize(): super users pass; else the ACLs on the resource (literal name, literal `*`, prefixes of the
name, same resource type) decide: any matching DENY denies, else a matching ALLOW allows (DESCRIBE implied
by READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS, ALL matches every operation); a resource with
no ACL at all follows `allow.everyone.if.no.acl.found`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from broker.security.acl import (
    ANY_FILTER,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_super_users,
)

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


class AclStore:
    """ACLs by resource pattern. add/remove answer what changed, so a caller can write ZooKeeper
    (acl_zk) and the change notification for exactly those patterns."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._acls: dict[ResourcePattern, set[AccessControlEntry]] = {}
        self.add(bindings)

    def add(self, bindings: Iterable[AclBinding]) -> set[ResourcePattern]:
        """Add bindings (already validated); returns the patterns whose ACL set changed."""
        changed: set[ResourcePattern] = set()
        for b in bindings:
            entries = self._acls.setdefault(b.pattern, set())
            if b.entry not in entries:
                entries.add(b.entry)
                changed.add(b.pattern)
        return changed

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Hold exactly these bindings, in place (the authorizer keeps this object): a change undone."""
        self._acls.clear()
        self.add(bindings)

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        """DeleteAcls for one filter: the bindings removed."""
        removed = self.acls(flt)
        for b in removed:
            entries = self._acls[b.pattern]
            entries.discard(b.entry)
            if not entries:
                del self._acls[b.pattern]
        return removed

    def acls(self, flt: AclBindingFilter = ANY_FILTER) -> list[AclBinding]:
        """DescribeAcls: every binding the filter matches, in a stable order."""
        out = [AclBinding(p, e) for p, entries in self._acls.items() for e in entries
               if flt.matches(AclBinding(p, e))]
        return sorted(out, key=_sort_key)

    def entries(self, pattern: ResourcePattern) -> set[AccessControlEntry]:
        """The ACLs stored under exactly this pattern (what one ZooKeeper node holds)."""
        return set(self._acls.get(pattern, ()))

    def set_entries(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace one pattern's ACLs, as a ZooKeeper change notification reload does."""
        new = set(entries)
        if new:
            self._acls[pattern] = new
        else:
            self._acls.pop(pattern, None)

    def matching_acls(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """AclAuthorizer.matchingAcls: literal name, literal wildcard and every prefix of the name."""
        out: list[AccessControlEntry] = []
        for pattern in (ResourcePattern(resource_type, name), ResourcePattern(resource_type, WILDCARD_RESOURCE)):
            out.extend(self._acls.get(pattern, ()))
        for i in range(1, len(name) + 1):
            out.extend(self._acls.get(ResourcePattern(resource_type, name[:i], PatternType.PREFIXED), ()))
        return out

    def __len__(self) -> int:
        return sum(len(e) for e in self._acls.values())


def _sort_key(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (b.pattern.resource_type.code, b.pattern.name, b.pattern.pattern_type.code,
            b.entry.principal, b.entry.host, b.entry.operation.code, b.entry.permission_type.code)


def _entry_applies(entry: AccessControlEntry, principal: KafkaPrincipal, host: str) -> bool:
    return (entry.principal in (str(principal), str(WILDCARD_PRINCIPAL))
            and entry.host in (host, WILDCARD_HOST))


@dataclass
class AclAuthorizer:
    """`authorizer.class.name` set: `super.users`, `allow.everyone.if.no.acl.found` and the ACLs decide."""

    store: AclStore
    super_users: frozenset[KafkaPrincipal] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def from_config(cls, store: AclStore, props: dict[str, str]) -> AclAuthorizer:
        allow = props.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
        return cls(store, parse_super_users(props.get("super.users")), allow)

    def authorize(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """AclAuthorizer.authorizeAction for a LITERAL resource; host as acl.host_address gives it."""
        if principal in self.super_users:
            return True
        acls = self.store.matching_acls(resource_type, name)
        if not acls:
            return self.allow_everyone_if_no_acl_found
        applying = [e for e in acls if _entry_applies(e, principal, host)]
        # DENY is matched on the exact operation (or ALL): denying READ does not deny DESCRIBE.
        if any(e.permission_type is AclPermissionType.DENY and e.operation in (operation, AclOperation.ALL)
               for e in applying):
            return False
        if operation is AclOperation.DESCRIBE:
            allow_ops = _IMPLIES_DESCRIBE
        elif operation is AclOperation.DESCRIBE_CONFIGS:
            allow_ops = _IMPLIES_DESCRIBE_CONFIGS
        else:
            allow_ops = frozenset({operation})
        return any(e.permission_type is AclPermissionType.ALLOW
                   and (e.operation in allow_ops or e.operation is AclOperation.ALL) for e in applying)

    def authorize_by_resource_type(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Authorizer.authorizeByResourceType (KIP-679): could the principal do `operation` on some
        resource of this type? InitProducerId uses it for WRITE on any topic."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True   # Kafka's own probe name: covers super users and the no-ACL default
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False   # decided after the loop: a wildcard DENY anywhere wins over it
        for b in self.store.acls(AclBindingFilter()):
            e, p = b.entry, b.pattern
            if p.resource_type is not resource_type or not _entry_applies(e, principal, host):
                continue
            if e.operation not in (operation, AclOperation.ALL):
                continue
            if e.permission_type is AclPermissionType.DENY:
                if p.pattern_type is PatternType.LITERAL and p.name == WILDCARD_RESOURCE:
                    return False
                deny[p.pattern_type].add(p.name)
            elif e.permission_type is AclPermissionType.ALLOW:
                if p.pattern_type is PatternType.LITERAL and p.name == WILDCARD_RESOURCE:
                    wildcard_allow = True
                    continue
                allow[p.pattern_type].add(p.name)
        if wildcard_allow:
            return True
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type is PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: KafkaPrincipal, host: str, resource_type: ResourceType,
                              name: str, supported: Iterable[AclOperation]) -> int:
        """The authorized_operations bit field (Utils.to32BitField of the allowed operations' codes)."""
        bits = 0
        for op in supported:
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op.code
        return bits
