"""Kafka's ClientQuotaManager: per-client rate sensors, the quota each client is held to, and throttle times.

One manager per quota type (Produce: bytes in, Fetch: bytes out, Request: handler time as a percentage of one
thread). Which entity's quota a client gets follows Kafka's eight levels, most specific first:

    /config/users/<user>/clients/<client-id>    /config/users/<default>/clients/<client-id>
    /config/users/<user>/clients/<default>      /config/users/<default>/clients/<default>
    /config/users/<user>                        /config/users/<default>
                                                /config/clients/<client-id>, /config/clients/<default>

A client's sensors are keyed by the metric tags (user, client-id) of the level that applies, so clients sharing a
user quota share one rate (DefaultQuotaCallback.quotaMetricTags). Nothing is recorded, and no metric exists, until a
quota entity of any level has been configured (ZooKeeper mode: any /config/users znode counts, as Kafka's
DynamicConfigManager feeds every user config to the quota managers); after that every client is measured, also
those without a quota. Pure: the caller passes the time (monotonic seconds) and applies the throttle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from broker.quota.entity import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaEntity,
)
from common.clock import Clock
from exporter.registry import SampledMaxAvg, SampledRate

PRODUCE, FETCH, REQUEST = "Produce", "Fetch", "Request"    # QuotaType: the MBean `type` of each manager
CONTROLLER_MUTATION = "ControllerMutation"
KEY_OF = {PRODUCE: PRODUCER_BYTE_RATE, FETCH: CONSUMER_BYTE_RATE, REQUEST: REQUEST_PERCENTAGE,
          CONTROLLER_MUTATION: CONTROLLER_MUTATION_RATE}
INACTIVE_SENSOR_EXPIRATION_S = 3600.0        # ClientQuotaManager.InactiveSensorExpirationTimeSeconds
NANOS_TO_PERCENTAGE = 100.0 / 1e9            # a request's thread nanoseconds as percent of one thread-second

# QuotaTypes: which entity levels have been configured (bits), as Kafka optimises the single-level cases.
_CLIENT_ID, _USER, _USER_CLIENT_ID = 1, 2, 4

Tags = tuple[str, str]      # (sanitized user, client-id); "" where the level leaves a part out


@dataclass(frozen=True)
class QuotaSettings:
    """quota.window.num and quota.window.size.seconds; the throttle-time average uses metrics.num.samples and
    metrics.sample.window.ms, as every Kafka metric without its own config."""

    samples: int = 11
    window_s: float = 1.0
    metrics_samples: int = 2
    metrics_window_s: float = 30.0


class ClientSensors:
    """The sensors of one metric-tag pair: the quota rate and the average throttle time."""

    __slots__ = ("tags", "rate", "throttle", "last_record", "tokens")

    def __init__(self, tags: Tags, rate: SampledRate, throttle: SampledMaxAvg, now: float) -> None:
        self.tags, self.rate, self.throttle, self.last_record = tags, rate, throttle, now
        self.tokens: Any = None   # the ControllerMutation type's token bucket


class ClientQuotaManager:
    """One quota type's overrides and sensors. `on_sensors` is told of sensors made (True) and expired (False),
    for the metrics to add and remove their MBeans."""

    def __init__(self, quota_type: str, settings: QuotaSettings, clock: Clock,
                 on_sensors: Callable[[ClientSensors, bool], None] | None = None) -> None:
        self.quota_type = quota_type
        self._settings = settings
        self._clock = clock
        self._on_sensors = on_sensors
        self._levels = 0
        self._quotas: dict[QuotaEntity, float] = {}
        self._sensors: dict[Tags, ClientSensors] = {}
        self.queue_size = 0      # channels muted for this type now (the `queue-size` metric)

    @property
    def enabled(self) -> bool:
        """Whether any quota entity was ever configured (until restart, as Kafka's quotasEnabled)."""
        return self._levels != 0

    def set_notifier(self, on_sensors: Callable[[ClientSensors, bool], None]) -> None:
        self._on_sensors = on_sensors

    def update_quota(self, entity: QuotaEntity, bound: float | None) -> None:
        """An entity's quota of this type set (bound) or removed (None); either way its level counts as used."""
        if entity.user is not None:
            self._levels |= _USER_CLIENT_ID if entity.client_id is not None else _USER
        else:
            self._levels |= _CLIENT_ID
        if bound is None:
            self._quotas.pop(entity, None)
        else:
            self._quotas[entity] = bound

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """DefaultQuotaCallback.quotaMetricTags for a sanitized user and a client-id."""
        levels = self._levels
        if levels in (0, _CLIENT_ID):
            return "", client_id
        if levels == _USER:
            return user, ""
        if levels == _USER_CLIENT_ID:
            return user, client_id
        q = self._quotas
        if QuotaEntity(user, client_id) in q or QuotaEntity(user, DEFAULT) in q:
            return user, client_id
        if QuotaEntity(user, None) in q:
            return user, ""
        if QuotaEntity(DEFAULT, client_id) in q or QuotaEntity(DEFAULT, DEFAULT) in q:
            return user, client_id
        if QuotaEntity(DEFAULT, None) in q:
            return user, ""
        return "", client_id

    def quota_limit(self, tags: Tags) -> float | None:
        """DefaultQuotaCallback.quotaLimit: the bound for a metric-tag pair, None for unlimited."""
        user, client_id = tags
        q = self._quotas
        levels: tuple[QuotaEntity, ...]
        if user and client_id:
            levels = (QuotaEntity(user, client_id), QuotaEntity(user, DEFAULT),
                      QuotaEntity(DEFAULT, client_id), QuotaEntity(DEFAULT, DEFAULT))
        elif user:
            levels = (QuotaEntity(user, None), QuotaEntity(DEFAULT, None))
        elif client_id:
            levels = (QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT))
        else:
            return None
        return next((q[e] for e in levels if e in q), None)

    def sensors_of(self, user: str, client_id: str) -> ClientSensors:
        tags = self.metric_tags(user, client_id)
        sensors = self._sensors.get(tags)
        if sensors is None:
            sensors = self._sensors[tags] = self._new_sensors(tags)
            if self._on_sensors is not None:
                self._on_sensors(sensors, True)
        return sensors

    def _new_sensors(self, tags: Tags) -> ClientSensors:
        s = self._settings
        return ClientSensors(tags, SampledRate(self._clock, s.window_s, s.samples),
                             SampledMaxAvg(self._clock, s.metrics_window_s, s.metrics_samples), self._clock.monotonic())

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record `value` for the client; the throttle time in ms if that takes it over its quota, else 0.
        Nothing is recorded while no quota was ever configured (maybeRecordAndGetThrottleTimeMs)."""
        if not self._levels:
            return 0
        sensors = self.sensors_of(user, client_id)
        now = self._clock.monotonic()
        sensors.last_record = now
        sensors.rate.record_at(value, now)
        bound = self.quota_limit(sensors.tags)
        if bound is None:
            return 0
        observed = sensors.rate.measure(now)
        if observed <= bound:
            return 0
        # The delay X that brings the observed rate O over window W down to the bound T: O*W/(W+X) = T.
        window_ms = sensors.rate.window_size(now) * 1000.0
        return int(min(round((observed - bound) / bound * window_ms) if bound > 0 else math.inf, 2**31 - 1))

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled fetch answers nothing, so its bytes do not count)."""
        if self._levels:
            sensors = self.sensors_of(user, client_id)
            sensors.rate.record_at(-value, self._clock.monotonic())

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most one request may carry without certain throttling (bounds a consumer's fetch size)."""
        if not self._levels:
            return math.inf
        bound = self.quota_limit(self.sensors_of(user, client_id).tags)
        return math.inf if bound is None else bound * (self._settings.samples - 1) * self._settings.window_s

    def throttled(self, user: str, client_id: str, throttle_ms: int) -> None:
        """The client's channel is muted for `throttle_ms` (this type's throttle won): counted in throttle-time
        and queue-size until `throttle_done`."""
        self.sensors_of(user, client_id).throttle.record(float(throttle_ms))
        self.queue_size += 1

    def throttle_done(self) -> None:
        self.queue_size -= 1

    def expire(self) -> None:
        """Drop sensors idle for an hour (Kafka's sensor expiration), with their metrics."""
        now = self._clock.monotonic()
        for tags, sensors in list(self._sensors.items()):
            if now - sensors.last_record >= INACTIVE_SENSOR_EXPIRATION_S:
                del self._sensors[tags]
                if self._on_sensors is not None:
                    self._on_sensors(sensors, False)

    def sensors(self) -> Iterator[ClientSensors]:
        return iter(list(self._sensors.values()))
