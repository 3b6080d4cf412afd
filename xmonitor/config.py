"""xmonitor's configuration: a typed dataclass loaded from YAML, with Xinfra Monitor's key names and meanings.

The YAML file is flat and uses Xinfra's dotted keys (``produce.record.delay.ms: 100``); nested mappings are
flattened the same way (``produce: {record.delay.ms: 100}``), so either style works. Unknown keys are an error,
so a misspelt key is never silently ignored. Client properties (librdkafka names) go in ``client.props`` (applied
to every client: security settings live in one place) and ``produce.producer.props`` / ``consume.consumer.props``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from exporter.web_config import WebConfig, WebConfigError
from exporter.web_config import load as load_web_config


class ConfigError(ValueError):
    """A config file or value that does not make sense (exit status 2 on the command line)."""


@dataclass
class MonitorConfig:
    bootstrap_servers: str = ""
    cluster_name: str = "kafka"                 # label on every series and SLI row
    app_name: str = "single-cluster-monitor"    # Xinfra's entry name: the `name=` tag of the kmf MBeans
    topic: str = "xinfra-monitor-topic"
    # produce service
    produce_record_delay_ms: int = 100          # gap between sends to the same partition
    produce_record_size_byte: int = 100         # 'x' padding in the payload's content field
    produce_producer_id: str = "xmonitor-producer"
    produce_request_timeout_ms: int = 20000     # a send not acknowledged by then is an error
    produce_treat_zero_throughput_as_unavailable: bool = True
    # true: each leader's partitions send evenly spread over the interval, so no record queues behind the
    # probe's own (what a lone record sees, as e2e-latency measures it); false: every partition on one tick, as
    # Xinfra schedules them (about 0.7x the CPU, but with librdkafka's one request per partition the tick's last
    # record waits for all the others: benchmarks/xmonitor_agreement.py, xmonitor_overhead.py)
    produce_spread_sends: bool = True
    produce_producer_props: dict[str, Any] = field(default_factory=dict)
    # ours: each probe round (one record per partition) in a transaction, read back read_committed (xmonitor/txn.py)
    produce_transactional_enabled: bool = False
    # consume service
    consume_latency_sla_ms: int = 20000         # end-to-end delay above this counts as late (unavailable)
    consume_group_id: str = ""                  # default: xmonitor-<cluster.name>-<topic>
    consume_loss_grace_ms: int = 5000           # a sequence gap is counted lost once it is this old (reordering)
    consume_commit_interval_ms: int = 4000      # the consumer's own async offset commits
    consume_latency_percentile_max_ms: int = 60000  # kmf percentile gauges' bucket range (Xinfra: 5000)
    consume_latency_percentile_granularity_ms: int = 1
    consume_consumer_props: dict[str, Any] = field(default_factory=dict)
    # offset-commit service
    offset_commit_interval_ms: int = 2000
    offset_commit_enabled: bool = True
    # topic management
    topic_management_enabled: bool = True
    topic_creation_enabled: bool = True
    topic_add_partition_enabled: bool = True
    topic_reassign_and_elect_enabled: bool = True
    partitions_to_brokers_ratio: float = 1.0
    min_partition_num: int = 1
    replication_factor: int = 1
    min_insync_replicas: int | None = None      # topic config min.insync.replicas (None: the broker default)
    topic_props: dict[str, Any] = field(default_factory=dict)
    rebalance_interval_ms: int = 600000
    preferred_leader_election_check_interval_ms: int = 300000
    metadata_refresh_interval_ms: int = 5000    # leaders (for labels) and partition count
    # outputs
    sli_dir: str | None = None                  # SLI interval Parquet files; None: no files
    sli_interval_ms: int = 10000
    prometheus_listener: str | None = None      # host:port for /metrics; None: no HTTP server
    web_config_file: str | None = None          # exporter-toolkit web config (TLS, basic auth) for /metrics
    client_props: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------------
    def validate(self) -> MonitorConfig:
        if not self.bootstrap_servers:
            raise ConfigError("bootstrap.servers is required (--bootstrap-servers)")
        for name in ("produce_record_delay_ms", "sli_interval_ms", "rebalance_interval_ms", "consume_latency_sla_ms",
                     "replication_factor", "min_partition_num", "metadata_refresh_interval_ms",
                     "offset_commit_interval_ms", "consume_commit_interval_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{KEY_OF[name]} must be > 0 (got {getattr(self, name)})")
        if self.produce_record_size_byte < 0:
            raise ConfigError("produce.record.size.byte must be >= 0")
        if not (self.partitions_to_brokers_ratio > 0 and math.isfinite(self.partitions_to_brokers_ratio)):
            raise ConfigError("topic-management.partitionsToBrokersRatio must be > 0")
        if self.prometheus_listener is not None:
            parse_listener(self.prometheus_listener)
        if self.web_config_file:
            self.web_config()
        return self

    def web_config(self) -> WebConfig | None:
        """The parsed web.config.file, or None without one; a bad file is a ConfigError naming its key."""
        if not self.web_config_file:
            return None
        try:
            return load_web_config(self.web_config_file)
        except WebConfigError as e:
            raise ConfigError(f"web.config.file: {e}") from None

    @property
    def group_id(self) -> str:
        return self.consume_group_id or f"xmonitor-{self.cluster_name}-{self.topic}"

    @property
    def listener(self) -> tuple[str, int] | None:
        return parse_listener(self.prometheus_listener) if self.prometheus_listener else None

    def with_overrides(self, **overrides: Any) -> MonitorConfig:
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None}).validate()


# Xinfra key (or ours where Xinfra has none) for every field.
KEY_OF: dict[str, str] = {
    "bootstrap_servers": "bootstrap.servers",
    "cluster_name": "cluster.name",
    "app_name": "name",
    "topic": "topic",
    "produce_record_delay_ms": "produce.record.delay.ms",
    "produce_record_size_byte": "produce.record.size.byte",
    "produce_producer_id": "produce.producer.id",
    "produce_request_timeout_ms": "produce.request.timeout.ms",
    "produce_treat_zero_throughput_as_unavailable": "produce.treat.zero.throughput.as.unavailable",
    "produce_spread_sends": "produce.spread.sends",
    "produce_producer_props": "produce.producer.props",
    "produce_transactional_enabled": "produce.transactional.enabled",
    "consume_latency_sla_ms": "consume.latency.sla.ms",
    "consume_group_id": "consume.group.id",
    "consume_loss_grace_ms": "consume.loss.grace.ms",
    "consume_commit_interval_ms": "consume.commit.interval.ms",
    "consume_latency_percentile_max_ms": "consume.latency.percentile.max.ms",
    "consume_latency_percentile_granularity_ms": "consume.latency.percentile.granularity.ms",
    "consume_consumer_props": "consume.consumer.props",
    "offset_commit_interval_ms": "offset.commit.interval.ms",
    "offset_commit_enabled": "offset.commit.enabled",
    "topic_management_enabled": "topic-management.topicManagementEnabled",
    "topic_creation_enabled": "topic-management.topicCreationEnabled",
    "topic_add_partition_enabled": "topic-management.topicAddPartitionEnabled",
    "topic_reassign_and_elect_enabled": "topic-management.topicReassignPartitionAndElectLeaderEnabled",
    "partitions_to_brokers_ratio": "topic-management.partitionsToBrokersRatio",
    "min_partition_num": "topic-management.minPartitionNum",
    "replication_factor": "topic-management.replicationFactor",
    "min_insync_replicas": "topic-management.min.insync.replicas",
    "topic_props": "topic-management.topic.props",
    "rebalance_interval_ms": "topic-management.rebalance.interval.ms",
    "preferred_leader_election_check_interval_ms": "topic-management.preferred.leader.election.check.interval.ms",
    "metadata_refresh_interval_ms": "metadata.refresh.interval.ms",
    "sli_dir": "sli.dir",
    "sli_interval_ms": "sli.interval.ms",
    "prometheus_listener": "prometheus.listener",
    "web_config_file": "web.config.file",
    "client_props": "client.props",
}
FIELD_OF = {v: k for k, v in KEY_OF.items()}
_DICT_FIELDS = {"produce_producer_props", "consume_consumer_props", "topic_props", "client_props"}


def parse_listener(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"prometheus.listener must be HOST:PORT (got {text!r})")
    return host or "127.0.0.1", int(port)


def _flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if key in FIELD_OF and FIELD_OF[key] in _DICT_FIELDS:
            out[key] = v
        elif isinstance(v, dict) and key not in FIELD_OF:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _coerce(name: str, value: Any) -> Any:
    f = {f.name: f for f in fields(MonitorConfig)}[name]
    t = str(f.type)
    try:
        if name in _DICT_FIELDS:
            if not isinstance(value, dict):
                raise TypeError("a mapping")
            return {str(k): v for k, v in value.items()}
        if value is None:
            return None
        if t.startswith("bool"):
            if isinstance(value, str):
                if value.lower() in ("true", "false"):
                    return value.lower() == "true"
                raise TypeError("true or false")
            return bool(value)
        if t.startswith("int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise TypeError("an integer")
            return int(value)
        if t.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{KEY_OF[name]}: expected {e if isinstance(e, TypeError) else t} "
                          f"(got {value!r})") from None


def from_mapping(data: dict[str, Any]) -> MonitorConfig:
    values = {}
    for key, value in _flatten(data).items():
        if key not in FIELD_OF:
            raise ConfigError(f"unknown config key {key!r}")
        values[FIELD_OF[key]] = _coerce(FIELD_OF[key], value)
    return MonitorConfig(**values)


def load(path: str | Path | None, **overrides: Any) -> MonitorConfig:
    """The YAML file (if any), then non-None keyword overrides (field names), validated."""
    data: dict[str, Any] = {}
    if path:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: invalid YAML: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of config keys")
    return from_mapping(data).with_overrides(**overrides)
