"""Metadata (3) and DescribeCluster (60).

A topic's Metadata entry is encoded once per version (protocol/metadata_encoder.py) and kept until the topic's
generation (MetadataStore.topic_generation: its assignment or a partition state changed), its id or the live
brokers change: a client's refresh of all topics then costs a lookup per topic instead of building and encoding
every partition (12 µs each with kio, 115 ms at 10,000 partitions). Kafka's brokers answer from the
MetadataCache's UpdateMetadata snapshot likewise, without rebuilding it per request.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Set
from typing import TYPE_CHECKING

from broker.errors import ErrorCode, InvalidRequest, KafkaError
from broker.metadata import TopicInfo
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.metadata_encoder import topic_entry
from broker.security.acl import AclOperation
from broker.security.operations import ALL_TOPICS, AUTO_CREATE, LISTED_TOPICS

if TYPE_CHECKING:
    from broker.broker import Broker

Offline = Mapping[tuple[str, int], Set[int]]   # partition -> brokers whose live replica of it is offline


class EncodedTopics:
    """Encoded topic entries by (topic, version), each with the key it was encoded under."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, int], tuple[tuple, bytes]] = {}

    def entry(self, ctx: RequestContext, info: TopicInfo, live: set[int], live_key: tuple,
              topic_count: int, offline: Offline) -> bytes:
        # The generation is read before the entry is built: a change meanwhile makes the next request rebuild.
        key = (info.topic_id, info.partitions, ctx.broker.metadata.topic_generation(info.name), live_key)
        at = (info.name, ctx.api_version)
        kept = self._entries.get(at)
        if kept is not None and kept[0] == key:
            return kept[1]
        data = topic_entry(ctx.api_version, _topic_entry(ctx, info, live, offline))
        if len(self._entries) > 4 * topic_count + 64:  # deleted topics, versions no longer asked for
            self._entries.clear()
        self._entries[at] = (key, data)
        return data


_encoded: weakref.WeakKeyDictionary[Broker, EncodedTopics] = weakref.WeakKeyDictionary()


def _encoded_topics(broker: Broker) -> EncodedTopics:
    enc = _encoded.get(broker)
    if enc is None:
        enc = _encoded[broker] = EncodedTopics()
    return enc


def _brokers(ctx: RequestContext) -> list[dict]:
    return [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in ctx.broker.metadata.brokers()]


def _partition_entry(ctx: RequestContext, topic: str, partition: int, live: set[int], offline: Offline) -> dict:
    state = ctx.broker.metadata.partition_state(topic, partition)
    if state is None:  # the controller has not created the partition's state yet
        return {"error_code": ErrorCode.leader_not_available, "partition_index": partition, "leader_id": -1,
                "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [], "offline_replicas": []}
    return {"error_code": ErrorCode.none if state.online else ErrorCode.leader_not_available,
            "partition_index": partition, "leader_id": state.leader, "leader_epoch": state.leader_epoch,
            "replica_nodes": list(state.replicas), "isr_nodes": list(state.isr),
            "offline_replicas": [r for r in state.replicas
                                 if r not in live or r in offline.get((topic, partition), ())]}


def _topic_entry(ctx: RequestContext, info: TopicInfo, live: set[int], offline: Offline) -> dict:
    return {
        "error_code": ErrorCode.none, "name": info.name, "topic_id": info.topic_id, "is_internal": info.internal,
        "topic_authorized_operations": -2147483648,
        "partitions": [_partition_entry(ctx, info.name, p, live, offline) for p in range(info.partitions)],
    }


def _error_entry(name: str | None, code: ErrorCode) -> dict:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": [],
            "topic_authorized_operations": -2147483648}


