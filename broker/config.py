"""Broker configuration read from Kafka's own server.properties keys, and topic-level overrides.

`TOPIC_CONFIGS` is the single table of topic configs: each topic key, the broker key that supplies its
default, and how to parse it. DescribeConfigs, AlterConfigs, CreateTopics and the log all use it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from broker.quota.replication import FOLLOWER_REPLICAS, LEADER_REPLICAS, validate_throttled_replicas
from common.java_properties import parse_properties

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """An invalid configuration value; the message names the key."""


# ---------------------------------------------------------------- value parsers

MAX_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"
# Utils.validHostPattern: the characters of a host name or an address.
_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,host:count` (KafkaConfig.maxConnectionsPerIpOverrides, Csv.parseCsvMap); ValueError with
    Kafka's message."""
    out = {}
    for item in (re.split(r"\s*,\s*", text) if text else []):
        host, sep, count = item.rpartition(":")
        if not sep:
            raise ValueError(f"Error parsing configuration property '{MAX_PER_IP_OVERRIDES}': begin 0, end -1, "
                             f"length {len(item)}")
        try:
            out[host.strip()] = int(count.strip())
        except ValueError:
            raise ValueError(f'For input string: "{count.strip()}"') from None
    if invalid := [h for h in out if not _HOST.fullmatch(h)]:
        raise ValueError(f"{MAX_PER_IP_OVERRIDES} contains invalid addresses : {','.join(invalid)}")
    return out


def _overrides(v: str) -> str:
    """max.connections.per.ip.overrides, checked as Kafka checks it at start."""
    parse_overrides(v.strip())
    return v.strip()


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    def parse(v: str) -> int:
        try:
            n = int(v.strip())
        except ValueError:
            raise ValueError(f"expected an integer, got {v!r}") from None
        if lo is not None and n < lo:
            raise ValueError(f"must be at least {lo}, got {n}")
        if hi is not None and n > hi:
            raise ValueError(f"must be at most {hi}, got {n}")
        return n
    return parse


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"expected true or false, got {v!r}")
    return s == "true"


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(v: str) -> str:
        s = v.strip()
        if s not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {v!r}")
        return s
    return parse


def _naming(v: str) -> str:
    """prometheus.naming: strimzi, confluent or rules:/path/to/jmx_exporter.yml, read now so a bad file stops us."""
    from exporter.naming import load  # here: the exporter is only needed when the key is given

    s = v.strip()
    try:
        load(s)
    except ValueError as e:  # JmxConfigError is one too
        raise ValueError(str(e)) from None
    return s


def _web_config(v: str) -> str:
    """prometheus.web.config.file: the exporter-toolkit web config (TLS, basic auth), read now so a bad file stops us."""
    from exporter.web_config import load  # here: the exporter is only needed when the key is given

    s = v.strip()
    if s:
        load(s)   # WebConfigError is a ValueError naming the file and the key
    return s


def _assignors(v: str) -> str:
    """group.consumer.assignors: short names (uniform, range) or Kafka's class names; stored as short names."""
    from broker.coordinator.consumer.assignors import assignor_names  # pure, imports nothing of the broker

    return ",".join(assignor_names(v.split(",")))


def _rebalance_protocols(v: str) -> str:
    """group.coordinator.rebalance.protocols: classic is required, as in Kafka 4 (KIP-848)."""
    names = [p.strip() for p in v.split(",") if p.strip()]
    unknown = [p for p in names if p not in ("classic", "consumer")]
    if unknown:
        raise ValueError(f"unknown protocol {unknown[0]!r} (known: classic, consumer)")
    if "classic" not in names:
        raise ValueError("classic must be enabled")
    return ",".join(dict.fromkeys(names))


def _cleanup_policy(v: str) -> str:
    parts = sorted({p.strip() for p in v.split(",") if p.strip()})
    if not parts or any(p not in ("compact", "delete") for p in parts):
        raise ValueError(f"expected delete, compact or compact,delete, got {v!r}")
    return ",".join(parts)


def _str(v: str) -> str:
    return v.strip()


def _throttled_replicas(name: str, v: str) -> str:
    validate_throttled_replicas(name, v)
    return v.strip()


# ---------------------------------------------------------------- topic-level configs

