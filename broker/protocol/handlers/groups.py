"""Classic consumer-group APIs over the GroupCoordinator: FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), OffsetCommit (8), OffsetFetch (9), DescribeGroups (15), ListGroups (16),
DeleteGroups (42), OffsetDelete (47)."""

from __future__ import annotations

import ipaddress

from broker.coordinator.transaction.coordinator import TXN_STATE_TOPIC
from broker.errors import ErrorCode, InvalidRequest, KafkaError
from broker.metadata import OFFSETS_TOPIC
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.codec import ms
from broker.security.operations import GROUP_KEY, TRANSACTION_KEY

GROUP_KEY_TYPE = 0
NO_AUTHORIZED_OPERATIONS = -2147483648
CLASSIC_GROUP_TYPE = "classic"


def java_client_host(host: str) -> str:
    """A member's client host as Kafka records it (DescribeGroups, group metadata records): Java's
    InetAddress.toString() of an address without a resolved name, "/" + the literal, e.g. "/127.0.0.1"."""
    literal, _, scope = host.partition("%")
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:  # not a literal (sockets give literals): no name to put before the slash either
        return "/" + host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # Java hands an IPv4-mapped peer over as an Inet4Address
            return f"/{address.ipv4_mapped}"
        # Java's Inet6Address.getHostAddress: eight hex groups, no "::" compression, no leading zeros.
        groups = ":".join(f"{int(g, 16):x}" for g in address.exploded.split(":"))
        return f"/{groups}%{scope}" if scope else f"/{groups}"
    return f"/{address}"


def _has_partition(ctx: RequestContext, topic: str, partition: int) -> bool:
    info = ctx.broker.metadata.topic(topic)
    return info is not None and 0 <= partition < info.partitions


# ------------------------------------------------------------ FindCoordinator

async def handle_find_coordinator(ctx: RequestContext, req) -> dict:
    """A group's coordinator is the leader of its `__consumer_offsets` partition, a transactional id's that of
    its `__transaction_state` partition (key_type 1; the topic is created on first use, as in Kafka)."""
    broker = ctx.broker
    key_type = getattr(req, "key_type", GROUP_KEY_TYPE)
    ready = broker.ensure_offsets_topic() if key_type == GROUP_KEY_TYPE else broker.ensure_txn_state_topic()
    endpoints = {b.node_id: b for b in broker.metadata.brokers()}

    denied = authz.resource_errors(ctx, 10, authz.GROUP if key_type == GROUP_KEY_TYPE else authz.TRANSACTIONAL_ID,
                                   req.coordinator_keys if ctx.api_version >= 4 else [req.key],
                                   {GROUP_KEY if key_type == GROUP_KEY_TYPE else TRANSACTION_KEY})

    def entry(key: str) -> dict:
        if key in denied:
            return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": denied[key],
                    "error_message": None}
        state = None
        if key_type == GROUP_KEY_TYPE:
            state = broker.metadata.partition_state(OFFSETS_TOPIC, broker.group_coordinator.partition_for(key))
        elif ready:  # key_type 1: the leader of the id's __transaction_state partition
            state = broker.metadata.partition_state(TXN_STATE_TOPIC, broker.txn_coordinator.partition_for(key))
        leader = endpoints.get(state.leader) if state is not None else None
        if leader is None:
            return {"key": key, "node_id": -1, "host": "", "port": -1,
                    "error_code": ErrorCode.coordinator_not_available,
                    "error_message": "The coordinator is not available."}
        return {"key": key, "node_id": leader.node_id, "host": leader.host, "port": leader.port,
                "error_code": ErrorCode.none, "error_message": None}

    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": [entry(k) for k in req.coordinator_keys]}
    return {"throttle_time": 0, **entry(req.key)}


# ------------------------------------------------------------ JoinGroup / SyncGroup / Heartbeat / LeaveGroup

def _group_denied(ctx: RequestContext, api: int, group_id: str) -> ErrorCode:
    """GROUP_AUTHORIZATION_FAILED when the group's REQUEST-scope check fails (READ for membership APIs)."""
    return authz.request_error(ctx, api, names={authz.GROUP: group_id})


