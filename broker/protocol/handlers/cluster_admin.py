"""Cluster administration: ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

The metadata answers them (`MetadataStore.elect_leaders`, `alter_reassignments`, `reassignments`): in cluster
mode ElectLeaders runs on the controller (NOT_CONTROLLER elsewhere, as Kafka's clients send it to the
controller) and reassignments are written to ZooKeeper by any broker and completed by the controller; a
standalone broker answers as a single-broker cluster would.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext

_DEFAULT_TIMEOUT_S = 30.0


def _timeout_s(req) -> float:
    t = getattr(req, "timeout", None)
    if t is None:
        return _DEFAULT_TIMEOUT_S
    try:
        return max(0.1, t.total_seconds())
    except AttributeError:
        return max(0.1, float(t) / 1000)


async def handle_elect_leaders(ctx: RequestContext, req) -> dict:
    wanted = None
    if req.topic_partitions is not None:
        wanted = [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    election_type = getattr(req, "election_type", 0)
    top = ErrorCode.none
    results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    try:
        if denied := authz.request_error(ctx, 43):
            raise KafkaError(denied)
        results = await ctx.broker.metadata.elect_leaders(election_type, wanted, _timeout_s(req))
    except KafkaError as e:
        top = e.code
        results = {k: (e.code, e.message) for k in wanted or []}
    except TimeoutError:
        top = ErrorCode.request_timed_out
        results = {k: (ErrorCode.request_timed_out, None) for k in wanted or []}
    by_topic: dict[str, list[dict]] = {}
    for (t, p), (code, msg) in sorted(results.items()):
        by_topic.setdefault(t, []).append({"partition_id": p, "error_code": code, "error_message": msg})
    return {"throttle_time": 0, "error_code": top,
            "replica_election_results": [{"topic": t, "partition_result": parts} for t, parts in by_topic.items()]}


async def handle_alter_partition_reassignments(ctx: RequestContext, req) -> dict:
    targets = {(t.name, p.partition_index): (tuple(p.replicas) if p.replicas is not None else None)
               for t in req.topics for p in t.partitions}
    allow_rf_change = getattr(req, "allow_replication_factor_change", True)
    if denied := authz.request_error(ctx, 45):
        return {"throttle_time": 0, "error_code": denied, "error_message": None,
                "allow_replication_factor_change": allow_rf_change, "responses": []}
    results = ctx.broker.metadata.alter_reassignments(targets, allow_rf_change)
    by_topic: dict[str, list[dict]] = {}
    for (t, p), (code, msg) in sorted(results.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "error_code": code, "error_message": msg})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "allow_replication_factor_change": allow_rf_change,
            "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]}


async def handle_list_partition_reassignments(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, 46):
        return {"throttle_time": 0, "error_code": denied, "error_message": None, "topics": []}
    ongoing = ctx.broker.metadata.reassignments()
    if req.topics is not None:
        wanted = {(t.name, p) for t in req.topics for p in t.partition_indexes}
        ongoing = {k: v for k, v in ongoing.items() if k in wanted}
    by_topic: dict[str, list[dict]] = {}
    for (t, p), (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "replicas": list(replicas),
                                           "adding_replicas": list(adding), "removing_replicas": list(removing)})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]}


APIS = (
    ApiSpec(43, 0, 2, handle_elect_leaders),
    ApiSpec(45, 0, 1, handle_alter_partition_reassignments),
    ApiSpec(46, 0, 0, handle_list_partition_reassignments),
)
