"""The KIP-848 broker keys: Kafka 4's defaults, the min/max checks, assignor and protocol names."""

import pytest

from broker.config import BrokerConfig, ConfigError


def test_defaults_are_kafkas():
    c = BrokerConfig.from_properties({})
    assert (c.group_consumer_session_timeout_ms, c.group_consumer_heartbeat_interval_ms) == (45_000, 5_000)
    assert (c.group_consumer_min_session_timeout_ms, c.group_consumer_max_session_timeout_ms) == (45_000, 60_000)
    assert (c.group_consumer_min_heartbeat_interval_ms, c.group_consumer_max_heartbeat_interval_ms) == (5_000, 15_000)
    assert c.group_consumer_assignors == "uniform,range"
    assert c.group_coordinator_rebalance_protocols == "classic,consumer"


def test_short_session_needs_its_minimum_lowered():
    with pytest.raises(ConfigError, match="group.consumer.session.timeout.ms must be between"):
        BrokerConfig.from_properties({"group.consumer.session.timeout.ms": "6000"})
    c = BrokerConfig.from_properties({"group.consumer.session.timeout.ms": "6000",
                                      "group.consumer.min.session.timeout.ms": "1000",
                                      "group.consumer.heartbeat.interval.ms": "500",
                                      "group.consumer.min.heartbeat.interval.ms": "100"})
    assert c.group_consumer_session_timeout_ms == 6000
    with pytest.raises(ConfigError, match="less than group.consumer.session.timeout.ms"):
        BrokerConfig.from_properties({"group.consumer.heartbeat.interval.ms": "50000",
                                      "group.consumer.max.heartbeat.interval.ms": "60000"})


def test_assignors_and_protocols():
    c = BrokerConfig.from_properties(
        {"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform"})
    assert c.group_consumer_assignors == "range,uniform"
    with pytest.raises(ConfigError, match="group.consumer.assignors"):
        BrokerConfig.from_properties({"group.consumer.assignors": "cooperative-sticky"})
    with pytest.raises(ConfigError, match="classic must be enabled"):
        BrokerConfig.from_properties({"group.coordinator.rebalance.protocols": "consumer"})
    assert BrokerConfig.from_properties(
        {"group.coordinator.rebalance.protocols": "classic"}).group_coordinator_rebalance_protocols == "classic"


def test_group_consumer_max_size():
    """Kafka's default is Integer.MAX_VALUE (no limit) and its minimum 1; the coordinator's settings carry it."""
    from broker.coordinator.consumer.service import ConsumerGroupService
    from broker.coordinator.group_metadata_manager import GroupMetadataManager
    from common.clock import ManualClock

    assert BrokerConfig.from_properties({}).group_consumer_max_size == 2**31 - 1
    with pytest.raises(ConfigError, match="group.consumer.max.size"):
        BrokerConfig.from_properties({"group.consumer.max.size": "0"})
    c = BrokerConfig.from_properties({"group.consumer.max.size": "3"})
    clock = ManualClock()
    service = ConsumerGroupService(c, clock, GroupMetadataManager(c, clock, None))   # type: ignore[arg-type]
    assert service.coordinator.settings.max_size == 3
