"""DescribeClientQuotas (48) and AlterClientQuotas (49), KIP-546: `kafka-configs.sh --entity-type users/clients/ips`.

Kafka 3.9's ZooKeeper-mode answers (ZkAdminManager.describeClientQuotas / alterClientQuotas), errors and messages
included, checked against a real 3.9 broker (tests/interop/test_client_quotas.py). One departure: an `ip` entity
must be an address; Kafka also takes a host name it can resolve, which would mean a DNS lookup on the broker's
event loop here. The configs are kept by the metadata's ClientQuotaStore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from broker.errors import ErrorCode, KafkaError
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.quota.connection import is_ip_address
from broker.quota.entity import CLIENT_ID, DEFAULT, IP, USER, Part, QuotaEntity, whole_value

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
EXACT, DEFAULT_MATCH, ANY = 0, 1, 2          # ClientQuotaFilterComponent: a name, the default, any name
CLUSTER_DENIED = "Cluster authorization failed."
# DynamicConfig.User's keys beyond the quotas: the SCRAM mechanisms, PASSWORD keys that alterClientQuotas has no
# conversion for (Kafka fails the entry with an IllegalStateException: UNKNOWN_SERVER_ERROR, no message).
USER_PASSWORD_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})

Values = dict[str, float]


class _Failed(Exception):
    """A request (Describe) or entry (Alter) answered with this error and message."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _invalid(message: str) -> _Failed:
    return _Failed(ErrorCode.invalid_request, message)


# ------------------------------------------------------------------ DescribeClientQuotas

Match = tuple[int, str | None]   # (match type, name for EXACT)


def parse_filter(components: Sequence[Any]) -> dict[str, Match]:
    """The filter's components by entity type, checked as Kafka checks them (raises _Failed)."""
    for c in components:   # DescribeClientQuotasRequest.filter() first: an unknown match type or a null exact name
        if c.match_type not in (EXACT, DEFAULT_MATCH, ANY) or (c.match_type == EXACT and c.match is None):
            raise _Failed(ErrorCode.unknown_server_error, None)
    out: dict[str, Match] = {}
    for c in components:
        kind = c.entity_type
        if kind in (USER, CLIENT_ID, IP):
            if kind in out:
                raise _invalid(f"Duplicate {'client' if kind == CLIENT_ID else kind} filter component entity type")
            out[kind] = (c.match_type, c.match if c.match_type == EXACT else None)
        elif kind == "":
            raise _invalid("Unexpected empty filter component entity type")
        else:
            raise _Failed(ErrorCode.unsupported_version, f"Custom entity type '{kind}' not supported")
    if IP in out and (USER in out or CLIENT_ID in out):
        raise _invalid("Invalid entity filter component combination, IP filter component should not be used with "
                       "user or clientId filter component.")
    return out


def _matches(match: Match | None, part: Part, strict: bool) -> bool:
    if match is None:                    # the filter says nothing of this type: strict wants it absent
        return part is None or not strict
    kind, name = match
    if kind == EXACT:
        return part == name and part is not DEFAULT
    if kind == DEFAULT_MATCH:
        return part is DEFAULT
    return part is not None              # ANY: any name, the default included


def describe(entities: Mapping[QuotaEntity, Values], components: Sequence[Any], strict: bool
             ) -> list[tuple[QuotaEntity, Values]]:
    """The entities with quota values the filter matches (raises _Failed for a bad filter)."""
    wanted = parse_filter(components)

    def chosen(e: QuotaEntity) -> bool:
        if e.ip is not None:   # handleDescribeIpQuotas: asked for, or every IP when nothing else is and not strict
            return USER not in wanted and CLIENT_ID not in wanted and (
                _matches(wanted[IP], e.ip, strict) if IP in wanted else not strict)
        return IP not in wanted and _matches(wanted.get(USER), e.user, strict) and \
            _matches(wanted.get(CLIENT_ID), e.client_id, strict)

    return [(e, v) for e, v in entities.items() if v and chosen(e)]


async def handle_describe_client_quotas(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, DESCRIBE_CLIENT_QUOTAS):   # DESCRIBE_CONFIGS on the cluster
        return {"throttle_time": 0, "error_code": denied, "error_message": CLUSTER_DENIED, "entries": None}
    try:
        found = describe(ctx.broker.metadata.client_quotas().all(), req.components, req.strict)
    except _Failed as e:
        return {"throttle_time": 0, "error_code": e.code, "error_message": e.message, "entries": None}
    entries = [{"entity": entity.wire(), "values": [{"key": k, "value": v} for k, v in values.items()]}
               for entity, values in found]
    # Kafka answers a success with an empty message, not a null one.
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": "", "entries": entries}


