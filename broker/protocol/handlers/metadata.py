"""Metadata (3) and DescribeCluster (60)."""

from broker.errors import ErrorCode, InvalidRequest, KafkaError
from broker.metadata import TopicInfo
from broker.protocol.api import ApiSpec, RequestContext


def _brokers(ctx: RequestContext) -> list[dict]:
    return [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in ctx.broker.metadata.brokers()]


def _partition_entry(ctx: RequestContext, topic: str, partition: int, live: set[int]) -> dict:
    state = ctx.broker.metadata.partition_state(topic, partition)
    if state is None:  # the controller has not created the partition's state yet
        return {"error_code": ErrorCode.leader_not_available, "partition_index": partition, "leader_id": -1,
                "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [], "offline_replicas": []}
    return {"error_code": ErrorCode.none if state.online else ErrorCode.leader_not_available,
            "partition_index": partition, "leader_id": state.leader, "leader_epoch": state.leader_epoch,
            "replica_nodes": list(state.replicas), "isr_nodes": list(state.isr),
            "offline_replicas": [r for r in state.replicas if r not in live]}


def _topic_entry(ctx: RequestContext, info: TopicInfo, live: set[int]) -> dict:
    return {
        "error_code": ErrorCode.none, "name": info.name, "topic_id": info.topic_id, "is_internal": info.internal,
        "topic_authorized_operations": -2147483648,
        "partitions": [_partition_entry(ctx, info.name, p, live) for p in range(info.partitions)],
    }


def _error_entry(name: str | None, code: ErrorCode) -> dict:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": [],
            "topic_authorized_operations": -2147483648}


async def handle_metadata(ctx: RequestContext, req) -> dict:
    broker = ctx.broker
    brokers = _brokers(ctx)
    live = {b["node_id"] for b in brokers}
    requested = req.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        entries = [_topic_entry(ctx, t, live) for t in broker.metadata.topics().values()]
    else:
        auto = getattr(req, "allow_auto_topic_creation", True)
        entries = []
        for t in requested:
            name = t.name
            if name is None and ctx.api_version < 12:  # v10-11 carry ids in the schema but not in Kafka
                raise InvalidRequest(f"topic name can not be null for version {ctx.api_version}")
            info = broker.metadata.topic(name) if name else None
            if info is None and name and auto:
                try:
                    info = broker.auto_create(name)
                except KafkaError as e:
                    entries.append(_error_entry(name, e.code))
                    continue
            if info is None:  # a null name asks by topic id, which this broker does not serve
                code = ErrorCode.unknown_topic_or_partition if name is not None else ErrorCode.unknown_topic_id
                entries.append(_error_entry(name, code))
            else:
                entries.append(_topic_entry(ctx, info, live))
    return {
        "throttle_time": 0, "brokers": brokers, "cluster_id": broker.metadata.cluster_id,
        "controller_id": broker.metadata.controller_id, "topics": entries,
        "cluster_authorized_operations": -2147483648,
    }


async def handle_describe_cluster(ctx: RequestContext, req) -> dict:
    return {
        "throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "endpoint_type": 1,
        "cluster_id": ctx.broker.metadata.cluster_id, "controller_id": ctx.broker.metadata.controller_id,
        "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                    for b in _brokers(ctx)],
        "cluster_authorized_operations": -2147483648,
    }


APIS = (
    ApiSpec(3, 0, 12, handle_metadata),
    ApiSpec(60, 0, 1, handle_describe_cluster),
)
