"""Cluster administration: ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

They need cluster mode (`broker.metadata` a ZkMetadata); standalone brokers answer with Kafka's errors for a
single-broker cluster. ElectLeaders runs on the controller (NOT_CONTROLLER elsewhere, as Kafka's clients send
it to the controller); reassignments are written to ZooKeeper by any broker and completed by the controller.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.protocol.api import RequestContext, handler

_DEFAULT_TIMEOUT_S = 30.0


def _timeout_s(req) -> float:
    t = getattr(req, "timeout", None)
    try:
        return max(0.1, t.total_seconds()) if t is not None else _DEFAULT_TIMEOUT_S
    except AttributeError:
        return max(0.1, float(t) / 1000)


def _cluster(ctx: RequestContext):
    md = ctx.broker.metadata
    return md if hasattr(md, "alter_reassignments") else None


@handler(43, 0, 2)
async def handle_elect_leaders(ctx: RequestContext, req) -> dict:
    md = _cluster(ctx)
    wanted = None
    if req.topic_partitions is not None:
        wanted = [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    election_type = getattr(req, "election_type", 0)
    top = ErrorCode.none
    results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    try:
        if md is None:
            # Standalone: one replica per partition, its leader is always the preferred one.
            for t, p in wanted or []:
                known = ctx.broker.metadata.partition_state(t, p) is not None
                results[(t, p)] = ((ErrorCode.election_not_needed, None) if known
                                   else (ErrorCode.unknown_topic_or_partition, None))
        else:
            results = await md.elect_leaders(election_type, wanted, _timeout_s(req))
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


@handler(45, 0, 1)
async def handle_alter_partition_reassignments(ctx: RequestContext, req) -> dict:
    md = _cluster(ctx)
    targets = {(t.name, p.partition_index): (tuple(p.replicas) if p.replicas is not None else None)
               for t in req.topics for p in t.partitions}
    allow_rf_change = getattr(req, "allow_replication_factor_change", True)
    results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    if md is None:
        results = {k: (ErrorCode.invalid_replica_assignment, "Reassignment needs cluster mode") for k in targets}
    else:
        send = {}
        for (t, p), replicas in targets.items():
            current = md.partition_state(t, p)
            if (not allow_rf_change and replicas is not None and current is not None
                    and len(replicas) != len(md.assignment(t).target(p))):
                results[(t, p)] = (ErrorCode.invalid_replication_factor,
                                   "The replication factor is changed from "
                                   f"{len(md.assignment(t).target(p))} to {len(replicas)}")
            else:
                send[(t, p)] = replicas
        if send:
            results.update(md.alter_reassignments(send))
    by_topic: dict[str, list[dict]] = {}
    for (t, p), (code, msg) in sorted(results.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "error_code": code, "error_message": msg})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "allow_replication_factor_change": allow_rf_change,
            "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]}


@handler(46, 0, 0)
async def handle_list_partition_reassignments(ctx: RequestContext, req) -> dict:
    md = _cluster(ctx)
    ongoing = md.reassignments() if md is not None else {}
    if req.topics is not None:
        wanted = {(t.name, p) for t in req.topics for p in t.partition_indexes}
        ongoing = {k: v for k, v in ongoing.items() if k in wanted}
    by_topic: dict[str, list[dict]] = {}
    for (t, p), (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "replicas": list(replicas),
                                           "adding_replicas": list(adding), "removing_replicas": list(removing)})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]}