# ------------------------------------------------------------------ AlterClientQuotas

def wire_entity(entity: Sequence[Any]) -> dict[str, str | None]:
    """An entry's entity as Kafka reads it into a map: entity type -> name, a repeated type's last name kept."""
    out: dict[str, str | None] = {}
    for part in entity:
        out[part.entity_type] = part.entity_name
    return out


def _shown(parts: Mapping[str, str | None]) -> list[dict[str, str | None]]:
    """An entry's entity as its answer repeats it."""
    return [{"entity_type": k, "entity_name": v} for k, v in parts.items()]


def parse_entity(parts: Mapping[str, str | None]) -> QuotaEntity:
    """ZkAdminManager.parseAndSanitizeQuotaEntity and its combinations (raises _Failed)."""
    if not parts:
        raise _invalid("Invalid empty client quota entity")
    for kind, name in parts.items():
        if kind not in (USER, CLIENT_ID, IP):
            raise _invalid(f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise _invalid(f"Empty {kind} not supported")
    if IP in parts:
        if len(parts) > 1:
            raise _invalid("Invalid quota entity combination, IP entity should not be used with user/client ID "
                           "entity.")
        ip = parts[IP]
        if ip is not None and not is_ip_address(ip):
            raise _invalid(f"{ip} is not a valid IP or resolvable host.")
        return QuotaEntity(ip=DEFAULT if ip is None else ip)
    user, client = parts.get(USER, ...), parts.get(CLIENT_ID, ...)
    return QuotaEntity(user=None if user is ... else (DEFAULT if user is None else user),
                       client_id=None if client is ... else (DEFAULT if client is None else client))


def apply_ops(entity: QuotaEntity, current: Mapping[str, float], ops: Sequence[Any]) -> Values:
    """The entity's quota values after the entry's ops, in order (raises _Failed on the first bad one)."""
    values = dict(current)
    types = entity.key_types
    for op in ops:
        if op.remove:
            values.pop(op.key, None)   # any key may be removed, known or not
        elif op.key in types:
            if types[op.key] in ("LONG", "INT"):
                whole = whole_value(op.value, types[op.key])
                if whole is None:
                    raise _invalid(f"Configuration {op.key} must be a {types[op.key]} value")
                values[op.key] = float(whole)
            else:
                values[op.key] = op.value
        elif op.key in USER_PASSWORD_KEYS and entity.user is not None:
            raise _Failed(ErrorCode.unknown_server_error, None)
        else:
            raise _invalid(f"Invalid configuration key {op.key}")
    return values


def alter(store: Any, entries: Sequence[Any], validate_only: bool) -> dict[tuple, tuple[list, ErrorCode, str | None]]:
    """Each entry whole or not at all; keyed by entity, so an entity named twice answers once (as Kafka's map)."""
    results: dict[tuple, tuple[list, ErrorCode, str | None]] = {}
    for entry in entries:
        parts = wire_entity(entry.entity)
        shown = _shown(parts)
        code, message = ErrorCode.none, None
        try:
            entity = parse_entity(parts)
            values = apply_ops(entity, store.all().get(entity, {}), entry.ops)
            if not validate_only:
                store.set(entity, values)
        except _Failed as e:
            code, message = e.code, e.message
        except KafkaError as e:   # not stored (a full disk): nothing of this entry was applied
            code, message = e.code, e.message
        key = tuple(sorted(parts.items(), key=lambda kv: kv[0]))
        results[key] = (shown, code, message)   # the last entry's answer, as Kafka's toMap keeps
    return results


async def handle_alter_client_quotas(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, ALTER_CLIENT_QUOTAS):   # ALTER_CONFIGS on the cluster
        return {"throttle_time": 0, "entries": [
            {"error_code": denied, "error_message": CLUSTER_DENIED, "entity": _shown(wire_entity(e.entity))}
            for e in req.entries]}
    results = alter(ctx.broker.metadata.client_quotas(), req.entries, req.validate_only)
    return {"throttle_time": 0, "entries": [{"error_code": code, "error_message": message, "entity": shown}
                                            for shown, code, message in results.values()]}


APIS = [
    ApiSpec(DESCRIBE_CLIENT_QUOTAS, 0, 1, handle_describe_client_quotas),
    ApiSpec(ALTER_CLIENT_QUOTAS, 0, 1, handle_alter_client_quotas),
]
