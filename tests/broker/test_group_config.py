"""KIP-848's dynamic group configs: Kafka 4.1's GroupConfig validation (pure), DescribeConfigs and
IncrementalAlterConfigs on a GROUP resource through the in-process broker, the coordinator using a group's own
session timeout and heartbeat interval, ListConfigResources, and the overrides kept across a restart."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig
from broker.coordinator import group_config as gc
from broker.errors import KafkaError
from tests.broker.harness import Harness
from tests.broker.test_consumer_group_handlers import CREATE_TOPICS, beat

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
GROUP, SET, DELETE, APPEND = 32, 0, 1, 2
DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 5, 8


def _refused(overrides: dict[str, str], cfg: BrokerConfig | None = None) -> str:
    with pytest.raises(KafkaError) as e:
        gc.validate(overrides, cfg or BrokerConfig())
    assert e.value.code == ErrorCode.invalid_config
    return str(e.value.message)


def test_kafka_4_1s_validation_and_messages():
    cfg = BrokerConfig()
    assert gc.validate({"consumer.session.timeout.ms": "50000"}, cfg) == {"consumer.session.timeout.ms": "50000"}
    assert _refused({"no.such": "1"}) == "Unknown group config name: no.such"
    assert _refused({"consumer.session.timeout.ms": "1000"}) == (
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    assert _refused({"consumer.heartbeat.interval.ms": "20000"}) == (
        "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    assert _refused({"consumer.session.timeout.ms": "x"}) == (
        "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT")
    assert _refused({"consumer.session.timeout.ms": "0"}) == (
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1")
    assert _refused({"streams.num.standby.replicas": "3"}) == (
        "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas")
    assert "String must be one of" in _refused({"share.isolation.level": "dirty"})
    assert gc.validate({"share.auto.offset.reset": "by_duration:PT1H"}, cfg)
    assert "by_duration" in _refused({"share.auto.offset.reset": "yesterday"})
    # the bounds and the default are the broker's: a session at the heartbeat interval is refused
    wide = BrokerConfig(group_consumer_min_session_timeout_ms=1000, group_consumer_min_heartbeat_interval_ms=1000)
    assert _refused({"consumer.session.timeout.ms": "5000"}, wide) == (
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    assert gc.default("consumer.session.timeout.ms", BrokerConfig(group_consumer_session_timeout_ms=50_000)) == "50000"


def _interval_ms(resp) -> int:
    return int(resp.heartbeat_interval.total_seconds() * 1000)


def _alter(h: Harness, group: str, *ops: tuple[str, int, str | None]):
    return h.request(INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
        {"resource_type": GROUP, "resource_name": group,
         "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}]}).responses[0]


def _describe(h: Harness, group: str, keys: list[str] | None = None) -> dict[str, tuple[str, int]]:
    r = h.request(DESCRIBE_CONFIGS, 4, {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}]}).results[0]
    assert r.error_code == ErrorCode.none, r
    return {c.name: (c.value, c.config_source) for c in r.configs}


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path, **{"group.consumer.session.timeout.ms": 6000, "group.consumer.min.session.timeout.ms": 1000,
                              "group.consumer.heartbeat.interval.ms": 1000,
                              "group.consumer.min.heartbeat.interval.ms": 100}) as harness:
        resp = harness.request(CREATE_TOPICS, 7, {"topics": [{"name": "t", "num_partitions": 4, "replication_factor": 1,
                                                             "assignments": [], "configs": []}],
                                                  "timeout": 5000, "validate_only": False})
        assert resp.topics[0].error_code == ErrorCode.none
        yield harness


def test_a_groups_heartbeat_interval_and_session_timeout_come_from_its_config(h):
    described = _describe(h, "g")
    assert len(described) == len(gc.KEYS) and described["consumer.heartbeat.interval.ms"] == ("1000", DEFAULT_CONFIG)
    assert _interval_ms(beat(h.client, "A", 0)) == 1000
    assert _alter(h, "g", ("consumer.heartbeat.interval.ms", SET, "2500"),
                  ("consumer.session.timeout.ms", SET, "9000")).error_code == ErrorCode.none
    assert _describe(h, "g", ["consumer.heartbeat.interval.ms"]) == {
        "consumer.heartbeat.interval.ms": ("2500", DYNAMIC_GROUP_CONFIG)}
    r = beat(h.client, "A", 1)
    assert r.error_code == ErrorCode.none and _interval_ms(r) == 2500
    assert _interval_ms(beat(h.client, "B", 0, group="other")) == 1000   # other groups keep the broker's
    group = h.broker.group_coordinator.consumer.coordinator.group("g")
    assert group is not None and group.members["A"].session_deadline_ms - h.clock.monotonic() * 1000 == 9000
    h.advance(7000)   # past the broker's 6 s, within the group's 9 s: still a member
    assert beat(h.client, "A", 1).error_code == ErrorCode.none
    assert _alter(h, "g", ("consumer.heartbeat.interval.ms", DELETE, None)).error_code == ErrorCode.none
    assert _interval_ms(beat(h.client, "A", 1)) == 1000


def test_bad_changes_are_refused_and_change_nothing(h):
    bad = _alter(h, "g", ("consumer.session.timeout.ms", SET, "500"))
    assert bad.error_code == ErrorCode.invalid_config
    assert bad.error_message == ("consumer.session.timeout.ms must be greater than or equal to "
                                 "group.consumer.min.session.timeout.ms")
    assert _alter(h, "g", ("consumer.session.timeout.ms", APPEND, "1")).error_code == ErrorCode.invalid_config
    assert _alter(h, "", ("consumer.session.timeout.ms", SET, "9000")).error_code == ErrorCode.invalid_request
    assert all(source == DEFAULT_CONFIG for _, source in _describe(h, "g").values())


def test_list_config_resources_names_groups_and_configs_outlive_a_restart(tmp_path):
    with Harness(tmp_path) as h:
        assert _alter(h, "configured", ("consumer.session.timeout.ms", SET, "50000")).error_code == ErrorCode.none
        listed = h.request(LIST_CONFIG_RESOURCES, 1, {"resource_types": [GROUP]})
        assert listed.error_code == ErrorCode.none
        assert [(r.resource_name, r.resource_type) for r in listed.config_resources] == [("configured", GROUP)]
        assert h.request(LIST_CONFIG_RESOURCES, 0, {}).config_resources == ()   # v0: client metrics, none here
    with Harness(tmp_path) as h:
        assert _describe(h, "configured")["consumer.session.timeout.ms"] == ("50000", DYNAMIC_GROUP_CONFIG)
