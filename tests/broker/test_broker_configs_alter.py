"""Dynamic broker configs on a standalone broker: the replication throttle rates set per broker or as the cluster
default (IncrementalAlterConfigs and AlterConfigs), described with their sources, applied to the replication quotas
at once and kept across a restart; bad values refused with Kafka 3.9's answers (tests/interop/test_broker_configs.py
compares the kafka-configs.sh lines)."""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.quota.replication import UNBOUNDED
from tests.broker.harness import Harness

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, BROKER = 32, 33, 44, 4
SET, DELETE, APPEND = 0, 1, 2
LEADER, FOLLOWER = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3


def _incremental(h: Harness, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):
    return h.request(INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": validate_only, "resources": [
        {"resource_type": BROKER, "resource_name": name,
         "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}]}).responses[0]


def _describe(h: Harness, name: str, *keys: str) -> dict:
    res = h.request(DESCRIBE_CONFIGS, 4, {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": BROKER, "resource_name": name, "configuration_keys": list(keys) or None}]}).results[0]
    assert res.error_code == ErrorCode.none, res.error_message
    return {c.name: (c.value, c.config_source, c.read_only, [(s.value, s.source) for s in c.synonyms])
            for c in res.configs}


def test_throttle_rates_per_broker_and_default_with_their_sources(tmp_path):
    with Harness(tmp_path) as h:
        quotas = h.broker.replication_quotas
        assert quotas.leader.bound is None   # nothing stored: no bound, as Kafka before any broker config
        assert LEADER not in _describe(h, "0")   # a rate set nowhere is not listed, as Kafka lists none

        assert _incremental(h, "", (LEADER, SET, "5000"), (FOLLOWER, SET, "7000")).error_code == ErrorCode.none
        assert (quotas.leader.bound, quotas.follower.bound) == (5000, 7000)
        assert _incremental(h, "0", (LEADER, SET, "1000")).error_code == ErrorCode.none
        assert (quotas.leader.bound, quotas.follower.bound) == (1000, 7000)   # its own value, else the default

        # Kafka 3.9 marks the rates read-only (they are not in DynamicBrokerConfig.AllDynamicConfigs) and gives
        # them no DEFAULT_CONFIG synonym.
        described = _describe(h, "0", LEADER, FOLLOWER)
        assert described[LEADER] == ("1000", DYNAMIC_BROKER, True, [("1000", DYNAMIC_BROKER), ("5000", DYNAMIC_DEFAULT)])
        assert described[FOLLOWER] == ("7000", DYNAMIC_DEFAULT, True, [("7000", DYNAMIC_DEFAULT)])
        assert set(_describe(h, "")) == {LEADER, FOLLOWER}   # the default lists what is set there only
        assert _describe(h, "", LEADER)[LEADER] == ("5000", DYNAMIC_DEFAULT, True, [("5000", DYNAMIC_DEFAULT)])

        assert _incremental(h, "0", (LEADER, DELETE, None)).error_code == ErrorCode.none
        assert quotas.leader.bound == 5000
        assert _incremental(h, "", (LEADER, DELETE, None), (FOLLOWER, DELETE, None)).error_code == ErrorCode.none
        assert (quotas.leader.bound, quotas.follower.bound) == (UNBOUNDED, UNBOUNDED)


def test_stored_configs_survive_a_restart(tmp_path):
    with Harness(tmp_path) as h:
        assert _incremental(h, "0", (FOLLOWER, SET, "123456")).error_code == ErrorCode.none
    with Harness(tmp_path) as h:
        assert h.broker.replication_quotas.follower.bound == 123456
        assert _describe(h, "0", FOLLOWER)[FOLLOWER][:2] == ("123456", DYNAMIC_BROKER)


def test_legacy_alter_replaces_the_whole_entity_and_validate_only_stores_nothing(tmp_path):
    with Harness(tmp_path) as h:
        _incremental(h, "0", (LEADER, SET, "1000"), (FOLLOWER, SET, "2000"))
        assert _incremental(h, "0", (LEADER, SET, "9"), validate_only=True).error_code == ErrorCode.none
        assert h.broker.replication_quotas.leader.bound == 1000
        legacy = h.request(ALTER_CONFIGS, 2, {"validate_only": False, "resources": [
            {"resource_type": BROKER, "resource_name": "0", "configs": [{"name": FOLLOWER, "value": "3000"}]}]})
        assert legacy.responses[0].error_code == ErrorCode.none
        assert h.broker.metadata.broker_configs().get("0") == {FOLLOWER: "3000"}
        assert h.broker.replication_quotas.leader.bound == UNBOUNDED


def test_bad_keys_values_and_resource_names_are_refused_with_kafkas_messages(tmp_path):
    with Harness(tmp_path) as h:
        # Kafka 3.9's answers (INVALID_REQUEST), from a real cluster.
        cases = [
            ("0", (LEADER, SET, "abc"), ErrorCode.invalid_request,
             f"Invalid value abc for configuration {LEADER}: Not a number of type LONG"),
            ("", (LEADER, SET, "-5"), ErrorCode.invalid_request,
             f"Invalid value -5 for configuration {LEADER}: Value must be at least 0"),
            ("0", ("num.partitions", SET, "3"), ErrorCode.invalid_request,
             "Cannot update these configs dynamically: Set(num.partitions)"),
            ("0", (LEADER, APPEND, "1"), ErrorCode.invalid_config,
             f"Config value append is not allowed for config key: {LEADER}"),
            ("7", (LEADER, SET, "1"), ErrorCode.invalid_request, "Unexpected broker id, expected 0, but received 7"),
            ("x", (LEADER, SET, "1"), ErrorCode.invalid_request, "Broker id must be an integer, but it is: x"),
        ]
        for name, op, code, message in cases:
            res = _incremental(h, name, op)
            assert res.error_code == code and message in res.error_message, (name, op, res.error_message)
        assert "server.properties" in _incremental(h, "0", ("log.cleaner.threads", SET, "2")).error_message
        assert h.broker.metadata.broker_configs().get("0") == {}
        assert h.broker.replication_quotas.leader.bound is None


def _describe_topic(h: Harness, topic: str, key: str):
    res = h.request(DESCRIBE_CONFIGS, 4, {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": 2, "resource_name": topic, "configuration_keys": [key]}]}).results[0]
    (c,) = res.configs
    return c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms]


def test_log_config_defaults_change_at_run_time_for_topics_without_their_own(tmp_path):
    """DynamicLogConfig: `kafka-configs.sh --entity-type brokers --entity-default --alter --add-config
    log.retention.ms=...` is what an operator does when disks fill; every topic without its own retention.ms
    follows at once, and says where its value comes from."""
    from tests.broker.test_inproc_handlers import create

    with Harness(tmp_path) as h:
        create(h, "t")
        create(h, "own")
        h.request(INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": 2, "resource_name": "own", "configs": [
                {"name": "retention.ms", "config_operation": SET, "value": "5000"}]}]})
        assert _incremental(h, "", ("log.retention.ms", SET, "3600000")).error_code == ErrorCode.none
        plog = next(p for p in h.broker.logs.logs() if p.topic == "t")
        assert plog.config.retention_ms == 3_600_000                      # the live log, not only new ones
        assert h.broker.log_config("own").retention_ms == 5000            # its own value wins
        assert _describe_topic(h, "t", "retention.ms") == ("3600000", DYNAMIC_DEFAULT, [
            ("log.retention.ms", "3600000", DYNAMIC_DEFAULT), ("log.retention.hours", "168", 5)])
        assert _incremental(h, "0", ("log.retention.ms", SET, "7200000")).error_code == ErrorCode.none
        assert plog.config.retention_ms == 7_200_000 and _describe_topic(h, "t", "retention.ms") == (
            "7200000", DYNAMIC_BROKER, [("log.retention.ms", "7200000", DYNAMIC_BROKER),
                                        ("log.retention.ms", "3600000", DYNAMIC_DEFAULT),
                                        ("log.retention.hours", "168", 5)])
        described = _describe(h, "0", "log.retention.ms")["log.retention.ms"]
        assert described == ("7200000", DYNAMIC_BROKER, False, [("7200000", DYNAMIC_BROKER),
                                                                ("3600000", DYNAMIC_DEFAULT), ("168", 5)])
        bad = _incremental(h, "", ("log.retention.ms", SET, "soon"))
        assert bad.error_code == ErrorCode.invalid_request and "Invalid value soon for configuration " \
            "log.retention.ms" in bad.error_message
        assert _incremental(h, "0", ("log.retention.ms", DELETE, None)).error_code == ErrorCode.none
        assert _incremental(h, "", ("log.retention.ms", DELETE, None)).error_code == ErrorCode.none
        assert plog.config.retention_ms == 604_800_000


def test_max_connection_creation_rate_changes_at_run_time(tmp_path):
    with Harness(tmp_path, max_connection_creation_rate=50) as h:
        connections = h.broker.quotas.connections
        assert connections.broker_bound == 50.0                                   # server.properties
        assert _incremental(h, "", ("max.connection.creation.rate", SET, "20")).error_code == ErrorCode.none
        assert connections.broker_bound == 20.0
        assert _describe(h, "0", "max.connection.creation.rate")["max.connection.creation.rate"] == (
            "20", DYNAMIC_DEFAULT, False, [("20", DYNAMIC_DEFAULT), ("50", 4), (str(2**31 - 1), 5)])
        bad = _incremental(h, "0", ("max.connection.creation.rate", SET, str(2**31)))
        assert bad.error_code == ErrorCode.invalid_request and "Not a number of type INT" in bad.error_message
        assert _incremental(h, "", ("max.connection.creation.rate", DELETE, None)).error_code == ErrorCode.none
        assert connections.broker_bound == 50.0
