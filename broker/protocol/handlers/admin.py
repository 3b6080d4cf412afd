"""Topic and config administration: CreateTopics (19), DeleteTopics (20), CreatePartitions (37),
DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44); group resources in group_configs.py."""

from collections.abc import Mapping
from typing import Any

from broker.broker_configs import DEFAULT as DEFAULT_BROKER
from broker.config import TOPIC_CONFIGS, ConfigError, default_synonym, validate_topic_configs
from broker.errors import ErrorCode, KafkaError
from broker.metadata import INTERNAL_TOPICS, validate_topic_name
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.codec import ms
from broker.protocol.handlers import broker_configs, group_configs
from broker.protocol.handlers.config_values import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    STATIC_BROKER_CONFIG,
)
from broker.security.acl import AclOperation

TOPIC, BROKER, GROUP = 2, 4, 32
# DescribeConfigs config_source values
_SOURCES = {"topic": DYNAMIC_TOPIC_CONFIG, "dynamic_broker": DYNAMIC_BROKER_CONFIG,
            "dynamic_default": DYNAMIC_DEFAULT_BROKER_CONFIG, "static_broker": STATIC_BROKER_CONFIG,
            "default": DEFAULT_CONFIG}
# DescribeConfigs config_type values (v3+)
_TYPE_STRING, _TYPE_INT, _TYPE_LONG, _TYPE_DOUBLE, _TYPE_LIST, _TYPE_BOOLEAN = 2, 3, 5, 6, 7, 1
_CONFIG_TYPES = {"cleanup.policy": _TYPE_LIST, "min.cleanable.dirty.ratio": _TYPE_DOUBLE,
                 "unclean.leader.election.enable": _TYPE_BOOLEAN, "message.timestamp.type": _TYPE_STRING,
                 "compression.type": _TYPE_STRING, "min.insync.replicas": _TYPE_INT,
                 "max.message.bytes": _TYPE_INT, "segment.bytes": _TYPE_INT, "index.interval.bytes": _TYPE_INT,
                 "segment.index.bytes": _TYPE_INT, "leader.replication.throttled.replicas": _TYPE_LIST,
                 "follower.replication.throttled.replicas": _TYPE_LIST}
# Kafka's KRaft controller refuses a CreateTopics that would make more partitions than this in one request
# (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH, POLICY_VIOLATION) and bounds a CreatePartitions by the
# same number of records (QuorumController.MAX_RECORDS_PER_USER_OP); we refuse both up front, so a request for
# 2**31 - 1 partitions is answered at once instead of building an assignment of that size.
MAX_PARTITIONS_PER_BATCH = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def _config_error(e: ConfigError) -> KafkaError:
    return KafkaError(ErrorCode.invalid_config, str(e))


def _checked_assignment(ctx: RequestContext, assignment: dict[int, tuple[int, ...]],
                        partitions: range) -> dict[int, tuple[int, ...]]:
    """A manual replica assignment: every partition listed once, same replication factor, live brokers."""
    live = {b.node_id for b in ctx.broker.metadata.brokers()}
    if sorted(assignment) != list(partitions):
        raise KafkaError(ErrorCode.invalid_replica_assignment, "Partitions must be consecutive and start at 0")
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise KafkaError(ErrorCode.invalid_replica_assignment, "All partitions need the same, non-zero number "
                         "of replicas")
    for p, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise KafkaError(ErrorCode.invalid_replica_assignment, f"Duplicate brokers in partition {p}")
        unknown = set(replicas) - live
        if unknown:
            raise KafkaError(ErrorCode.invalid_replica_assignment,
                             f"Unknown broker(s) {sorted(unknown)} in the assignment of partition {p}")
    return {p: tuple(r) for p, r in assignment.items()}


