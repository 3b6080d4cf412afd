"""Replication throttles (KIP-73): Kafka's ReplicationQuotaManager, one for the leader side and one for the follower
side of replication, and the topic configs naming the throttled replicas.

An operator (usually kafka-reassign-partitions.sh --throttle) sets two broker configs, `leader.replication.
throttled.rate` and `follower.replication.throttled.rate` (bytes/s), and two topic configs listing the replicas they
apply to, `leader.replication.throttled.replicas` and `follower.replication.throttled.replicas` ("*" or
"partition:broker,..."). Each broker keeps, per side, the partitions of each topic listed with its own id.

A leader leaves a throttled partition's records out of a follower's Fetch answer while the side's byte rate is over
its bound and that follower is not in the ISR; a follower leaves such a partition out of its Fetch request while its
own copy has not reached the leader's high watermark. Both sides count every throttled partition's bytes, in sync
or not, so the traffic of the whole side stays under the rate (Kafka's comment in KafkaApis.sizeOfThrottledPartitions).
The rate is Kafka's SimpleRate over replication.quota.window.num windows of replication.quota.window.size.seconds.
Pure: the caller passes the clock and the topic configs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from common.clock import Clock
from exporter.registry import SimpleRate

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
# QuotaType: the MBean `type` of each side's byte-rate (kafka.server:type=LeaderReplication, attribute byte-rate).
LEADER, FOLLOWER, ALTER_LOG_DIRS = "LeaderReplication", "FollowerReplication", "AlterLogDirsReplication"
LONG_MAX = 2 ** 63 - 1                       # QuotaConfigs.QUOTA_BYTES_PER_SECOND_DEFAULT (Long.MAX_VALUE)
UNBOUNDED = float(LONG_MAX)
INACTIVE_SENSOR_EXPIRATION_S = 3600.0        # ReplicationQuotaManagerConfig.INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS

ALL_REPLICAS: frozenset[int] = frozenset({-1})   # Constants.AllReplicas: "*"
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
THROTTLED_LIST_FORMAT = "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


def validate_throttled_replicas(name: str, value: str) -> None:
    """ThrottledReplicaListValidator: "*" or `partition:broker` items (blank items allowed, as Java's split drops
    trailing empties and an empty item matches). Raises ValueError with Kafka's message."""
    items = [i.strip() for i in value.split(",")]
    if not (all(_REPLICA.fullmatch(i) for i in items) or "".join(items) == "*"):
        raise ValueError(f"{name} must be the literal '*' or a list of replicas in the following format: "
                         f"{THROTTLED_LIST_FORMAT}")


def throttled_partitions(value: str, broker_id: int) -> frozenset[int]:
    """TopicConfigHandler.parseThrottledPartitions: the partitions listed with `broker_id` (ALL_REPLICAS for "*").
    Kafka does not trim the items here and fails on "0:1, 1:2"; this reads it as meant."""
    value = value.strip()
    if value == "*":
        return ALL_REPLICAS
    out = set()
    for item in value.split(","):
        partition, sep, broker = item.strip().partition(":")
        if sep and broker.isdigit() and partition.isdigit() and int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


@dataclass(frozen=True)
class ReplicationQuotaSettings:
    """replication.quota.window.num and replication.quota.window.size.seconds."""

    samples: int = 11
    window_s: float = 1.0