@dataclass(frozen=True)
class TopicConfigSpec:
    name: str                # topic-level key, e.g. retention.ms
    broker_key: str | None   # broker-level key that supplies the default, e.g. log.retention.ms
    parse: Callable[[str], object]
    default: str
    attr: str                # LogConfig attribute


TOPIC_CONFIGS: dict[str, TopicConfigSpec] = {
    s.name: s
    for s in [
        TopicConfigSpec("cleanup.policy", "log.cleanup.policy", _cleanup_policy, "delete", "cleanup_policy"),
        TopicConfigSpec("retention.ms", "log.retention.ms", _int(-1), str(7 * 24 * 3600 * 1000), "retention_ms"),
        TopicConfigSpec("retention.bytes", "log.retention.bytes", _int(-1), "-1", "retention_bytes"),
        TopicConfigSpec("segment.bytes", "log.segment.bytes", _int(14), str(1 << 30), "segment_bytes"),
        TopicConfigSpec("segment.ms", "log.roll.ms", _int(1), str(7 * 24 * 3600 * 1000), "segment_ms"),
        TopicConfigSpec("segment.index.bytes", "log.index.size.max.bytes", _int(4), str(10 * 1024 * 1024),
                        "segment_index_bytes"),
        TopicConfigSpec("index.interval.bytes", "log.index.interval.bytes", _int(0), "4096", "index_interval_bytes"),
        TopicConfigSpec("max.message.bytes", "message.max.bytes", _int(0), "1048588", "max_message_bytes"),
        TopicConfigSpec("message.timestamp.type", "log.message.timestamp.type",
                        _choice("CreateTime", "LogAppendTime"), "CreateTime", "message_timestamp_type"),
        TopicConfigSpec("min.insync.replicas", "min.insync.replicas", _int(1), "1", "min_insync_replicas"),
        TopicConfigSpec("delete.retention.ms", "log.cleaner.delete.retention.ms", _int(0), str(24 * 3600 * 1000),
                        "delete_retention_ms"),
        TopicConfigSpec("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", _int(0), "0",
                        "min_compaction_lag_ms"),
        TopicConfigSpec("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", lambda v: float(v), "0.5",
                        "min_cleanable_dirty_ratio"),
        TopicConfigSpec("unclean.leader.election.enable", "unclean.leader.election.enable", _bool, "false",
                        "unclean_leader_election_enable"),
        TopicConfigSpec("compression.type", "compression.type",
                        _choice("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"), "producer",
                        "compression_type"),
        # KIP-73's throttled replicas (broker/quota/replication.py): no broker-level synonym, as in Kafka.
        TopicConfigSpec(LEADER_REPLICAS, None, partial(_throttled_replicas, LEADER_REPLICAS), "",
                        "leader_replication_throttled_replicas"),
        TopicConfigSpec(FOLLOWER_REPLICAS, None, partial(_throttled_replicas, FOLLOWER_REPLICAS), "",
                        "follower_replication_throttled_replicas"),
    ]
}


@dataclass(frozen=True)
class LogConfig:
    """Effective per-topic log settings (broker defaults overlaid with topic overrides)."""

    cleanup_policy: str = "delete"
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    min_insync_replicas: int = 1
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    unclean_leader_election_enable: bool = False
    compression_type: str = "producer"
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"


_LIST_KEYS = ("cleanup.policy", LEADER_REPLICAS, FOLLOWER_REPLICAS)
# The broker synonym that holds a topic config's built-in default, where it is not the spec's own broker key:
# Kafka defines log.retention.hours=168 and log.roll.hours=168, not the .ms forms (DescribeConfigs' DEFAULT_CONFIG
# synonym of retention.ms is log.retention.hours=168).
_DEFAULT_SYNONYMS = {"log.retention.ms": ("log.retention.hours", "168"), "log.roll.ms": ("log.roll.hours", "168")}


def default_synonym(spec: TopicConfigSpec) -> tuple[str, str]:
    """(broker key, value) of a topic config's built-in default, as DescribeConfigs names it."""
    key = spec.broker_key or spec.name
    return _DEFAULT_SYNONYMS.get(key, (key, spec.default))