def partitions_to_create(topics, default_partitions: int) -> int:
    """New partitions a CreateTopics asks for, counted as Kafka's validateTotalNumberOfPartitions does."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default_partitions
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def partitions_to_add(topics, current: Mapping[str, int]) -> int:
    """New partitions a CreatePartitions asks for (`current`: the partition counts of the existing topics)."""
    return sum(max(0, t.count - current[t.name]) for t in topics if t.name in current)


async def handle_create_topics(ctx: RequestContext, req) -> dict:
    broker = ctx.broker
    too_many = partitions_to_create(req.topics, broker.config.num_partitions) > MAX_PARTITIONS_PER_BATCH
    denied = authz.resource_errors(ctx, 19, authz.TOPIC, (t.name for t in req.topics), only=AclOperation.CREATE)
    no_configs = authz.resource_errors(ctx, 19, authz.TOPIC, (t.name for t in req.topics),
                                       only=AclOperation.DESCRIBE_CONFIGS)
    results = []
    quota = broker.quotas.mutation_quota(ctx)   # KIP-599: partitions created per second
    for t in req.topics:
        entry = {"name": t.name, "topic_id": None, "error_code": ErrorCode.none, "error_message": None,
                 "num_partitions": -1, "replication_factor": -1, "configs": None}
        if too_many:  # every topic of the request fails, as Kafka's controller fails the whole request
            entry.update(error_code=ErrorCode.policy_violation, error_message=_TOO_MANY_PARTITIONS)
            results.append(entry)
            continue
        try:
            authz.raise_if_denied(denied, t.name)
            validate_topic_name(t.name)
            assignment = None
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError(ErrorCode.invalid_request, "Both numPartitions or replicationFactor and "
                                     "replicasAssignments were set. Both cannot be used at the same time.")
                assignment = _checked_assignment(ctx, {a.partition_index: a.broker_ids for a in t.assignments},
                                                 range(len(t.assignments)))
            try:
                configs = validate_topic_configs({c.name: c.value for c in t.configs if c.value is not None})
            except ConfigError as e:
                raise _config_error(e) from None
            if req.validate_only:
                if broker.metadata.topic(t.name):
                    raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{t.name}' already exists.")
                parts = broker.config.num_partitions if t.num_partitions == -1 else t.num_partitions
                entry.update(num_partitions=parts, replication_factor=max(t.replication_factor, 1))
            else:
                if quota is not None:
                    if broker.metadata.topic(t.name):   # refused before it takes the quota, as Kafka's
                        raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{t.name}' already exists.")
                    quota.record(len(assignment) if assignment else
                                 broker.config.num_partitions if t.num_partitions == -1 else t.num_partitions)
                info = broker.create_topic(t.name, t.num_partitions, t.replication_factor, configs, assignment)
                if not await broker.metadata.wait_online(t.name, max(ms(req.timeout), 0) / 1000):
                    raise KafkaError(ErrorCode.request_timed_out,
                                     f"Topic {t.name} was created but its leaders were not elected in time")
                entry.update(topic_id=info.topic_id, num_partitions=info.partitions,
                             replication_factor=info.replication_factor,
                             configs=_describe_topic_configs(ctx, t.name, None))
                if t.name in no_configs:  # created, but its configs are not the principal's to see
                    entry.update(configs=None, topic_config_error_code=no_configs[t.name])
        except KafkaError as e:
            entry.update(error_code=e.code, error_message=e.message)
        results.append(entry)
    broker.quotas.mutation_done(ctx, quota)
    return {"throttle_time": ctx.throttle_ms, "topics": results}


async def handle_delete_topics(ctx: RequestContext, req) -> dict:
    broker = ctx.broker
    names = list(getattr(req, "topic_names", ()) or ())
    states = [(t.name, getattr(t, "topic_id", None)) for t in getattr(req, "topics", ()) or ()]
    states += [(n, None) for n in names]
    results = []
    quota = broker.quotas.mutation_quota(ctx)   # KIP-599: partitions deleted per second
    for name, topic_id in states:
        entry = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.none, "error_message": None}
        try:
            if name is None and topic_id is not None:
                name = next((t.name for t in broker.metadata.topics().values() if t.topic_id == topic_id), None)
                entry["name"] = name
                if name is None:
                    raise KafkaError(ErrorCode.unknown_topic_id)
            authz.raise_if_denied(authz.resource_errors(ctx, 20, authz.TOPIC, [name]), name)
            if not broker.config.delete_topic_enable:
                raise KafkaError(ErrorCode.topic_deletion_disabled)
            if name in INTERNAL_TOPICS:
                raise KafkaError(ErrorCode.invalid_request, f"Cannot delete internal topic {name}")
            info = broker.metadata.topic(name)
            if info is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition)
            entry["topic_id"] = info.topic_id
            if quota is not None:
                quota.record(info.partitions)
            broker.delete_topic(name)
            if not await broker.metadata.wait_deleted(name, max(ms(req.timeout), 0) / 1000):
                raise KafkaError(ErrorCode.request_timed_out, f"Topic {name} is marked for deletion")
        except KafkaError as e:
            entry.update(error_code=e.code, error_message=e.message)
        results.append(entry)
    broker.quotas.mutation_done(ctx, quota)
    return {"throttle_time": ctx.throttle_ms, "responses": results, "topic_names": [r["name"] for r in results]}


async def handle_create_partitions(ctx: RequestContext, req) -> dict:
    current = {t.name: info.partitions for t in req.topics if (info := ctx.broker.metadata.topic(t.name))}
    too_many = partitions_to_add(req.topics, current) > MAX_PARTITIONS_PER_BATCH
    results = []
    quota = ctx.broker.quotas.mutation_quota(ctx)   # KIP-599: partitions created per second
    denied = authz.resource_errors(ctx, 37, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        entry = {"name": t.name, "error_code": ErrorCode.none, "error_message": None}
        if t.name in denied:
            entry["error_code"] = denied[t.name]
            results.append(entry)
            continue
        if too_many:
            entry.update(error_code=ErrorCode.policy_violation, error_message=_TOO_MANY_PARTITIONS)
            results.append(entry)
            continue
        try:
            info = ctx.broker.metadata.topic(t.name)
            if info is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition)
            if t.count <= info.partitions:
                raise KafkaError(ErrorCode.invalid_partitions,
                                 f"Topic currently has {info.partitions} partitions, "
                                 f"{t.count} would not be an increase.")
            assignment = None
            if t.assignments:
                new = range(info.partitions, t.count)
                if len(t.assignments) != len(new):
                    raise KafkaError(ErrorCode.invalid_replica_assignment,
                                     f"Increasing the number of partitions by {len(new)} but {len(t.assignments)} "
                                     "assignments provided.")
                assignment = _checked_assignment(ctx, {p: a.broker_ids for p, a in zip(new, t.assignments,
                                                                                      strict=True)}, new)
            if not req.validate_only:
                if quota is not None:
                    quota.record(t.count - info.partitions)
                ctx.broker.add_partitions(t.name, t.count, assignment)
        except KafkaError as e:
            entry.update(error_code=e.code, error_message=e.message)
        results.append(entry)
    ctx.broker.quotas.mutation_done(ctx, quota)
    return {"throttle_time": ctx.throttle_ms, "results": results}


# ------------------------------------------------------------------ configs

def _describe_topic_configs(ctx: RequestContext, topic: str, keys, synonyms: bool = False) -> list[dict]:
    info = ctx.broker.metadata.topic(topic)
    if info is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition)
    out = []
    for name, spec in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        value, source = ctx.broker.config.topic_config_source(name, info.configs, ctx.broker.dynamic_topic_defaults)
        entry: dict[str, Any] = {"name": name, "value": value, "read_only": False, "config_source": _SOURCES[source],
                 "is_sensitive": False, "synonyms": [], "config_type": _CONFIG_TYPES.get(name, _TYPE_LONG),
                 "documentation": None}
        if synonyms:
            if source == "topic":
                entry["synonyms"].append({"name": name, "value": value, "source": DYNAMIC_TOPIC_CONFIG})
            if spec.broker_key:   # this broker's dynamic value, then the cluster default's, as Kafka lists them
                store = ctx.broker.metadata.broker_configs()
                for entity, layer in ((str(ctx.broker.node_id), DYNAMIC_BROKER_CONFIG),
                                      (DEFAULT_BROKER, DYNAMIC_DEFAULT_BROKER_CONFIG)):
                    if (dynamic := store.get(entity).get(spec.broker_key)) is not None:
                        entry["synonyms"].append({"name": spec.broker_key, "value": dynamic, "source": layer})
            if spec.broker_key and name in ctx.broker.config.topic_defaults:
                entry["synonyms"].append({"name": spec.broker_key, "value": ctx.broker.config.topic_defaults[name],
                                          "source": STATIC_BROKER_CONFIG})
            if spec.broker_key:   # a key without a broker synonym has none (ConfigHelper.createTopicConfigEntry)
                default_key, default_value = default_synonym(spec)
                entry["synonyms"].append({"name": default_key, "value": default_value, "source": DEFAULT_CONFIG})
        out.append(entry)
    return out


async def handle_describe_configs(ctx: RequestContext, req) -> dict:
    results = []
    synonyms = getattr(req, "include_synonyms", False)
    for r in req.resources:
        entry = {"error_code": ErrorCode.none, "error_message": None, "resource_type": r.resource_type,
                 "resource_name": r.resource_name, "configs": []}
        keys = set(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            authz.config_resource_error(ctx, 32, r.resource_type, r.resource_name)
            if r.resource_type == TOPIC:
                entry["configs"] = _describe_topic_configs(ctx, r.resource_name, keys, synonyms)
            elif r.resource_type == BROKER:
                entry["configs"] = broker_configs.describe(ctx, r.resource_name, keys, synonyms)
            elif r.resource_type == GROUP:
                entry["configs"] = group_configs.describe(ctx, r.resource_name, keys, synonyms)
            else:
                raise KafkaError(ErrorCode.invalid_request, f"Unsupported resource type {r.resource_type}")
        except KafkaError as e:
            entry.update(error_code=e.code, error_message=e.message)
        results.append(entry)
    return {"throttle_time": 0, "results": results}


def _apply_topic_configs(ctx: RequestContext, topic: str, new: dict[str, str], validate_only: bool) -> None:
    if ctx.broker.metadata.topic(topic) is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition)
    try:
        clean = validate_topic_configs(new)
    except ConfigError as e:
        raise KafkaError(ErrorCode.invalid_config,
                         f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): {e}") from None
    if not validate_only:
        ctx.broker.set_topic_configs(topic, clean)


async def _alter(ctx: RequestContext, req, incremental: bool) -> dict:
    responses = []
    for r in req.resources:
        entry = {"error_code": ErrorCode.none, "error_message": None, "resource_type": r.resource_type,
                 "resource_name": r.resource_name}
        try:
            authz.config_resource_error(ctx, 44 if incremental else 33, r.resource_type, r.resource_name)
            if r.resource_type == BROKER:
                broker_configs.alter(ctx, r.resource_name, r.configs, incremental, req.validate_only)
                responses.append(entry)
                continue
            if r.resource_type == GROUP:
                group_configs.alter(ctx, r.resource_name, r.configs, incremental, req.validate_only)
                responses.append(entry)
                continue
            if r.resource_type != TOPIC:
                raise KafkaError(ErrorCode.invalid_request, f"Unsupported resource type {r.resource_type}")
            info = ctx.broker.metadata.topic(r.resource_name)
            if info is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition)
            if incremental:
                new = dict(info.configs)
                for c in r.configs:
                    if c.config_operation == OP_SET:
                        new[c.name] = c.value or ""
                    elif c.config_operation == OP_DELETE:
                        new.pop(c.name, None)
                    elif c.config_operation in (OP_APPEND, OP_SUBTRACT) and c.name == "cleanup.policy":
                        current = set(ctx.broker.log_config(r.resource_name).cleanup_policy.split(","))
                        values = {v.strip() for v in (c.value or "").split(",") if v.strip()}
                        current = current | values if c.config_operation == OP_APPEND else current - values
                        new[c.name] = ",".join(sorted(current))
                    else:
                        raise KafkaError(ErrorCode.invalid_config,
                                         f"Operation {c.config_operation} is not valid for {c.name}")
            else:
                new = {c.name: c.value for c in r.configs if c.value is not None}
            _apply_topic_configs(ctx, r.resource_name, new, req.validate_only)
        except KafkaError as e:
            entry.update(error_code=e.code, error_message=e.message)
        responses.append(entry)
    return {"throttle_time": 0, "responses": responses}


async def handle_alter_configs(ctx: RequestContext, req) -> dict:
    return await _alter(ctx, req, incremental=False)


async def handle_incremental_alter_configs(ctx: RequestContext, req) -> dict:
    return await _alter(ctx, req, incremental=True)


APIS = (
    ApiSpec(19, 2, 7, handle_create_topics),
    ApiSpec(20, 1, 6, handle_delete_topics),
    ApiSpec(37, 0, 3, handle_create_partitions),
    ApiSpec(32, 1, 4, handle_describe_configs),
    ApiSpec(33, 0, 2, handle_alter_configs),
    ApiSpec(44, 0, 1, handle_incremental_alter_configs),
)