async def handle_join_group(ctx: RequestContext, req) -> dict:
    if denied := _group_denied(ctx, 11, req.group_id):
        return {"throttle_time": 0, "error_code": denied, "generation_id": -1, "member_id": "",
                "leader": "", "protocol_name": None if ctx.api_version >= 7 else "", "members": []}
    session_timeout = ms(req.session_timeout)
    # v0 has no rebalance timeout; Kafka uses the session timeout.
    rebalance_timeout = ms(getattr(req, "rebalance_timeout", req.session_timeout))
    result = await ctx.broker.group_coordinator.join_group(
        req.group_id, req.member_id, getattr(req, "group_instance_id", None), ctx.client_id or "",
        java_client_host(ctx.client_host), session_timeout, rebalance_timeout, req.protocol_type,
        [(p.name, bytes(p.metadata)) for p in req.protocols], require_known_member_id=ctx.api_version >= 4)
    members = result.members
    if result.skip_assignment and ctx.api_version < 9:
        # Before v9 a leader cannot be told to skip the assignment; it gets no members and keeps the old one.
        members = []
    return {
        "throttle_time": 0, "error_code": result.error, "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        # Nullable from v7 only; older versions need a string even on errors.
        "protocol_name": result.protocol_name if ctx.api_version >= 7 else result.protocol_name or "",
        "leader": result.leader_id, "skip_assignment": result.skip_assignment, "member_id": result.member_id,
        "members": [{"member_id": m, "group_instance_id": i, "metadata": meta} for m, i, meta in members],
    }


