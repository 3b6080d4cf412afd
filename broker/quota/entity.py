"""Quota entities and keys as Kafka names them (ClientQuotaEntity, QuotaConfigs).

An entity is a user, a client-id, or a (user, client-id) pair; each part is a name or the default ("<default>" in
ZooKeeper, a null name on the wire). `kafka-configs.sh --entity-type users --entity-name alice --entity-type
clients --entity-default` names the entity (user alice, default client-id). An IP entity (KIP-612: a client
address's connection_creation_rate, `--entity-type ips`) stands alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from broker.config_entity import desanitize, sanitize
from exporter.jmx_config import java_double_str

USER, CLIENT_ID, IP = "user", "client-id", "ip"          # ClientQuotaEntity.USER / CLIENT_ID / IP
DEFAULT_NAME: Final = "<default>"                          # ConfigEntityName.Default, as ZooKeeper paths spell it

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# QuotaConfigs' user and client-id keys with their ConfigDef types: LONG values must be whole numbers.
KEY_TYPES: Final = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG",
                    REQUEST_PERCENTAGE: "DOUBLE", CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEY_TYPES: Final = {CONNECTION_CREATION_RATE: "INT"}   # QuotaConfigs.ipConfigs
ALL_KEY_TYPES: Final = {**KEY_TYPES, **IP_KEY_TYPES}
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1


class _Default:
    """The default entity of a type (a null entity name on the wire)."""

    _instance: _Default | None = None

    def __new__(cls) -> _Default:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()
Part = str | _Default | None       # a name, the default, or absent from the entity


@dataclass(frozen=True)
class QuotaEntity:
    """A user, client-id, (user, client-id) or IP quota entity; each part a name, DEFAULT, or None (not part of
    it)."""

    user: Part = None
    client_id: Part = None
    ip: Part = None

    def __post_init__(self) -> None:
        if self.ip is not None:
            if self.user is not None or self.client_id is not None:
                raise ValueError("an IP quota entity names nothing else")
        elif self.user is None and self.client_id is None:
            raise ValueError("a quota entity names a user, a client-id or both, or an IP")

    @property
    def key_types(self) -> dict[str, str]:
        """The quota keys this kind of entity takes, with their ConfigDef types."""
        return IP_KEY_TYPES if self.ip is not None else KEY_TYPES

    def wire(self) -> list[dict[str, str | None]]:
        """The entity as DescribeClientQuotas/AlterClientQuotas carry it: [{entity_type, entity_name}]."""
        out: list[dict[str, str | None]] = []
        for kind, part in ((USER, self.user), (CLIENT_ID, self.client_id), (IP, self.ip)):
            if part is not None:
                out.append({"entity_type": kind, "entity_name": None if part is DEFAULT else str(part)})
        return out

    def entity_path(self) -> str:
        """Kafka's ZooKeeper entity path: users/<u>, clients/<c>, users/<u>/clients/<c> or ips/<ip>, names
        sanitized and the default spelled "<default>" (ConfigEntityName.Default, never sanitized)."""
        if self.ip is not None:
            return f"ips/{_path_name(self.ip)}"
        user, client = _path_name(self.user), _path_name(self.client_id)
        if user is None:
            return f"clients/{client}"
        return f"users/{user}" if client is None else f"users/{user}/clients/{client}"

    @classmethod
    def from_entity_path(cls, entity_path: str) -> QuotaEntity | None:
        """The entity of a ZooKeeper entity path (None for one that names no quota entity, e.g. topics/t)."""
        parts = entity_path.split("/")
        if len(parts) == 2 and parts[0] == "users" and parts[1]:
            return cls(user=path_part(parts[1]))
        if len(parts) == 2 and parts[0] == "clients" and parts[1]:
            return cls(client_id=path_part(parts[1]))
        if len(parts) == 2 and parts[0] == "ips" and parts[1]:
            return cls(ip=path_part(parts[1]))
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and parts[1] and parts[3]:
            return cls(user=path_part(parts[1]), client_id=path_part(parts[3]))
        return None


def _path_name(part: Part) -> str | None:
    if part is None:
        return None
    return DEFAULT_NAME if part is DEFAULT else sanitize(str(part))


def path_part(name: str) -> Part:
    """An entity name as a ZooKeeper path spells it, read back (DEFAULT for "<default>")."""
    return DEFAULT if name == DEFAULT_NAME else desanitize(name)


LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1
EPSILON = 1e-6   # ZkAdminManager.alterClientQuotas' tolerance for a LONG given as a double


def java_long(value: float) -> int:
    """Scala's Double.toLong: NaN is 0, out-of-range values saturate, the rest truncate toward zero."""
    if math.isnan(value):
        return 0
    if value >= LONG_MAX:
        return LONG_MAX
    if value <= LONG_MIN:
        return LONG_MIN
    return int(value)


def java_int(value: float) -> int:
    """Scala's Double.toInt: as java_long, saturating at the int range."""
    return max(INT_MIN, min(INT_MAX, java_long(value)))


def whole_value(value: float, kind: str = "LONG") -> int | None:
    """The whole number a LONG or INT key takes from a wire double, as Kafka rounds it; None when it is not one."""
    whole = java_int(value + EPSILON) if kind == "INT" else java_long(value + EPSILON)
    return None if abs(whole - value) > EPSILON else whole   # NaN compares False: stored as 0, as Kafka does


def long_value(value: float) -> int | None:
    return whole_value(value, "LONG")


def config_string(key: str, value: float) -> str:
    """A quota value as Kafka writes it into the entity config: LONG and INT keys as whole numbers, DOUBLE keys as
    Java's Double.toString (the exporter's, which renders jmx_exporter values so)."""
    kind = KEY_TYPES.get(key) or IP_KEY_TYPES.get(key)
    if kind in ("LONG", "INT"):
        return str(java_int(value + EPSILON) if kind == "INT" else java_long(value + EPSILON))
    return java_double_str(value)
