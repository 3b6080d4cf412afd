"""ACLs in ZooKeeper as Kafka's AclAuthorizer lays them out (kafka.zk.ZkAclStore, ZkAclChangeStore, AclEntry).

Only the paths and the bytes: the ZooKeeper client calls belong to the caller.
- literal ACLs:   /kafka-acl/<ResourceType>/<name>
- prefixed ACLs:  /kafka-acl-extended/prefixed/<ResourceType>/<name>
- node data:      {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
- a change:       sequential /kafka-acl-changes/acl_changes_<10 digits> holding `TOPIC:<name>` (literal), or
                  /kafka-acl-extended-changes/acl_changes_<10 digits> holding
                  {"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}.
A broker applies a change by re-reading that one pattern's node (AclStore.set_entries).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from broker.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourceType,
)

LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_CHANGE_PATH = "/kafka-acl-changes"
EXTENDED_CHANGE_PATH = "/kafka-acl-extended-changes"
CHANGE_NODE_PREFIX = "acl_changes_"
VERSION = 1
# AclEntry.ResourceTypes: the concrete types, each with its own folder under every ACL store.
RESOURCE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY))


def acl_store_path(pattern_type: PatternType) -> str:
    """ZkAclStore.aclPath: /kafka-acl for LITERAL, /kafka-acl-extended/<pattern type lower-case> else."""
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ACL_PATH
    if pattern_type is PatternType.PREFIXED:
        return f"{EXTENDED_ACL_PATH}/prefixed"
    raise ValueError(f"ACLs are not stored for pattern type {pattern_type.name}")


def acl_node_path(pattern: ResourcePattern) -> str:
    """Where one pattern's ACLs live. Names are used as they are, as Kafka does (no escaping)."""
    return f"{acl_store_path(pattern.pattern_type)}/{pattern.resource_type.pascal_name}/{pattern.name}"


def pattern_from_path(path: str) -> ResourcePattern:
    """The pattern an ACL node path stands for (the inverse of acl_node_path)."""
    for pattern_type in (PatternType.PREFIXED, PatternType.LITERAL):
        root = acl_store_path(pattern_type) + "/"
        if path.startswith(root):
            type_name, sep, name = path[len(root):].partition("/")
            if sep and name:
                return ResourcePattern(ResourceType.from_pascal(type_name), name, pattern_type)
    raise ValueError(f"not an ACL node path: {path}")


def acl_paths() -> list[str]:
    """The folders AclAuthorizer creates at start-up (KafkaZkClient.createAclPaths)."""
    paths: list[str] = []
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        root = acl_store_path(pattern_type)
        paths.append(root)
        paths.extend(f"{root}/{t.pascal_name}" for t in RESOURCE_TYPES)
    return paths + [LITERAL_CHANGE_PATH, EXTENDED_CHANGE_PATH]


def entry_to_json(entry: AccessControlEntry) -> dict[str, str]:
    """AclEntry.toMap, keys in Kafka's order."""
    return {"principal": entry.principal, "permissionType": entry.permission_type.pascal_name,
            "operation": entry.operation.pascal_name, "host": entry.host}


def acl_node_data(entries: Iterable[AccessControlEntry]) -> bytes:
    """AclEntry.toJsonCompatibleMap as Kafka's Json.encodeAsBytes writes it (compact). Kafka's order
    comes from a Set; ours is sorted so equal sets give equal bytes."""
    acls = sorted((entry_to_json(e) for e in entries),
                  key=lambda d: (d["principal"], d["host"], d["operation"], d["permissionType"]))
    return json.dumps({"version": VERSION, "acls": acls}, separators=(",", ":")).encode("utf-8")


def parse_acl_node(data: bytes | None) -> set[AccessControlEntry]:
    """AclEntry.fromBytes: empty data is no ACL; names are Kafka's PascalCase."""
    if not data:
        return set()
    doc = json.loads(data.decode("utf-8"))
    out: set[AccessControlEntry] = set()
    for item in doc.get("acls", []):
        KafkaPrincipal.parse(item["principal"])   # Kafka refuses a principal without a type
        out.add(AccessControlEntry(item["principal"], item["host"],
                                   AclOperation.from_pascal(item["operation"]),
                                   AclPermissionType.from_pascal(item["permissionType"])))
    return out


def change_path_prefix(pattern_type: PatternType) -> str:
    """The path to create (PERSISTENT_SEQUENTIAL) to announce a change to this kind of pattern."""
    root = LITERAL_CHANGE_PATH if pattern_type is PatternType.LITERAL else EXTENDED_CHANGE_PATH
    return f"{root}/{CHANGE_NODE_PREFIX}"


def sequential_node_name(prefix: str, sequence: int) -> str:
    """ZooKeeper's name for a sequential node: the prefix and a 10-digit zero-padded counter."""
    return f"{prefix}{sequence:010d}"


def change_node_data(pattern: ResourcePattern) -> bytes:
    """LiteralAclChangeStore.encode (`TOPIC:name`, the Java enum's toString) or
    ExtendedAclChangeStore.encode (ExtendedAclChangeEvent JSON)."""
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    event = {"version": VERSION, "resourceType": pattern.resource_type.name, "name": pattern.name,
             "patternType": pattern.pattern_type.name}
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


def parse_change_node(path: str, data: bytes) -> ResourcePattern:
    """Decode a change notification found under either change path; resource type names are read
    case-insensitively, as Kafka's ResourceType.fromString does."""
    text = data.decode("utf-8")
    if path.startswith(LITERAL_CHANGE_PATH + "/"):
        type_name, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return ResourcePattern(_known_type(type_name), name, PatternType.LITERAL)
    if path.startswith(EXTENDED_CHANGE_PATH + "/"):
        event = json.loads(text)
        if event.get("version", 0) > VERSION:
            raise ValueError(f"Unsupported version: {event['version']}")
        pattern_type = PatternType.from_string(event["patternType"])
        if pattern_type is not PatternType.PREFIXED:
            raise ValueError(f"Unsupported pattern type {event['patternType']}")
        return ResourcePattern(_known_type(event["resourceType"]), event["name"], pattern_type)
    raise ValueError(f"not an ACL change path: {path}")


def _known_type(name: str) -> ResourceType:
    t = ResourceType.from_string(name)
    if t in (ResourceType.UNKNOWN, ResourceType.ANY):
        t = ResourceType.from_pascal(name)   # also accept the PascalCase spelling older brokers wrote
    return t