async def handle_sync_group(ctx: RequestContext, req) -> dict:
    if denied := _group_denied(ctx, 14, req.group_id):
        return {"throttle_time": 0, "error_code": denied, "assignment": b""}
    result = await ctx.broker.group_coordinator.sync_group(
        req.group_id, req.generation_id, req.member_id, getattr(req, "group_instance_id", None),
        getattr(req, "protocol_type", None), getattr(req, "protocol_name", None),
        [(a.member_id, bytes(a.assignment)) for a in req.assignments])
    return {"throttle_time": 0, "error_code": result.error, "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name, "assignment": result.assignment}


async def handle_heartbeat(ctx: RequestContext, req) -> dict:
    if denied := _group_denied(ctx, 12, req.group_id):
        return {"throttle_time": 0, "error_code": denied}
    error = ctx.broker.group_coordinator.heartbeat(req.group_id, req.generation_id, req.member_id,
                                                   getattr(req, "group_instance_id", None))
    return {"throttle_time": 0, "error_code": error}


async def handle_leave_group(ctx: RequestContext, req) -> dict:
    coordinator = ctx.broker.group_coordinator
    if denied := _group_denied(ctx, 13, req.group_id):
        return {"throttle_time": 0, "error_code": denied, "members": []}
    if ctx.api_version < 3:
        [error] = coordinator.leave_group(req.group_id, [(req.member_id, None)])
        return {"throttle_time": 0, "error_code": error}
    leaving = [(m.member_id, m.group_instance_id) for m in req.members]
    errors = coordinator.leave_group(req.group_id, leaving)
    return {"throttle_time": 0, "error_code": ErrorCode.none,
            "members": [{"member_id": m, "group_instance_id": i, "error_code": e}
                        for (m, i), e in zip(leaving, errors, strict=True)]}


# ------------------------------------------------------------ offsets

async def handle_offset_commit(ctx: RequestContext, req) -> dict:
    generation = getattr(req, "generation_id_or_member_epoch", None)
    if generation is None:
        generation = req.generation_id
    results: dict[tuple[str, int], ErrorCode] = {}
    offsets = []
    group_denied = _group_denied(ctx, 8, req.group_id)
    denied = authz.resource_errors(ctx, 8, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        for p in t.partitions:
            if group_denied or t.name in denied:
                results[(t.name, p.partition_index)] = group_denied or denied[t.name]
            elif not _has_partition(ctx, t.name, p.partition_index):
                results[(t.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                offsets.append((t.name, p.partition_index, p.committed_offset,
                                getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
    if offsets:
        coordinator = ctx.broker.group_coordinator
        committed = coordinator.commit_offsets(req.group_id, generation, req.member_id,
                                               getattr(req, "group_instance_id", None), offsets, ctx.api_version)
        results.update(committed)
        if any(e == ErrorCode.none for e in committed.values()):
            # As Kafka does, answer once the commit is replicated to the offsets partition's ISR.
            error = await coordinator.replicated(req.group_id, commit=True)
            if error != ErrorCode.none:
                results.update({tp: error for tp, e in committed.items() if e == ErrorCode.none})
    return {"throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": results[(t.name, p.partition_index)]}
                                        for p in t.partitions]}
        for t in req.topics]}


def _not_null(value, name: str):
    """kio decodes a null array count as None even where the schema forbids null; Kafka's generated reader
    refuses such a request ("non-nullable field ... was serialized as null") and closes the connection."""
    if value is None:
        raise InvalidRequest(f"non-nullable field {name} was serialized as null")
    return value


def _wanted(topics) -> list[tuple[str, int]] | None:
    """The partitions an OffsetFetch names; None for null topics (v2+; v8+ per group): every committed one."""
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in _not_null(t.partition_indexes, "partition_indexes")]


def _fetch_group(ctx: RequestContext, group_id: str, wanted: list[tuple[str, int]] | None,
                 member: tuple[str | None, int] = (None, -1), require_stable: bool = False) -> list[dict]:
    fetched = ctx.broker.group_coordinator.fetch_offsets(group_id, wanted, *member)
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), (offset, epoch, metadata) in fetched.items():
        if require_stable and ctx.broker.txn_offsets.has_pending(group_id, topic, partition):
            # KIP-447: an open transaction commits this offset; the client retries rather than resume from the
            # older one and read the transaction's input twice (Kafka's GroupMetadataManager.getOffsets).
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": "", "error_code": ErrorCode.unstable_offset_commit})
            continue
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": epoch,
             "metadata": metadata, "error_code": ErrorCode.none})
    return [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


async def handle_offset_fetch(ctx: RequestContext, req) -> dict:
    require_stable = ctx.api_version >= 7 and bool(req.require_stable)

    def group_entry(group_id: str, topics, member: tuple[str | None, int] = (None, -1)) -> dict:
        wanted = _wanted(topics)   # outside the try: an invalid request is not a per-group error
        if denied := authz.resource_errors(ctx, 9, authz.GROUP, [group_id]).get(group_id):
            return {"group_id": group_id, "topics": [], "error_code": denied}
        try:
            fetched = _fetch_group(ctx, group_id, wanted, member, require_stable)
            return {"group_id": group_id, "topics": authz.offset_fetch_topics(ctx, fetched, wanted is None),
                    "error_code": ErrorCode.none}
        except KafkaError as e:
            return {"group_id": group_id, "topics": [], "error_code": e.code}

    if ctx.api_version >= 8:
        groups = _not_null(req.groups, "groups")
        # v9: a consumer-protocol member names itself and its epoch (KIP-848).
        return {"throttle_time": 0, "groups": [
            group_entry(g.group_id, g.topics, (getattr(g, "member_id", None), getattr(g, "member_epoch", -1)))
            for g in groups]}
    topics = req.topics if ctx.api_version >= 2 else _not_null(req.topics, "topics")  # nullable from v2
    return {"throttle_time": 0, **group_entry(req.group_id, topics)}


async def handle_offset_delete(ctx: RequestContext, req) -> dict:
    if denied := _group_denied(ctx, 47, req.group_id):
        return {"error_code": denied, "throttle_time": 0, "topics": []}
    topic_denied = authz.resource_errors(ctx, 47, authz.TOPIC, (t.name for t in req.topics))
    partitions = [(t.name, p.partition_index) for t in req.topics for p in t.partitions
                  if t.name not in topic_denied]
    error, results = ctx.broker.group_coordinator.delete_offsets(req.group_id, partitions)
    results.update({(t.name, p.partition_index): topic_denied[t.name] for t in req.topics for p in t.partitions
                    if t.name in topic_denied})
    if error != ErrorCode.none:
        return {"error_code": error, "throttle_time": 0, "topics": []}
    return {"error_code": ErrorCode.none, "throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": results[(t.name, p.partition_index)]}
                                        for p in t.partitions]}
        for t in req.topics]}


