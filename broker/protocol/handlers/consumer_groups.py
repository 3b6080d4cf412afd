"""The KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), v0-v1 (Kafka 4.1's
Java client and librdkafka 2.16 send v0 or v1). The coordinator is found with FindCoordinator as for classic
groups; topics travel by id on the wire and by name inside the coordinator."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from broker.coordinator.consumer.coordinator import HeartbeatRequest, HeartbeatResult
from broker.coordinator.consumer.service import MemberView
from broker.errors import ErrorCode
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.codec import ms
from broker.protocol.handlers.groups import NO_AUTHORIZED_OPERATIONS, java_client_host

CONSUMER_MEMBER_TYPE = 1   # ConsumerGroupDescribe v1 MemberType: 0 classic, 1 consumer


def _topics(ctx: RequestContext) -> tuple[dict[str, int], dict[uuid.UUID, str], dict[str, uuid.UUID]]:
    """Partition counts by name, and the name <-> topic id maps, from the broker's metadata."""
    topics = ctx.broker.metadata.topics()
    return ({name: info.partitions for name, info in topics.items()},
            {info.topic_id: name for name, info in topics.items()},
            {name: info.topic_id for name, info in topics.items()})


def _heartbeat_response(result: HeartbeatResult, ids: Mapping[str, uuid.UUID]) -> dict:
    if result.error != ErrorCode.none:
        # Kafka's GroupCoordinatorService answers an error with the code and message only: no member id, epoch 0.
        return {"throttle_time": 0, "error_code": result.error, "error_message": result.message,
                "member_id": None, "member_epoch": 0, "heartbeat_interval": 0, "assignment": None}
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": ids[t], "partitions": sorted(ps)}
                                           for t, ps in sorted(result.assignment.items()) if ps and t in ids]}
    return {"throttle_time": 0, "error_code": result.error, "error_message": result.message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval": result.heartbeat_interval_ms, "assignment": assignment}


async def handle_consumer_group_heartbeat(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, 68, names={authz.GROUP: req.group_id}):
        return _heartbeat_response(HeartbeatResult(denied, None, None, -1), {})
    counts, names, ids = _topics(ctx)
    owned = None
    if req.topic_partitions is not None:
        # A topic deleted meanwhile keeps a name no topic can have ('<' is not a legal character): as in Kafka,
        # which compares ids, it is never part of an assignment, and a join that lists it is INVALID_REQUEST.
        owned = {names.get(tp.topic_id, f"<unknown topic {tp.topic_id}>"): frozenset(tp.partitions)
                 for tp in req.topic_partitions}
    regex = getattr(req, "subscribed_topic_regex", None)   # v1+
    request = HeartbeatRequest(
        req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id, ms(req.rebalance_timeout),
        list(req.subscribed_topic_names) if req.subscribed_topic_names is not None else None, regex,
        req.server_assignor, owned, ctx.client_id or "", java_client_host(ctx.client_host))
    coordinator = ctx.broker.group_coordinator
    result = coordinator.consumer_group_heartbeat(request, counts, ctx.api_version)
    if result.error == ErrorCode.none:
        # As Kafka's CoordinatorRuntime: answered once the group's records are committed; a heartbeat that wrote
        # nothing waits for the partition's last write too, since its answer may show what that write made.
        error = await coordinator.replicated(req.group_id)
        if error != ErrorCode.none:   # the member finds the coordinator again and goes on from its epoch
            result = HeartbeatResult(error, None, None, -1)
    return _heartbeat_response(result, ids)


def _assignment(parts: Mapping[str, list[int]], ids: Mapping[str, uuid.UUID]) -> dict:
    return {"topic_partitions": [{"topic_id": ids[t], "topic_name": t, "partitions": ps}
                                 for t, ps in parts.items() if t in ids]}


def _member(m: MemberView, ids: Mapping[str, uuid.UUID]) -> dict:
    return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": m.subscribed_topic_names, "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": _assignment(m.assignment, ids), "target_assignment": _assignment(m.target_assignment, ids),
            "member_type": CONSUMER_MEMBER_TYPE}


async def handle_consumer_group_describe(ctx: RequestContext, req) -> dict:
    service = ctx.broker.group_coordinator.consumer
    denied = authz.resource_errors(ctx, 69, authz.GROUP, req.group_ids)
    _, _, ids = _topics(ctx)
    groups = []
    for group_id in req.group_ids:
        entry = {"group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                 "assignor_name": "", "members": [], "authorized_operations": NO_AUTHORIZED_OPERATIONS}
        if group_id in denied:
            groups.append({**entry, "error_code": denied[group_id], "error_message": None})
            continue
        view = service.describe(group_id)
        entry.update(error_code=view.error, error_message=view.message)
        if view.error == ErrorCode.none:
            entry.update(group_state=view.state, group_epoch=view.group_epoch,
                         assignment_epoch=view.assignment_epoch, assignor_name=view.assignor,
                         members=[_member(m, ids) for m in view.members])
            if authz.enabled(ctx) and req.include_authorized_operations:
                entry["authorized_operations"] = authz.authorized_operations(ctx, authz.GROUP, group_id)
        groups.append(entry)
    return {"throttle_time": 0, "groups": groups}


APIS = (
    ApiSpec(68, 0, 1, handle_consumer_group_heartbeat),
    ApiSpec(69, 0, 1, handle_consumer_group_describe),
)