def _shown(key: str, value: str) -> str:
    """A bad value as Kafka's ConfigException prints it: a LIST key's value as the Java list it was split into
    (trailing empty items dropped, as String.split does)."""
    if key not in _LIST_KEYS:
        return value
    items = [i.strip() for i in value.split(",")]
    while items and not items[-1]:
        items.pop()
    return f"[{', '.join(items)}]"


def validate_topic_configs(overrides: Mapping[str, str]) -> dict[str, str]:
    """Check topic-level overrides; raises ConfigError naming the first bad key."""
    clean: dict[str, str] = {}
    for key, value in overrides.items():
        spec = TOPIC_CONFIGS.get(key)
        if spec is None:
            raise ConfigError(f"Unknown topic config name: {key}")
        try:
            spec.parse(value)
        except ValueError as e:
            raise ConfigError(f"Invalid value {_shown(key, value)} for configuration {key}: {e}") from None
        clean[key] = value.strip()
    return clean


# ---------------------------------------------------------------- broker config

_BROKER_KEYS: dict[str, tuple[str, Callable[[str], object]]] = {
    # key: (BrokerConfig attribute, parser)
    "broker.id": ("broker_id", _int(-1)),
    "node.id": ("broker_id", _int(-1)),
    "listeners": ("listeners", _str),
    "advertised.listeners": ("advertised_listeners", _str),
    "log.dirs": ("log_dirs", _str),
    "log.dir": ("log_dirs", _str),
    "num.partitions": ("num_partitions", _int(1)),
    "default.replication.factor": ("default_replication_factor", _int(1)),
    "auto.create.topics.enable": ("auto_create_topics_enable", _bool),
    "delete.topic.enable": ("delete_topic_enable", _bool),
    "log.retention.check.interval.ms": ("log_retention_check_interval_ms", _int(1)),
    "log.flush.interval.messages": ("log_flush_interval_messages", _int(1)),
    "message.max.bytes": ("message_max_bytes", _int(0)),
    "socket.request.max.bytes": ("socket_request_max_bytes", _int(1)),
    "queued.max.request.bytes": ("queued_max_request_bytes", _int(-1)),
    "max.connections": ("max_connections", _int(0)),
    "max.connections.per.ip": ("max_connections_per_ip", _int(0)),
    "max.connection.creation.rate": ("max_connection_creation_rate", _int(0)),
    "max.connections.per.ip.overrides": ("max_connections_per_ip_overrides", _overrides),
    "connections.max.idle.ms": ("connections_max_idle_ms", _int()),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", _int(1)),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", _int(1)),
    # The transaction coordinator (KIP-98): Kafka's TransactionStateManagerConfig / TransactionLogConfig keys.
    "transaction.state.log.num.partitions": ("transaction_state_log_num_partitions", _int(1)),
    "transaction.state.log.replication.factor": ("transaction_state_log_replication_factor", _int(1)),
    "transaction.state.log.min.isr": ("transaction_state_log_min_isr", _int(1)),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", _int(1)),
    "transactional.id.expiration.ms": ("transactional_id_expiration_ms", _int(1)),
    "producer.id.expiration.ms": ("producer_id_expiration_ms", _int(1)),
    "producer.id.expiration.check.interval.ms": ("producer_id_expiration_check_interval_ms", _int(1)),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms":
        ("transaction_abort_timed_out_transaction_cleanup_interval_ms", _int(1)),
    "transaction.remove.expired.transaction.cleanup.interval.ms":
        ("transaction_remove_expired_transaction_cleanup_interval_ms", _int(1)),
    "offsets.retention.minutes": ("offsets_retention_minutes", _int(1)),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", _int(1)),
    "offsets.commit.timeout.ms": ("offsets_commit_timeout_ms", _int(1)),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", _int(0)),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", _int(0)),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", _int(0)),
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", _int(1)),
    "quota.window.num": ("quota_window_num", _int(1)),
    "quota.window.size.seconds": ("quota_window_size_seconds", _int(1)),
    "replication.quota.window.num": ("replication_quota_window_num", _int(1)),
    "replication.quota.window.size.seconds": ("replication_quota_window_size_seconds", _int(1)),
    "group.consumer.min.session.timeout.ms": ("group_consumer_min_session_timeout_ms", _int(1)),
    "group.consumer.max.session.timeout.ms": ("group_consumer_max_session_timeout_ms", _int(1)),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", _int(1)),
    "group.consumer.min.heartbeat.interval.ms": ("group_consumer_min_heartbeat_interval_ms", _int(1)),
    "group.consumer.max.heartbeat.interval.ms": ("group_consumer_max_heartbeat_interval_ms", _int(1)),
    "group.consumer.assignors": ("group_consumer_assignors", _assignors),
    "group.consumer.max.size": ("group_consumer_max_size", _int(1)),
    "group.coordinator.rebalance.protocols": ("group_coordinator_rebalance_protocols", _rebalance_protocols),
    "log.cleaner.enable": ("log_cleaner_enable", _bool),
    "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", _int(0)),
    "zookeeper.connect": ("zookeeper_connect", _str),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", _int(1)),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", _int(1)),
    "auto.leader.rebalance.enable": ("auto_leader_rebalance_enable", _bool),
    "leader.imbalance.check.interval.seconds": ("leader_imbalance_check_interval_seconds", _int(1)),
    "leader.imbalance.per.broker.percentage": ("leader_imbalance_per_broker_percentage", _int(0, 100)),
    "request.timeout.ms": ("request_timeout_ms", _int(1)),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", _int(1)),
    "replica.fetch.wait.max.ms": ("replica_fetch_wait_max_ms", _int(0)),
    "replica.fetch.max.bytes": ("replica_fetch_max_bytes", _int(1)),
    "replica.fetch.response.max.bytes": ("replica_fetch_response_max_bytes", _int(1)),
    "replica.fetch.backoff.ms": ("replica_fetch_backoff_ms", _int(0)),
    "max.incremental.fetch.session.cache.slots": ("max_incremental_fetch_session_cache_slots", _int(0)),
    "controlled.shutdown.enable": ("controlled_shutdown_enable", _bool),
    "broker.rack": ("broker_rack", _str),
    "cluster.id": ("cluster_id", _str),
    "prometheus.listener": ("prometheus_listener", _str),
    "prometheus.naming": ("prometheus_naming", _naming),
    "prometheus.web.config.file": ("prometheus_web_config_file", _web_config),
    "hdr.log.dir": ("hdr_log_dir", _str),
    "authorizer.class.name": ("authorizer_class_name", _str),
    "super.users": ("super_users", _str),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", _bool),
}

