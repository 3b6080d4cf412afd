"""Authorization in the handlers: broker/security/operations.py's check table applied to one request.

The broker's `authorizer` is None unless `authorizer.class.name` is set; then every helper here answers
"allowed" at once, so handlers behave exactly as without this module. With an authorizer, a handler asks:
- `request_error`: the error of the first REQUEST-scope check denied (the whole request fails), or 0;
- `resource_errors`: per resource name, the error of its first denied PER_RESOURCE check;
- `visible`: the names FILTER-scope checks let through (denied ones are dropped silently: Metadata of all
  topics, ListGroups, OffsetFetch of all partitions leak nothing);
- `authorized_operations`: the bit field Metadata, DescribeCluster and DescribeGroups report.
The principal is the connection's (`RequestContext.principal`, User:ANONYMOUS without authentication).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.config import ConfigError
from broker.errors import ErrorCode, KafkaError
from broker.security import operations
from broker.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    KafkaPrincipal,
    ResourceType,
    host_address,
    parse_super_users,
)
from broker.security.authorizer import AclAuthorizer
from broker.security.operations import (
    ALL_TOPICS,
    BROKER_RESOURCE,
    GROUP_RESOURCE,
    LISTED_TOPICS,
    TOPIC_RESOURCE,
    Check,
    Scope,
    checks_for,
)

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.metadata import MetadataStore
    from broker.protocol.api import RequestContext

NO_AUTHORIZED_OPERATIONS = -2147483648   # "not requested" in Metadata/DescribeCluster/DescribeGroups
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                                           ResourceType.TRANSACTIONAL_ID)
# AclAuthorizer class names that switch authorization on (ZooKeeper mode, and KRaft's, same semantics here).
audit_log = logging.getLogger("kafka.authorizer.logger")   # Kafka's authorizer log (log4j logger name)
AUTHORIZER_CLASSES = frozenset({"kafka.security.authorizer.AclAuthorizer",
                                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})


def principal(ctx: RequestContext) -> KafkaPrincipal:
    """The connection's principal; User:ANONYMOUS when the listener authenticates nobody."""
    return ctx.principal


def authorizer(ctx: RequestContext) -> AclAuthorizer | None:
    return ctx.broker.authorizer


def enabled(ctx: RequestContext) -> bool:
    return authorizer(ctx) is not None


def _last(check: Check) -> Check:
    while check.otherwise is not None:
        check = check.otherwise
    return check


def _passes(ctx: RequestContext, authz: AclAuthorizer, check: Check, name: str | None) -> bool:
    host = host_address(ctx.client_host)
    ok = operations.allowed(authz, principal(ctx), host, check, name)
    observer = ctx.broker.authorizer_metrics
    if observer is not None:
        observer.decided(ok)
    if not ok and audit_log.isEnabledFor(logging.INFO):
        _audit(ctx, host, _last(check), name)
    return ok


def _audit(ctx: RequestContext, host: str, check: Check, name: str | None) -> None:
    """AclAuthorizer.logAuditMessage for a denial (INFO on `kafka.authorizer.logger`, as Kafka logs it)."""
    rt = check.resource_type
    resource = f"{rt.pascal_name}:LITERAL:{CLUSTER_NAME if rt is CLUSTER else name}"
    api = operations.BY_KEY[ctx.api_key].name if ctx.api_key in operations.BY_KEY else str(ctx.api_key)
    audit_log.info("Principal = %s is Denied Operation = %s from host = %s on resource = %s for request = %s "
                   "with resourceRefCount = 1", principal(ctx), check.operation.pascal_name, host, resource,
                   re.sub(r"(?<!^)(?=[A-Z])", "_", api).upper())


def _error(ctx: RequestContext, authz: AclAuthorizer, check: Check, name: str | None) -> int:
    """0 when allowed, else the chain's error (the last tried check's, as Kafka's handlers answer)."""
    return 0 if _passes(ctx, authz, check, name) else _last(check).error


def allowed(ctx: RequestContext, resource_type: ResourceType, operation: AclOperation, name: str = CLUSTER_NAME
            ) -> bool:
    """One plain check (True without an authorizer)."""
    authz = authorizer(ctx)
    if authz is None:
        return True
    return _passes(ctx, authz, Check(resource_type, operation, 1, Scope.REQUEST), name)


def request_error(ctx: RequestContext, api: int, conditions: Collection[str] = frozenset(),
                  names: Mapping[ResourceType, str | None] | None = None) -> ErrorCode:
    """The error of the first REQUEST-scope check this request fails, else ErrorCode.none. `names` gives the
    resource a non-cluster check is about (the group of a JoinGroup, the transactional id)."""
    authz = authorizer(ctx)
    if authz is None:
        return ErrorCode.none
    for check in checks_for(api, set(conditions)):
        last = _last(check)
        if last.scope is not Scope.REQUEST or last.error == 0:
            continue
        name = (names or {}).get(check.resource_type)
        if name is None and check.resource_type is not CLUSTER and not check.by_resource_type:
            continue   # a check about a resource the caller did not name (e.g. OffsetCommit's topics)
        code = _error(ctx, authz, check, name)
        if code:
            return ErrorCode(code)
    return ErrorCode.none


