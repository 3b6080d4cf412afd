"""Metadata (3) and DescribeCluster (60)."""

from broker.errors import ErrorCode, KafkaError
from broker.metadata import TopicInfo
from broker.protocol.api import RequestContext, handler

LEADER_EPOCH = 0


def _brokers(ctx: RequestContext) -> list[dict]:
    return [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in ctx.broker.metadata.brokers()]


def _topic_entry(ctx: RequestContext, info: TopicInfo) -> dict:
    me = ctx.broker.node_id
    return {
        "error_code": ErrorCode.none, "name": info.name, "topic_id": info.topic_id, "is_internal": info.internal,
        "topic_authorized_operations": -2147483648,
        "partitions": [
            {"error_code": ErrorCode.none, "partition_index": p, "leader_id": me, "leader_epoch": LEADER_EPOCH,
             "replica_nodes": [me], "isr_nodes": [me], "offline_replicas": []}
            for p in range(info.partitions)
        ],
    }


def _error_entry(name: str | None, code: ErrorCode) -> dict:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": [],
            "topic_authorized_operations": -2147483648}


@handler(3, 0, 12)
async def handle_metadata(ctx: RequestContext, req) -> dict:
    broker = ctx.broker
    requested = req.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        entries = [_topic_entry(ctx, t) for t in broker.metadata.topics().values()]
    else:
        auto = getattr(req, "allow_auto_topic_creation", True)
        entries = []
        for t in requested:
            name = t.name
            info = broker.metadata.topic(name) if name else None
            if info is None and name and auto:
                try:
                    info = broker.auto_create(name)
                except KafkaError as e:
                    entries.append(_error_entry(name, e.code))
                    continue
            if info is None:
                entries.append(_error_entry(name, ErrorCode.unknown_topic_or_partition))
            else:
                entries.append(_topic_entry(ctx, info))
    return {
        "throttle_time": 0, "brokers": _brokers(ctx), "cluster_id": broker.metadata.cluster_id,
        "controller_id": broker.metadata.controller_id, "topics": entries,
        "cluster_authorized_operations": -2147483648,
    }


@handler(60, 0, 1)
async def handle_describe_cluster(ctx: RequestContext, req) -> dict:
    return {
        "throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "endpoint_type": 1,
        "cluster_id": ctx.broker.metadata.cluster_id, "controller_id": ctx.broker.metadata.controller_id,
        "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                    for b in _brokers(ctx)],
        "cluster_authorized_operations": -2147483648,
    }
