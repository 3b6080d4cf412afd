"""DescribeConfigs and (Incremental)AlterConfigs on a GROUP resource (32): KIP-848's dynamic group configs, as
`kafka-configs.sh --entity-type groups` reads and writes them (Kafka 4.1). The keys, defaults and validation are in
`broker/coordinator/group_config.py`; the overrides are kept by the metadata (ZooKeeper `/config/groups/<group>`,
or the standalone metadata file)."""

from __future__ import annotations

from typing import Any

from broker.coordinator import group_config as gc
from broker.errors import ErrorCode, KafkaError
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.handlers.config_values import DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG, altered


def _check_name(group: str) -> None:
    if not group:
        raise KafkaError(ErrorCode.invalid_request, "Group name must not be empty")


def describe(ctx: RequestContext, group: str, keys: set[str] | None, synonyms: bool) -> list[dict]:
    """Every group config (or those asked for), the group's own value or the broker's."""
    _check_name(group)
    overrides = ctx.broker.metadata.group_configs(group)
    out = []
    for name, key in gc.KEYS.items():
        if keys is not None and name not in keys:
            continue
        dynamic = name in overrides
        value = overrides[name] if dynamic else gc.default(name, ctx.broker.config)
        source = DYNAMIC_GROUP_CONFIG if dynamic else DEFAULT_CONFIG
        entry: dict[str, Any] = {"name": name, "value": value, "read_only": False, "config_source": source,
                                 "is_sensitive": False, "config_type": key.type, "documentation": None,
                                 "synonyms": [{"name": name, "value": value, "source": source}] if synonyms else []}
        out.append(entry)
    return out


def alter(ctx: RequestContext, group: str, configs, incremental: bool, validate_only: bool) -> None:
    """Apply the request's changes to the group's overrides, validated as a whole (Kafka's GroupConfig.validate)."""
    _check_name(group)
    new = altered(ctx.broker.metadata.group_configs(group), configs, incremental)
    clean = gc.validate(new, ctx.broker.config)
    if not validate_only:
        ctx.broker.metadata.set_group_configs(group, clean)


# ------------------------------------------------------------------ ListConfigResources (74)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
_DEFAULT_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, gc.GROUP_RESOURCE)


async def handle_list_config_resources(ctx: RequestContext, req) -> dict:
    """The config resources of the asked types (KIP-1142; v0 was ListClientMetricsResources, of which this broker
    has none): `kafka-configs.sh --entity-type groups --describe` finds a group here, among the groups this broker
    coordinates and those with configs."""
    if denied := authz.request_error(ctx, 74):
        return {"throttle_time": 0, "error_code": denied, "config_resources": []}
    if ctx.api_version == 0:   # ListClientMetricsResources: client metrics resources only, and there are none
        types: tuple[int, ...] = ()
    else:                      # none asked for: every type with configs
        types = tuple(req.resource_types) or _DEFAULT_TYPES
    if any(t not in _DEFAULT_TYPES for t in types):
        return {"throttle_time": 0, "error_code": ErrorCode.unsupported_version, "config_resources": []}
    broker = ctx.broker
    out: list[dict] = []
    if TOPIC in types:
        out += [{"resource_name": t, "resource_type": TOPIC} for t in sorted(broker.metadata.topics())]
    for kind in (BROKER, BROKER_LOGGER):
        if kind in types:
            out += [{"resource_name": str(b.node_id), "resource_type": kind} for b in broker.metadata.brokers()]
    if gc.GROUP_RESOURCE in types:
        groups = {g for g, *_ in broker.group_coordinator.list_groups()} | set(broker.metadata.configured_groups())
        out += [{"resource_name": g, "resource_type": gc.GROUP_RESOURCE} for g in sorted(groups)]
    return {"throttle_time": 0, "error_code": ErrorCode.none, "config_resources": out}


APIS = (ApiSpec(74, 0, 1, handle_list_config_resources),)
