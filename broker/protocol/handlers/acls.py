"""ACL administration: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), as Kafka's AclAuthorizer answers them.

Without an authorizer each answers SECURITY_DISABLED. DescribeAcls needs DESCRIBE on the cluster, the other
two ALTER (CLUSTER_AUTHORIZATION_FAILED). The ACLs are the metadata's (`MetadataStore.acl_storage`): a file
for a standalone broker, ZooKeeper's `/kafka-acl` nodes in a cluster; each change is persisted at once.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_new_acl,
)

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def binding_filter(f) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter as Kafka's AclBindingFilter."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(f.resource_type_filter), f.resource_name_filter,
                              PatternType.from_code(f.pattern_type_filter)),
        AccessControlEntryFilter(f.principal_filter, f.host_filter, AclOperation.from_code(f.operation),
                                 AclPermissionType.from_code(f.permission_type)))


def creation_binding(c) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(c.resource_type), c.resource_name,
                        PatternType.from_code(c.resource_pattern_type)),
        AccessControlEntry(c.principal, c.host, AclOperation.from_code(c.operation),
                           AclPermissionType.from_code(c.permission_type)))


def _entry_fields(e: AccessControlEntry) -> dict:
    return {"principal": e.principal, "host": e.host, "operation": e.operation.code,
            "permission_type": e.permission_type.code}


def _describe(ctx: RequestContext) -> str:
    """How Kafka's ClusterAuthorizationException names the request."""
    return f"DescribeAcls v{ctx.api_version} from {authz.principal(ctx)}"


async def handle_describe_acls(ctx: RequestContext, req) -> dict:
    def error(code: ErrorCode, message: str | None) -> dict:
        return {"throttle_time": 0, "error_code": code, "error_message": message, "resources": []}

    if not authz.enabled(ctx):
        return error(ErrorCode.security_disabled, NO_AUTHORIZER)
    if denied := authz.request_error(ctx, 29):
        return error(denied, f"Request {_describe(ctx)} is not authorized.")
    flt = binding_filter(req)
    if flt.is_unknown():
        return error(ErrorCode.invalid_request, "DescribeAclsRequest contains UNKNOWN elements")
    by_pattern: dict[ResourcePattern, list[dict]] = {}
    for b in ctx.broker.metadata.acl_storage().store.acls(flt):
        by_pattern.setdefault(b.pattern, []).append(_entry_fields(b.entry))
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "resources": [
        {"resource_type": p.resource_type.code, "resource_name": p.name, "pattern_type": p.pattern_type.code,
         "acls": acls} for p, acls in by_pattern.items()]}


async def handle_create_acls(ctx: RequestContext, req) -> dict:
    def answer(code: ErrorCode, message: str | None) -> dict:
        return {"error_code": code, "error_message": message}

    if not authz.enabled(ctx):
        return {"throttle_time": 0, "results": [answer(ErrorCode.security_disabled, NO_AUTHORIZER)
                                                for _ in req.creations]}
    if denied := authz.request_error(ctx, 30):
        return {"throttle_time": 0, "results": [answer(denied, None) for _ in req.creations]}
    storage = ctx.broker.metadata.acl_storage()
    results, valid = [], []
    for c in req.creations:
        binding = creation_binding(c)
        problem = validate_new_acl(binding)
        results.append(answer(ErrorCode.invalid_request, problem) if problem else answer(ErrorCode.none, None))
        if not problem:
            valid.append(binding)
    try:
        storage.add(valid)
    except KafkaError as e:   # the ACL file could not be written (a full disk): none of them was added
        results = [answer(e.code, e.message) if r["error_code"] == ErrorCode.none else r for r in results]
    return {"throttle_time": 0, "results": results}


async def handle_delete_acls(ctx: RequestContext, req) -> dict:
    def result(code: ErrorCode, message: str | None, matching: list[dict]) -> dict:
        return {"error_code": code, "error_message": message, "matching_acls": matching}

    if not authz.enabled(ctx):
        return {"throttle_time": 0, "filter_results": [result(ErrorCode.security_disabled, NO_AUTHORIZER, [])
                                                       for _ in req.filters]}
    if denied := authz.request_error(ctx, 31):
        return {"throttle_time": 0, "filter_results": [result(denied, None, []) for _ in req.filters]}
    storage = ctx.broker.metadata.acl_storage()
    results: list[dict] = []
    for f in req.filters:
        flt = binding_filter(f)
        if flt.is_unknown():
            results.append(result(ErrorCode.invalid_request, "DeleteAclsRequest contains UNKNOWN elements", []))
            continue
        try:
            removed = storage.remove(flt)
        except KafkaError as e:   # the ACL file could not be written (a full disk): nothing removed
            results.append(result(e.code, e.message, []))
            continue
        results.append(result(ErrorCode.none, None, [
            {"error_code": ErrorCode.none, "error_message": None, "resource_type": b.pattern.resource_type.code,
             "resource_name": b.pattern.name, "pattern_type": b.pattern.pattern_type.code, **_entry_fields(b.entry)}
            for b in removed]))
    return {"throttle_time": 0, "filter_results": results}


APIS = (
    ApiSpec(29, 1, 3, handle_describe_acls),
    ApiSpec(30, 1, 3, handle_create_acls),
    ApiSpec(31, 1, 3, handle_delete_acls),
)