# Broker keys that only feed topic defaults; time-unit variants are folded into their .ms form.
_TOPIC_DEFAULT_KEYS = {s.broker_key: s for s in TOPIC_CONFIGS.values() if s.broker_key}
_UNIT_KEYS = {
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.retention.hours": ("log.retention.ms", 3_600_000),
    "log.roll.hours": ("log.roll.ms", 3_600_000),
    # The issue (and many hand-written files) use the topic-level name at broker level.
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", 1),
}
# Keys Kafka has that we accept without acting on them (no warning).
_ACCEPTED_IGNORED = {
    "num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir", "log.flush.interval.ms",
}
# Listener security keys, read from `static` by broker.network.listeners (and `listener.name.<l>.*` overrides).
_SECURITY_KEYS = {
    "listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
    "sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "connections.max.reauth.ms",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates", "ssl.client.auth", "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
}
_UNIT_PRIORITY = {"log.retention.ms": 0, "log.retention.minutes": 1, "log.retention.hours": 2,
                  "log.roll.ms": 0, "log.roll.hours": 1}


@dataclass
class Listener:
    name: str
    host: str
    port: int


def parse_listeners(value: str, key: str) -> list[Listener]:
    out = []
    for item in filter(None, (s.strip() for s in value.split(","))):
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:]*):(\d+)", item)
        if not m:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: expected NAME://HOST:PORT")
        host = m.group(2).strip("[]")
        out.append(Listener(m.group(1), host, int(m.group(3))))
    if not out:
        raise ConfigError(f"Invalid value {value!r} for configuration {key}: no listener")
    return out


