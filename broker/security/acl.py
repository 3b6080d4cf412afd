"""Kafka's ACL model: the enums with their wire codes, principals, resource patterns, entries, bindings and the
filters DescribeAcls/DeleteAcls send (org.apache.kafka.common.acl / .resource / .security.auth).

Names follow the Java classes; `code` is the byte CreateAcls/DescribeAcls/DeleteAcls carry.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import Enum
from typing import Self

WILDCARD_RESOURCE = "*"          # ResourcePattern.WILDCARD_RESOURCE, in a LITERAL pattern
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"   # the only CLUSTER resource
USER_TYPE = "User"
INVALID_REQUEST = 42


class _Coded(Enum):
    """An enum whose value is Kafka's wire code."""

    @property
    def code(self) -> int:
        return int(self.value)

    @classmethod
    def from_code(cls, code: int) -> Self:
        """Kafka's fromCode: an unknown byte is UNKNOWN, not an error."""
        for member in cls:
            if member.value == code:
                return member
        return cls["UNKNOWN"]

    @classmethod
    def from_string(cls, name: str) -> Self:
        """Kafka's fromString: the enum name, case-insensitive; anything else is UNKNOWN."""
        return cls.__members__.get(name.upper(), cls["UNKNOWN"])

    @property
    def pascal_name(self) -> str:
        """SecurityUtils.toPascalCase: TRANSACTIONAL_ID → TransactionalId (ZooKeeper paths and JSON)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_pascal(cls, name: str) -> Self:
        """SecurityUtils.resourceType/operation/permissionType: PascalCase back; unknown raises."""
        member = cls.__members__.get(re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper())
        if member is None or member.name in ("UNKNOWN", "ANY", "MATCH"):
            raise ValueError(f"Unknown {cls.__name__} name {name}")
        return member


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# AclEntry.supportedOperations: what kafka-acls accepts per resource type (ALL always), and the operations
# whose bits Metadata/DescribeCluster/DescribeGroups report as authorized_operations.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                                   AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                                   AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}),
    ResourceType.CLUSTER: frozenset({AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                                     AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                                     AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}


@dataclass(frozen=True)
class KafkaPrincipal:
    """`User:alice`; `User:*` in an ACL matches every user."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """SecurityUtils.parseKafkaPrincipal: split at the first colon."""
        principal_type, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)


WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")


def parse_super_users(value: str | None) -> frozenset[KafkaPrincipal]:
    """`super.users`: principals separated by semicolons (a comma may be part of a TLS DN)."""
    if not value:
        return frozenset()
    return frozenset(KafkaPrincipal.parse(p.strip()) for p in value.split(";") if p.strip())


def host_address(ip: str) -> str:
    """The client address as Java's InetAddress.getHostAddress writes it, which is what ACL hosts are
    compared with: IPv4 dotted, IPv4-mapped IPv6 as IPv4, other IPv6 as eight uncompressed groups."""
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return ":".join(f"{int(g, 16):x}" for g in addr.exploded.split(":"))
    return str(addr)


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL


@dataclass(frozen=True)
class AccessControlEntry:
    """Principal and host as strings, as Kafka keeps them (`User:alice`, `*` or an IP)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class ResourcePatternFilter:
    """name None matches any name. MATCH: every pattern that would apply to the named resource."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        """ResourcePatternFilter.matches."""
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def is_unknown(self) -> bool:
        return self.pattern_type is PatternType.UNKNOWN or self.resource_type is ResourceType.UNKNOWN


@dataclass(frozen=True)
class AccessControlEntryFilter:
    """None principal/host match anything; the comparison is exact (no `User:*` or `*` expansion)."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        """AccessControlEntryFilter.matches."""
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and self.operation in (AclOperation.ANY, entry.operation)
                and self.permission_type in (AclPermissionType.ANY, entry.permission_type))

    def is_unknown(self) -> bool:
        return self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN


@dataclass(frozen=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()


ANY_FILTER = AclBindingFilter()


def validate_new_acl(binding: AclBinding) -> str | None:
    """Why CreateAcls refuses this binding (INVALID_REQUEST, 42), or None. The checks of KRaft's
    AclControlManager.validateNewAcl plus the ZooKeeper path's CLUSTER name rule."""
    p, e = binding.pattern, binding.entry
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {p.pattern_type.name}"
    if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {p.resource_type.name}"
    if e.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {e.operation.name}"
    if e.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {e.permission_type.name}"
    if not p.name:
        return "Resource name should not be empty"
    if p.resource_type is ResourceType.CLUSTER and p.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if ":" not in e.principal:
        return (f"Could not parse principal from `{e.principal}` "
                "(no colon is present separating the principal type from the principal name)")
    return None


def unsupported_operation(binding: AclBinding) -> str | None:
    """kafka-acls' check (AclCommand.validateOperation): an operation the resource type does not have."""
    ops = SUPPORTED_OPERATIONS.get(binding.pattern.resource_type, frozenset())
    op = binding.entry.operation
    if op is AclOperation.ALL or op in ops:
        return None
    names = ", ".join(sorted(o.pascal_name for o in ops))
    return f"ResourceType {binding.pattern.resource_type.pascal_name} only supports operations {names}"
