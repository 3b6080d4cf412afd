"""KIP-599's controller mutation quota (Kafka's ControllerMutationQuotaManager): partitions created or deleted per
second, per client, as a token bucket.

The bucket holds up to `controller_mutation_rate` × quota.window.num × quota.window.size.seconds tokens and refills
at the rate; each partition a CreateTopics, CreatePartitions or DeleteTopics creates or deletes takes one. Requests
of the newer versions (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) are held *strictly*: once the
bucket is below zero, each further topic is refused with THROTTLING_QUOTA_EXCEEDED (the topic that took it below
zero went through); older versions are *permissive*: every topic goes through and the client is throttled. Either
way the answer carries the time the bucket needs to reach zero again, and the connection is muted for it.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.quota.manager import CONTROLLER_MUTATION, ClientQuotaManager, ClientSensors, QuotaSettings
from common.clock import Clock
from exporter.registry import SampledRate

# The first version of each API held strictly (KIP-599): api key -> version.
STRICT_SINCE = {19: 6, 37: 3, 20: 5}


class TokenBucket:
    """Kafka's TokenBucket stat: full at first use, refilled at `quota` per second up to `burst`."""

    __slots__ = ("tokens", "_last")

    def __init__(self) -> None:
        self.tokens = 0.0
        self._last: float | None = None

    def measure(self, quota: float, burst: float, now: float) -> float:
        self._refill(quota, burst, now)
        return self.tokens

    def record(self, value: float, quota: float, burst: float, now: float) -> None:
        self._refill(quota, burst, now)
        self.tokens = min(burst, self.tokens - value)

    def _refill(self, quota: float, burst: float, now: float) -> None:
        self.tokens = burst if self._last is None else min(burst, self.tokens + quota * (now - self._last))
        self._last = now


class MutationQuota:
    """One request's hold on its client's bucket (Strict- or PermissiveControllerMutationQuota)."""

    __slots__ = ("_manager", "_sensors", "_strict", "_throttle_ms", "_at")

    def __init__(self, manager: ControllerMutationQuotaManager, sensors: ClientSensors, strict: bool) -> None:
        self._manager, self._sensors, self._strict = manager, sensors, strict
        self._throttle_ms = 0
        self._at = 0.0

    def record(self, partitions: int) -> None:
        """Take `partitions` tokens; strict and already below zero: KafkaError(THROTTLING_QUOTA_EXCEEDED)."""
        throttle = self._manager.take(self._sensors, partitions, check_first=self._strict)
        if throttle:
            self._throttle_ms, self._at = throttle, self._manager.now()
            if self._strict:
                # No message: Kafka's ApiError leaves out a message that is the error's own generic one.
                raise KafkaError(ErrorCode.throttling_quota_exceeded)

    def throttle_time(self) -> int:
        """The last throttle, less the time since (a request may wait after recording, as Kafka's throttleTime)."""
        if not self._throttle_ms:
            return 0
        return max(0, self._throttle_ms - round((self._manager.now() - self._at) * 1000))


class ControllerMutationQuotaManager(ClientQuotaManager):
    """The ControllerMutation quota type: per-client `mutation-rate` (a plain Rate) and `tokens` (the bucket)."""

    def __init__(self, settings: QuotaSettings, clock: Clock) -> None:
        super().__init__(CONTROLLER_MUTATION, settings, clock)
        self._burst_s = settings.samples * settings.window_s

    def now(self) -> float:
        return self._clock.monotonic()

    def quota_for(self, user: str, client_id: str, api_key: int, version: int) -> MutationQuota:
        """A request's quota: strict from the API's KIP-599 version on (asked only once a quota was ever set)."""
        return MutationQuota(self, self.sensors_of(user, client_id), version >= STRICT_SINCE.get(api_key, 0))

    def tokens(self, sensors: ClientSensors) -> float:
        """The `tokens` metric: what the bucket holds now (unlimited: a bucket of Long.MAX_VALUE per second)."""
        bound = self._bound(sensors)
        return sensors.tokens.measure(bound, bound * self._burst_s, self.now())

    def take(self, sensors: ClientSensors, partitions: int, check_first: bool) -> int:
        """Record `partitions`; the throttle (ms) when the bucket is (strict: was, before taking) below zero."""
        now = self.now()
        bound = self._bound(sensors)
        burst = bound * self._burst_s
        sensors.last_record = now
        if check_first:
            tokens = sensors.tokens.measure(bound, burst, now)
            if tokens < 0:
                return round(-tokens / bound * 1000)
        sensors.tokens.record(partitions, bound, burst, now)
        sensors.rate.record_at(partitions, now)
        tokens = sensors.tokens.measure(bound, burst, now)
        return 0 if check_first or tokens >= 0 else round(-tokens / bound * 1000)

    def _bound(self, sensors: ClientSensors) -> float:
        bound = self.quota_limit(sensors.tags)
        return float(2**63 - 1) if bound is None else bound

    def _new_sensors(self, tags: tuple[str, str]) -> ClientSensors:
        sensors = super()._new_sensors(tags)
        s = self._settings
        sensors.rate = SampledRate(self._clock, s.metrics_window_s, s.metrics_samples)   # a plain Rate, not the quota
        sensors.tokens = TokenBucket()
        return sensors