def resource_errors(ctx: RequestContext, api: int, resource_type: ResourceType, names: Iterable[str],
                    conditions: Collection[str] = frozenset(), only: AclOperation | None = None
                    ) -> dict[str, ErrorCode]:
    """Per name, the error of the first PER_RESOURCE check (on this type, or on the cluster) it fails; names
    that pass are absent, so an empty dict means "all allowed". `only`: just the checks of that operation."""
    authz = authorizer(ctx)
    if authz is None:
        return {}
    checks = [c for c in checks_for(api, set(conditions))
              if _last(c).scope is Scope.PER_RESOURCE and _last(c).resource_type in (resource_type, CLUSTER)
              and only in (None, c.operation)]
    out: dict[str, ErrorCode] = {}
    for name in dict.fromkeys(names):
        for check in checks:
            code = _error(ctx, authz, check, name)
            if code:
                out[name] = ErrorCode(code)
                break
    return out


def raise_if_denied(errors: Mapping[str, ErrorCode], name: str) -> None:
    """Raise a handler's per-item KafkaError for a denied name (from `resource_errors`)."""
    code = errors.get(name)
    if code:
        raise KafkaError(code)


def visible(ctx: RequestContext, api: int, resource_type: ResourceType, names: Iterable[str],
            conditions: Collection[str] = frozenset()) -> list[str]:
    """The names the FILTER-scope checks of this case let through, in order (all without an authorizer)."""
    authz = authorizer(ctx)
    names = list(names)
    if authz is None:
        return names
    checks = [c for c in checks_for(api, set(conditions))
              if _last(c).scope is Scope.FILTER and _last(c).resource_type is resource_type]
    return [n for n in names if all(_passes(ctx, authz, c, n) for c in checks)]


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
    """The `*_authorized_operations` bit field of a resource (all supported operations without an authorizer,
    as Kafka reports with no authorizer configured)."""
    supported = SUPPORTED_OPERATIONS[resource_type]
    authz = authorizer(ctx)
    if authz is None:
        return sum(1 << op.code for op in supported)
    return authz.authorized_operations(principal(ctx), host_address(ctx.client_host), resource_type, name,
                                       supported)


def build_authorizer(config: BrokerConfig, metadata: MetadataStore) -> AclAuthorizer | None:
    """`authorizer.class.name` set: Kafka's AclAuthorizer over the metadata's ACLs; unset: None (no checks)."""
    name = config.authorizer_class_name.strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASSES:
        raise ConfigError(f"Invalid value {name!r} for configuration authorizer.class.name: expected one of "
                          f"{', '.join(sorted(AUTHORIZER_CLASSES))}")
    return AclAuthorizer(metadata.acl_storage().store, parse_super_users(config.super_users),
                         config.allow_everyone_if_no_acl_found)


def guarded(errors: Mapping[str, ErrorCode], fill: Callable[..., None]) -> Callable[..., None]:
    """`fill(topic, ...)` that first raises the topic's authorization error, if it has one."""
    if not errors:
        return fill

    def checked(topic: str, *args: Any) -> None:
        raise_if_denied(errors, topic)
        fill(topic, *args)
    return checked


def offset_fetch_topics(ctx: RequestContext, topics: list[dict], all_topics: bool) -> list[dict]:
    """OffsetFetch's topics: for all topics, those the principal may not DESCRIBE are left out; for listed
    ones, their partitions answer TOPIC_AUTHORIZATION_FAILED with offset -1 (Kafka's UNAUTHORIZED_PARTITION)."""
    if not enabled(ctx):
        return topics
    names = [t["name"] for t in topics]
    if all_topics:
        shown = set(visible(ctx, 9, TOPIC, names, {ALL_TOPICS}))
        return [t for t in topics if t["name"] in shown]
    denied = resource_errors(ctx, 9, TOPIC, names, {LISTED_TOPICS})
    for t in topics:
        if t["name"] in denied:
            for p in t["partitions"]:
                p.update(committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=denied[t["name"]])
    return topics


# DescribeConfigs / AlterConfigs resource types -> (ACL resource type, operations.py condition)
_CONFIG_RESOURCES = {2: (TOPIC, TOPIC_RESOURCE), 4: (CLUSTER, BROKER_RESOURCE), 8: (CLUSTER, BROKER_RESOURCE),
                     32: (GROUP, GROUP_RESOURCE)}


def config_resource_error(ctx: RequestContext, api: int, config_resource_type: int, name: str) -> None:
    """Raise the error of a Describe/(Incremental)AlterConfigs resource the principal may not touch."""
    if not enabled(ctx) or config_resource_type not in _CONFIG_RESOURCES:
        return
    resource_type, condition = _CONFIG_RESOURCES[config_resource_type]
    raise_if_denied(resource_errors(ctx, api, resource_type, [name], {condition}), name)


class AuthorizerMetrics:
    """StandardAuthorizer's `kafka.server:type=authorizer-metrics`: authorization-request/allowed/denied
    rates per minute and acls-total-count (Kafka metrics, so jmx_exporter names them as Kafka's are)."""

    def __init__(self, registry: Any, authorizer: AclAuthorizer) -> None:
        from exporter.registry import SampledRate  # here: a broker without /metrics needs no exporter

        self.allowed, self.denied = SampledRate(registry.clock), SampledRate(registry.clock)
        group = ("kafka.server", "authorizer-metrics")
        registry.kafka_metric(*group, "authorization-allowed-rate-per-minute", lambda: self.allowed.rate * 60)
        registry.kafka_metric(*group, "authorization-denied-rate-per-minute", lambda: self.denied.rate * 60)
        registry.kafka_metric(*group, "authorization-request-rate-per-minute",
                              lambda: (self.allowed.rate + self.denied.rate) * 60)
        registry.kafka_metric(*group, "acls-total-count", lambda: len(authorizer.store))

    def decided(self, ok: bool) -> None:
        (self.allowed if ok else self.denied).record()