# ------------------------------------------------------------ admin

async def handle_describe_groups(ctx: RequestContext, req) -> dict:
    coordinator = ctx.broker.group_coordinator
    groups = []
    denied = authz.resource_errors(ctx, 15, authz.GROUP, req.groups)
    for group_id in req.groups:
        if group_id in denied:
            groups.append({"error_code": denied[group_id], "group_id": group_id, "group_state": "",
                           "protocol_type": "", "protocol_data": "", "members": [],
                           "authorized_operations": NO_AUTHORIZED_OPERATIONS})
            continue
        d = coordinator.describe_group(group_id)
        entry = {"error_code": d.error, "error_message": None, "group_id": group_id, "group_state": d.state,
                 "protocol_type": d.protocol_type, "protocol_data": d.protocol,
                 "authorized_operations": NO_AUTHORIZED_OPERATIONS,
                 "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                              "client_id": m.client_id, "client_host": m.client_host,
                              "member_metadata": m.metadata, "member_assignment": m.assignment}
                             for m in d.members]}
        if ctx.api_version >= 6 and d.state == "Dead" and not d.members:
            # Kafka 4 (KIP-1043): v6 reports unknown groups as GROUP_ID_NOT_FOUND instead of a Dead group.
            entry.update(error_code=ErrorCode.group_id_not_found, error_message=f"Group {group_id} not found.")
        if authz.enabled(ctx) and getattr(req, "include_authorized_operations", False):
            entry["authorized_operations"] = authz.authorized_operations(ctx, authz.GROUP, group_id)
        groups.append(entry)
    return {"throttle_time": 0, "groups": groups}


async def handle_list_groups(ctx: RequestContext, req) -> dict:
    types = {t.lower() for t in getattr(req, "types_filter", ()) or ()}
    listed = ctx.broker.group_coordinator.list_typed_groups(list(getattr(req, "states_filter", ()) or ()) or None)
    listed = [g for g in listed if not types or g[3] in types]   # KIP-848 GroupType: classic, consumer
    if authz.enabled(ctx):  # without DESCRIBE on the cluster, only the groups it may describe
        shown = set(authz.visible(ctx, 16, authz.GROUP, (g for g, *_ in listed)))
        listed = [g for g in listed if g[0] in shown]
    return {"throttle_time": 0, "error_code": ErrorCode.none, "groups": [
        {"group_id": g, "protocol_type": ptype, "group_state": state, "group_type": kind}
        for g, ptype, state, kind in listed]}


async def handle_delete_groups(ctx: RequestContext, req) -> dict:
    denied = authz.resource_errors(ctx, 42, authz.GROUP, req.groups_names)
    results = ctx.broker.group_coordinator.delete_groups([g for g in req.groups_names if g not in denied])
    results.update(denied)
    return {"throttle_time": 0,
            "results": [{"group_id": g, "error_code": results[g]} for g in req.groups_names]}


APIS = (
    ApiSpec(10, 0, 6, handle_find_coordinator),
    ApiSpec(11, 0, 9, handle_join_group),
    ApiSpec(14, 0, 5, handle_sync_group),
    ApiSpec(12, 0, 4, handle_heartbeat),
    ApiSpec(13, 0, 5, handle_leave_group),
    ApiSpec(8, 2, 9, handle_offset_commit),
    ApiSpec(9, 1, 9, handle_offset_fetch),
    ApiSpec(47, 0, 0, handle_offset_delete),
    ApiSpec(15, 0, 6, handle_describe_groups),
    ApiSpec(16, 0, 5, handle_list_groups),
    ApiSpec(42, 0, 2, handle_delete_groups),
)
