"""Per-group configs (KIP-848's dynamic group configs; Kafka 4.1's GroupConfig): the keys, their values from the
broker's config where a group sets none, and Kafka's validation with its messages.

`kafka-configs.sh --entity-type groups --entity-name G --alter --add-config consumer.session.timeout.ms=50000`
sets one (IncrementalAlterConfigs on a GROUP resource); the consumer-protocol coordinator then uses it for G. The
share and streams keys are stored and described as Kafka 4.1 does, and act on nothing here: neither share groups
(KIP-932, off by default in 4.1) nor streams groups (KIP-1071) are served. Their broker-level bounds are Kafka
4.1's defaults, as this broker has no group.share.* or group.streams.* settings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from broker.config import BrokerConfig
from broker.errors import ErrorCode, KafkaError

GROUP_RESOURCE = 32
TYPE_STRING, TYPE_INT = 2, 3


@dataclass(frozen=True)
class _Key:
    name: str
    type: int
    default: int | str             # Kafka 4.1's broker default (the consumer ones come from this broker's config)
    at_least: int | None = None    # the ConfigDef range
    bounds: tuple[int | str, int | str] | None = None   # (min, max): a number, or a BrokerConfig attribute
    bound_keys: tuple[str, str] | None = None           # the broker keys the messages name


_KEYS = (
    _Key("consumer.session.timeout.ms", TYPE_INT, "group_consumer_session_timeout_ms", 1,
         ("group_consumer_min_session_timeout_ms", "group_consumer_max_session_timeout_ms"),
         ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms")),
    _Key("consumer.heartbeat.interval.ms", TYPE_INT, "group_consumer_heartbeat_interval_ms", 1,
         ("group_consumer_min_heartbeat_interval_ms", "group_consumer_max_heartbeat_interval_ms"),
         ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms")),
    _Key("share.session.timeout.ms", TYPE_INT, 45_000, 1, (45_000, 60_000),
         ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
    _Key("share.heartbeat.interval.ms", TYPE_INT, 5_000, 1, (5_000, 15_000),
         ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
    _Key("share.record.lock.duration.ms", TYPE_INT, 30_000, 1000, (15_000, 60_000),
         ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")),
    _Key("share.auto.offset.reset", TYPE_STRING, "latest"),
    _Key("share.isolation.level", TYPE_STRING, "read_uncommitted"),
    _Key("streams.session.timeout.ms", TYPE_INT, 45_000, 1, (45_000, 60_000),
         ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms")),
    _Key("streams.heartbeat.interval.ms", TYPE_INT, 5_000, 1, (5_000, 15_000),
         ("group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms")),
    _Key("streams.num.standby.replicas", TYPE_INT, 0, 0, (0, 2), ("", "group.streams.max.standby.replicas")),
)
KEYS: dict[str, _Key] = {k.name: k for k in _KEYS}
# Each session must outlast its heartbeat interval (GroupConfig.validateValues).
_SESSION_OVER_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                           ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                           ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))
# The order Kafka checks the bounds in (the heartbeat interval before the session timeout).
_BOUND_ORDER = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "share.heartbeat.interval.ms",
                "share.session.timeout.ms", "share.record.lock.duration.ms", "streams.heartbeat.interval.ms",
                "streams.session.timeout.ms", "streams.num.standby.replicas")
_ISO_DURATION = re.compile(r"P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?", re.I)


def _resolve(value: int | str, cfg: BrokerConfig) -> int | str:
    return getattr(cfg, value) if isinstance(value, str) and value.startswith("group_") else value


def default(name: str, cfg: BrokerConfig) -> str:
    """What a group that sets `name` gets: the broker's value (Kafka's GroupCoordinatorConfig.extractGroupConfigMap)."""
    return str(_resolve(KEYS[name].default, cfg))


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_config, message)


def _parsed(key: _Key, value: str) -> int | str:
    """ConfigDef's parse and range check, with its messages."""
    if key.type == TYPE_STRING:
        if key.name == "share.isolation.level" and value not in ("read_committed", "read_uncommitted"):
            raise _invalid(f"Invalid value {value} for configuration {key.name}: String must be one of: "
                           "read_committed, read_uncommitted")
        if key.name == "share.auto.offset.reset" and not (
                value.lower() in ("latest", "earliest")
                or (value.lower().startswith("by_duration:") and _ISO_DURATION.fullmatch(value[12:]))):
            raise _invalid(f"Invalid value {value} for configuration {key.name}: Invalid value `{value}` for "
                           "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or "
                           "of the format 'by_duration:<PnDTnHnMn.nS.>'.")
        return value
    try:
        number = int(value.strip())
    except ValueError:
        raise _invalid(f"Invalid value {value} for configuration {key.name}: Not a number of type INT") from None
    if not -2**31 <= number < 2**31:
        raise _invalid(f"Invalid value {value} for configuration {key.name}: Not a number of type INT")
    if key.at_least is not None and number < key.at_least:
        raise _invalid(f"Invalid value {number} for configuration {key.name}: Value must be at least {key.at_least}")
    return number


def validate(overrides: Mapping[str, str], cfg: BrokerConfig) -> dict[str, str]:
    """A group's whole set of overrides, checked as Kafka's GroupConfig.validate checks it (names, types, the
    broker's bounds, each session above its heartbeat interval); INVALID_CONFIG with Kafka's message otherwise."""
    for name in overrides:
        if name not in KEYS:
            raise _invalid(f"Unknown group config name: {name}")
    values = {k.name: _parsed(k, overrides[k.name]) if k.name in overrides else _resolve(k.default, cfg)
              for k in _KEYS}
    for k in (KEYS[n] for n in _BOUND_ORDER):
        assert k.bounds is not None and k.bound_keys is not None
        lo, hi = (_resolve(b, cfg) for b in k.bounds)
        value = values[k.name]
        assert isinstance(value, int) and isinstance(lo, int) and isinstance(hi, int)
        if k.bound_keys[0] and value < lo:
            raise _invalid(f"{k.name} must be greater than or equal to {k.bound_keys[0]}")
        if value > hi:
            raise _invalid(f"{k.name} must be less than or equal to {k.bound_keys[1]}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:   # type: ignore[operator]
            raise _invalid(f"{session} must be greater than {heartbeat}")
    return {name: str(values[name]) for name in overrides}