async def handle_metadata(ctx: RequestContext, req) -> dict:
    broker = ctx.broker
    brokers = _brokers(ctx)
    live = {b["node_id"] for b in brokers}
    # Replicas offline on live brokers (a failed log dir): listed offline too, as Kafka's UpdateMetadata has them.
    offline = broker.metadata.offline_replicas()
    requested = req.topics
    # Per-principal authorized operations go into the entries: those are built afresh, not kept.
    ops = authz.enabled(ctx) and getattr(req, "include_topic_authorized_operations", False)
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = broker.metadata.topics()
        visible = authz.visible(ctx, 3, authz.TOPIC, topics, {ALL_TOPICS})
        if ops:
            entries: list[dict | bytes] = [_topic_entry(ctx, topics[n], live, offline) for n in visible]
        else:
            enc = _encoded_topics(broker)
            live_key = (tuple(sorted(live)), tuple(sorted((k, tuple(sorted(v))) for k, v in offline.items())))
            entries = [enc.entry(ctx, topics[n], live, live_key, len(topics), offline) for n in visible]
    else:
        auto = getattr(req, "allow_auto_topic_creation", True)
        entries = []
        denied = authz.resource_errors(ctx, 3, authz.TOPIC, (t.name for t in requested if t.name), {LISTED_TOPICS})
        for t in requested:
            name = t.name
            if name is None and ctx.api_version < 12:  # v10-11 carry ids in the schema but not in Kafka
                raise InvalidRequest(f"topic name can not be null for version {ctx.api_version}")
            if name is None:
                entries.append(_by_topic_id(ctx, t.topic_id, live, offline))
                continue
            if name in denied:  # not describable: the same answer whether it exists or not
                entries.append(_error_entry(name, denied[name]))
                continue
            info = broker.metadata.topic(name) if name else None
            if info is None and name and auto and (code := _create_denied(ctx, name)):
                entries.append(_error_entry(name, code))
                continue
            if info is None and name and auto:
                try:
                    info = broker.auto_create(name)
                except KafkaError as e:
                    entries.append(_error_entry(name, e.code))
                    continue
            if info is None:
                entries.append(_error_entry(name, ErrorCode.unknown_topic_or_partition))
            else:
                entries.append(_topic_entry(ctx, info, live, offline))
    return {
        "throttle_time": 0, "brokers": brokers, "cluster_id": broker.metadata.cluster_id,
        "controller_id": broker.metadata.controller_id, "topics": _with_operations(ctx, req, entries),
        "cluster_authorized_operations": _cluster_operations(ctx, req),
    }


def _by_topic_id(ctx: RequestContext, topic_id, live: set[int], offline: Offline) -> dict:
    """v12+ asks by topic id when the name is null (KIP-516), as librdkafka's KIP-848 consumer does for the
    topic ids of its assignment; Kafka checks DESCRIBE on the topic the id names and hides the name if denied."""
    info = next((i for i in ctx.broker.metadata.topics().values() if i.topic_id == topic_id), None)
    if info is None:
        return {**_error_entry(None, ErrorCode.unknown_topic_id), "topic_id": topic_id}
    if code := authz.resource_errors(ctx, 3, authz.TOPIC, [info.name], {LISTED_TOPICS}).get(info.name):
        return {**_error_entry(None, code), "topic_id": topic_id}
    return _topic_entry(ctx, info, live, offline)


def _create_denied(ctx: RequestContext, name: str) -> ErrorCode:
    """Auto-creation needs CREATE on the cluster, else on the topic (TOPIC_AUTHORIZATION_FAILED)."""
    return authz.resource_errors(ctx, 3, authz.TOPIC, [name], {AUTO_CREATE}).get(name, ErrorCode.none)


def _with_operations(ctx: RequestContext, req, entries: list[dict | bytes]) -> list[dict | bytes]:
    """topic_authorized_operations when asked (v8+), with an authorizer; unchanged otherwise (then entries may
    be encoded bytes, which carry the "not asked" value)."""
    if authz.enabled(ctx) and getattr(req, "include_topic_authorized_operations", False):
        for e in entries:
            if isinstance(e, dict) and e["error_code"] == ErrorCode.none:
                e["topic_authorized_operations"] = authz.authorized_operations(ctx, authz.TOPIC, e["name"])
    return entries


def _cluster_operations(ctx: RequestContext, req) -> int:
    """cluster_authorized_operations when asked (v8-10), with an authorizer and DESCRIBE on the cluster."""
    if not (authz.enabled(ctx) and getattr(req, "include_cluster_authorized_operations", False)):
        return authz.NO_AUTHORIZED_OPERATIONS
    if not authz.allowed(ctx, authz.CLUSTER, AclOperation.DESCRIBE):
        return 0
    return authz.authorized_operations(ctx, authz.CLUSTER)


async def handle_describe_cluster(ctx: RequestContext, req) -> dict:
    return {
        "throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "endpoint_type": 1,
        "cluster_id": ctx.broker.metadata.cluster_id, "controller_id": ctx.broker.metadata.controller_id,
        "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                    for b in _brokers(ctx)],
        "cluster_authorized_operations": _cluster_operations(ctx, req),
    }


APIS = (
    ApiSpec(3, 0, 12, handle_metadata),
    ApiSpec(60, 0, 1, handle_describe_cluster),
)