class ReplicationQuota:
    """One side's quota (Kafka's ReplicationQuotaManager): a bound in bytes/s, the throttled partitions per topic,
    and the byte-rate sensor, made on first use (a check or a record) and dropped after an hour without a record.
    `topic_configs(topic)` gives a topic's config overrides (None for an unknown topic); the throttled partitions
    are parsed again only when the topic's value changed."""

    def __init__(self, quota_type: str, replicas_key: str, broker_id: int, settings: ReplicationQuotaSettings,
                 clock: Clock, topic_configs: Callable[[str], Mapping[str, str] | None]) -> None:
        self.quota_type = quota_type
        self._replicas_key = replicas_key
        self._broker_id = broker_id
        self._settings = settings
        self._clock = clock
        self._topic_configs = topic_configs
        self.bound: float | None = None     # None until the broker configs were first applied (Kafka: quota null)
        self.rate: SimpleRate | None = None
        self._last_record = 0.0
        self._parsed: dict[str, tuple[str, frozenset[int]]] = {}
        self.on_sensor: Callable[[ReplicationQuota, bool], None] = lambda quota, made: None

    def update_bound(self, bound: float) -> None:
        self.bound = bound

    @property
    def upper_bound(self) -> float:
        return UNBOUNDED if self.bound is None else self.bound

    def throttled(self, topic: str) -> frozenset[int]:
        """The topic's throttled partitions on this broker (ALL_REPLICAS for all of them)."""
        configs = self._topic_configs(topic)
        value = configs.get(self._replicas_key, "") if configs is not None else ""
        if not value:
            if self._parsed:
                self._parsed.pop(topic, None)
            return frozenset()
        cached = self._parsed.get(topic)
        if cached is None or cached[0] != value:
            cached = self._parsed[topic] = (value, throttled_partitions(value, self._broker_id))
        return cached[1]

    def is_throttled(self, topic: str, partition: int) -> bool:
        partitions = self.throttled(topic)
        return partitions is ALL_REPLICAS or partition in partitions

    def _sensor(self, now: float) -> SimpleRate:
        if self.rate is None:
            self.rate = SimpleRate(self._clock, self._settings.window_s, self._settings.samples)
            self._last_record = now
            self.on_sensor(self, True)
        return self.rate

    def is_quota_exceeded(self) -> bool:
        """Sensor.checkQuotas: the measured rate above the bound (never without a bound)."""
        now = self._clock.monotonic()
        rate = self._sensor(now)
        return self.bound is not None and rate.measure(now) > self.bound

    def record(self, nbytes: int) -> None:
        now = self._clock.monotonic()
        self._sensor(now).record_at(nbytes, now)
        self._last_record = now

    def expire(self) -> None:
        """Drop the sensor after an hour without a record (Kafka's Sensor expiry)."""
        if self.rate is not None and self._clock.monotonic() - self._last_record >= INACTIVE_SENSOR_EXPIRATION_S:
            self.rate = None
            self.on_sensor(self, False)


def effective_rate(key: str, own: Mapping[str, str], default: Mapping[str, str]) -> float:
    """BrokerConfigHandler's getOrDefault: this broker's dynamic value, else the cluster default, else unbounded."""
    for configs in (own, default):
        if key in configs:
            try:
                return float(int(configs[key]))
            except ValueError:
                break
    return UNBOUNDED


class ReplicationQuotas:
    """The leader and follower sides of one broker (Kafka's QuotaManagers.leader / follower). Replica moves between
    log dirs (the third side) are not served here, so `replica.alter.log.dirs.io.max.bytes.per.second` is kept
    as a config without effect."""

    def __init__(self, broker_id: int, settings: ReplicationQuotaSettings, clock: Clock,
                 topic_configs: Callable[[str], Mapping[str, str] | None]) -> None:
        self.leader = ReplicationQuota(LEADER, LEADER_REPLICAS, broker_id, settings, clock, topic_configs)
        self.follower = ReplicationQuota(FOLLOWER, FOLLOWER_REPLICAS, broker_id, settings, clock, topic_configs)

    def all(self) -> tuple[ReplicationQuota, ReplicationQuota]:
        return self.leader, self.follower

    def apply(self, own: Mapping[str, str], default: Mapping[str, str]) -> None:
        """A dynamic broker config changed (this broker's, the default, or another broker's: Kafka updates the
        bounds on each)."""
        self.leader.update_bound(effective_rate(LEADER_RATE, own, default))
        self.follower.update_bound(effective_rate(FOLLOWER_RATE, own, default))

    def expire(self) -> None:
        for quota in self.all():
            quota.expire()
