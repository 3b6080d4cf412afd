import pytest

from broker.config import BrokerConfig, ConfigError, validate_topic_configs
from common.java_properties import parse_properties


def test_properties_syntax_follows_java():
    text = "# comment\n! also\nbroker.id = 7\nlisteners:PLAINTEXT://127.0.0.1:9000\nlog.dirs=/a,\\\n   /b\nkey\\=x=1\n"
    props = parse_properties(text)
    assert props == {"broker.id": "7", "listeners": "PLAINTEXT://127.0.0.1:9000", "log.dirs": "/a,/b", "key=x": "1"}


def test_known_keys_become_typed_fields_and_topic_defaults():
    cfg = BrokerConfig.from_properties({
        "broker.id": "3", "num.partitions": "4", "auto.create.topics.enable": "false",
        "log.retention.hours": "2", "log.segment.bytes": "1048576", "log.cleanup.policy": "delete,compact",
        "message.max.bytes": "2000", "delete.retention.ms": "10",
    })
    assert (cfg.broker_id, cfg.num_partitions, cfg.auto_create_topics_enable) == (3, 4, False)
    lc = cfg.log_config()
    assert lc.retention_ms == 2 * 3600 * 1000
    assert lc.segment_bytes == 1048576
    assert lc.cleanup_policy == "compact,delete" and lc.compact and lc.delete
    assert lc.max_message_bytes == 2000
    assert lc.delete_retention_ms == 10


def test_finest_retention_unit_wins_regardless_of_order():
    cfg = BrokerConfig.from_properties({"log.retention.ms": "5", "log.retention.hours": "1"})
    assert cfg.log_config().retention_ms == 5
    cfg = BrokerConfig.from_properties({"log.retention.minutes": "1", "log.retention.hours": "1"})
    assert cfg.log_config().retention_ms == 60_000


def test_topic_override_beats_broker_default_and_reports_source():
    cfg = BrokerConfig.from_properties({"log.retention.ms": "1000"})
    assert cfg.log_config({"retention.ms": "5"}).retention_ms == 5
    assert cfg.topic_config_source("retention.ms", {}) == ("1000", "static_broker")
    assert cfg.topic_config_source("retention.ms", {"retention.ms": "5"}) == ("5", "topic")
    assert cfg.topic_config_source("segment.bytes", {})[1] == "default"


@pytest.mark.parametrize("key,value", [
    ("num.partitions", "zero"), ("num.partitions", "0"), ("auto.create.topics.enable", "yes"),
    ("log.cleanup.policy", "forever"), ("listeners", "127.0.0.1:9092"), ("log.retention.hours", "x"),
])
def test_invalid_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        BrokerConfig.from_properties({key: value})


def test_unknown_key_is_a_warning(caplog):
    BrokerConfig.from_properties({"no.such.key": "1"})
    assert "no.such.key" in caplog.text


def test_topic_config_validation():
    assert validate_topic_configs({"retention.ms": " 10 "}) == {"retention.ms": "10"}
    with pytest.raises(ConfigError, match="Unknown topic config"):
        validate_topic_configs({"retention.msx": "1"})
    with pytest.raises(ConfigError, match="message.timestamp.type"):
        validate_topic_configs({"message.timestamp.type": "Now"})


def test_cli_exit_codes(tmp_path, capsys):
    from broker.__main__ import main

    bad = tmp_path / "bad.properties"
    bad.write_text("num.partitions=-3\n")
    assert main([str(bad)]) == 2
    assert "num.partitions" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.properties")]) == 2