@dataclass
class BrokerConfig:
    """Typed server.properties. `topic_defaults` holds broker-level defaults for topic configs."""

    broker_id: int = 0
    listeners: str = "PLAINTEXT://127.0.0.1:9092"
    advertised_listeners: str = ""
    log_dirs: str = "/tmp/kafkascope-logs"
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    log_retention_check_interval_ms: int = 300_000
    log_flush_interval_messages: int = 2**63 - 1
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    queued_max_request_bytes: int = -1  # bytes of requests read and not yet handled, all connections; <= 0: unbounded
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    max_connection_creation_rate: int = 2**31 - 1   # KIP-612: connections a second the acceptors take
    max_connections_per_ip_overrides: str = ""      # host:count,... (broker/quota/connection_limits.py)
    connections_max_idle_ms: int = 600_000          # a connection idle this long is closed; negative: never
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    offsets_commit_timeout_ms: int = 5000
    group_initial_rebalance_delay_ms: int = 3000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    producer_id_expiration_ms: int = 24 * 3600 * 1000     # an idle idempotent producer's state is forgotten
    producer_id_expiration_check_interval_ms: int = 600_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    quota_window_num: int = 11             # client quotas: samples of quota.window.size.seconds each
    quota_window_size_seconds: int = 1
    replication_quota_window_num: int = 11     # replication throttles: samples of ...window.size.seconds each
    replication_quota_window_size_seconds: int = 1
    # KIP-848 consumer groups (Kafka 4's defaults).
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_assignors: str = "uniform,range"
    group_consumer_max_size: int = 2**31 - 1   # Kafka's default, Integer.MAX_VALUE
    group_coordinator_rebalance_protocols: str = "classic,consumer"
    log_cleaner_enable: bool = True
    log_cleaner_backoff_ms: int = 15_000
    zookeeper_connect: str = ""
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int = 18_000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    request_timeout_ms: int = 30_000
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_response_max_bytes: int = 10485760
    replica_fetch_backoff_ms: int = 1000
    max_incremental_fetch_session_cache_slots: int = 1000  # split over 8 shards, as Kafka 3.9
    controlled_shutdown_enable: bool = True
    broker_rack: str = ""
    cluster_id: str = ""
    prometheus_listener: str = ""   # host:port of the /metrics endpoint; off when empty
    prometheus_naming: str = "strimzi"
    prometheus_web_config_file: str = ""   # TLS / basic auth for /metrics (exporter-toolkit web.config.file)
    hdr_log_dir: str = ""           # HdrHistogram interval logs per request type; off when empty
    authorizer_class_name: str = ""  # AclAuthorizer / StandardAuthorizer: ACLs decide (broker/protocol/authz.py)
    super_users: str = ""            # `User:admin;User:bob`
    allow_everyone_if_no_acl_found: bool = False
    topic_defaults: dict[str, str] = field(default_factory=dict)
    # Raw keys as given (static broker config), for DescribeConfigs on the broker entity.
    static: dict[str, str] = field(default_factory=dict)

    @property
    def unclean_leader_election_enable(self) -> bool:
        """Broker default (a topic default key); topics override it."""
        return _bool(self.topic_defaults.get("unclean.leader.election.enable", "false"))

    @property
    def min_insync_replicas(self) -> int:
        """Broker default (a topic default key); topics override it."""
        return int(self.topic_defaults.get("min.insync.replicas", "1"))

    @property
    def listener(self) -> Listener:
        return parse_listeners(self.listeners, "listeners")[0]

    @property
    def advertised(self) -> Listener:
        if self.advertised_listeners:
            return parse_listeners(self.advertised_listeners, "advertised.listeners")[0]
        lst = self.listener
        return Listener(lst.name, lst.host or "127.0.0.1", lst.port)

    @property
    def log_dir_list(self) -> list[Path]:
        return [Path(p.strip()) for p in self.log_dirs.split(",") if p.strip()]

    def log_config(self, overrides: Mapping[str, str] | None = None,
                   dynamic: Mapping[str, tuple[str, str]] | None = None) -> LogConfig:
        """Effective LogConfig: built-in default < static broker default < dynamic broker default (topic name ->
        (value, source), broker_configs.dynamic_topic_defaults) < topic override."""
        values: dict[str, Any] = {}  # attribute -> parsed value, of each spec's own type
        for spec in TOPIC_CONFIGS.values():
            raw = self.topic_config_source(spec.name, overrides or {}, dynamic)[0]
            values[spec.attr] = spec.parse(raw)
        return LogConfig(**values)

    def topic_config_source(self, name: str, overrides: Mapping[str, str],
                            dynamic: Mapping[str, tuple[str, str]] | None = None) -> tuple[str, str]:
        """(value, source) where source is 'topic', 'dynamic_broker', 'dynamic_default', 'static_broker' or
        'default' (DescribeConfigs)."""
        spec = TOPIC_CONFIGS[name]
        if name in overrides:
            return overrides[name], "topic"
        if dynamic and name in dynamic:
            return dynamic[name]
        if name in self.topic_defaults:
            return self.topic_defaults[name], "static_broker"
        return spec.default, "default"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        cfg = cls()
        cfg.static = dict(props)
        attrs: dict[str, object] = {}
        unit_seen: dict[str, int] = {}
        for key, raw in props.items():
            try:
                if key in _BROKER_KEYS:
                    attr, parse = _BROKER_KEYS[key]
                    attrs[attr] = parse(raw)
                elif key in _UNIT_KEYS or key in _TOPIC_DEFAULT_KEYS:
                    target, scale = _UNIT_KEYS.get(key, (key, 1))
                    spec = _TOPIC_DEFAULT_KEYS[target]
                    if key in _UNIT_KEYS:
                        value = str(_int(-1)(raw) * scale if _int(-1)(raw) >= 0 else -1)
                    else:
                        value = raw.strip()
                    spec.parse(value)
                    # Kafka: the finest unit given wins (ms over minutes over hours).
                    prio = _UNIT_PRIORITY.get(key, 0)
                    if spec.name not in unit_seen or prio < unit_seen[spec.name]:
                        cfg.topic_defaults[spec.name] = value
                        unit_seen[spec.name] = prio
                    if target == "message.max.bytes":
                        attrs["message_max_bytes"] = int(value)
                elif key in _SECURITY_KEYS or key.startswith("listener.name."):
                    pass
                elif key not in _ACCEPTED_IGNORED:
                    log.warning("unknown configuration key %r ignored", key)
            except ValueError as e:
                raise ConfigError(f"Invalid value {raw!r} for configuration {key}: {e}") from None
        for attr, parsed in attrs.items():
            setattr(cfg, attr, parsed)
        if "message.max.bytes" in props:
            cfg.topic_defaults["max.message.bytes"] = str(cfg.message_max_bytes)
        parse_listeners(cfg.listeners, "listeners")
        if cfg.advertised_listeners:
            parse_listeners(cfg.advertised_listeners, "advertised.listeners")
        if 0 < cfg.queued_max_request_bytes < cfg.socket_request_max_bytes:  # KafkaConfig; <= 0: unbounded
            raise ConfigError("queued.max.request.bytes must be -1 or at least socket.request.max.bytes")
        if cfg.group_min_session_timeout_ms > cfg.group_max_session_timeout_ms:
            raise ConfigError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        _check_consumer_group_timeouts(cfg)
        return cfg

    @classmethod
    def load(cls, path: str | Path, overrides: list[str] | None = None) -> BrokerConfig:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None
        props = parse_properties(text)
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"--override expects key=value, got {item!r}")
            k, v = item.split("=", 1)
            props[k.strip()] = v
        return cls.from_properties(props)

    def replace(self, **changes: Any) -> BrokerConfig:
        return dataclasses.replace(self, **changes)


def _check_consumer_group_timeouts(cfg: BrokerConfig) -> None:
    """Kafka's GroupCoordinatorConfig checks: each value within its min and max, the heartbeat below the session."""
    for name in ("session.timeout.ms", "heartbeat.interval.ms"):
        attr = name.replace(".", "_")
        value = getattr(cfg, f"group_consumer_{attr}")
        lo = getattr(cfg, f"group_consumer_min_{attr}")
        hi = getattr(cfg, f"group_consumer_max_{attr}")
        if lo > hi:
            raise ConfigError(f"group.consumer.min.{name} must not exceed group.consumer.max.{name}")
        if not lo <= value <= hi:
            raise ConfigError(f"group.consumer.{name} must be between group.consumer.min.{name} ({lo}) and "
                              f"group.consumer.max.{name} ({hi}), got {value}")
    if cfg.group_consumer_heartbeat_interval_ms >= cfg.group_consumer_session_timeout_ms:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
