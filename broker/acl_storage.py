"""Where the ACLs live: the authorizer's in-memory AclStore and what keeps it.

- standalone (`LocalAclStorage`): a JSON file next to the local metadata, rewritten on every change;
- cluster (`broker.controller.acl_watch.ZkAclStorage`): Kafka's `/kafka-acl[-extended]` nodes in ZooKeeper,
  with change notifications every broker watches.
CreateAcls/DeleteAcls go through `add` and `remove`, which keep `store` and the storage in step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from broker.errors import ErrorCode, KafkaError
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.security.authorizer import AclStore
from common.atomic_file import write_json

ACL_FILE = "__acls.json"


class AclStorage(Protocol):
    """The ACL cache the authorizer reads, and how changes to it are kept."""

    store: AclStore

    def add(self, bindings: Iterable[AclBinding]) -> set[ResourcePattern]:
        """CreateAcls: add validated bindings; the patterns whose ACLs changed."""

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        """DeleteAcls for one filter: the bindings removed."""


def binding_to_json(b: AclBinding) -> dict[str, str]:
    return {"resourceType": b.pattern.resource_type.name, "name": b.pattern.name,
            "patternType": b.pattern.pattern_type.name, "principal": b.entry.principal, "host": b.entry.host,
            "operation": b.entry.operation.name, "permissionType": b.entry.permission_type.name}


def binding_from_json(d: dict[str, str]) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType[d["resourceType"]], d["name"], PatternType[d["patternType"]]),
        AccessControlEntry(d["principal"], d["host"], AclOperation[d["operation"]],
                           AclPermissionType[d["permissionType"]]))


class LocalAclStorage:
    """A standalone broker's ACLs: `<first log dir>/__acls.json`, replaced atomically on every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        doc = json.loads(path.read_text()) if path.exists() else {}
        self.store = AclStore(binding_from_json(d) for d in doc.get("acls", []))

    def add(self, bindings: Iterable[AclBinding]) -> set[ResourcePattern]:
        before = self.store.acls()
        changed = self.store.add(bindings)
        if changed:
            self._save(before)
        return changed

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        before = self.store.acls()
        removed = self.store.remove(flt)
        if removed:
            self._save(before)
        return removed

    def _save(self, before: list[AclBinding]) -> None:
        """Write the file; when the disk cannot take it, the ACLs in memory go back to `before` (KAFKA_STORAGE_ERROR)."""
        try:
            write_json(self.path, {"version": 1, "acls": [binding_to_json(b) for b in self.store.acls()]})
        except OSError as e:
            self.store.replace(before)
            raise KafkaError(ErrorCode.kafka_storage_error, f"The ACL file {self.path} could not be written: {e}"
                             ) from None
