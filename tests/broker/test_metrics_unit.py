"""broker/metrics/ pure parts and the config keys."""

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.metrics import count_errors, error_name


def test_count_errors_walks_topics_and_partitions():
    body = {"throttle_time": 0, "error_code": 0, "responses": [
        {"topic": "a", "partitions": [{"error_code": 0, "records": b"x"}, {"error_code": 3, "records": b""}]},
        {"topic": "b", "partitions": [{"error_code": 3}]}]}
    out: dict[int, int] = {}
    count_errors(body, out)
    assert out == {0: 2, 3: 2}


def test_error_names_are_kafkas_enum_names():
    assert error_name(0) == "NONE"
    assert error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_name(21) == "INVALID_REQUIRED_ACKS"


def test_prometheus_keys():
    cfg = BrokerConfig.from_properties({"prometheus.listener": "127.0.0.1:9404", "prometheus.naming": "confluent",
                                        "hdr.log.dir": "/tmp/h"})
    assert (cfg.prometheus_listener, cfg.prometheus_naming, cfg.hdr_log_dir) == ("127.0.0.1:9404", "confluent",
                                                                                  "/tmp/h")
    assert BrokerConfig().prometheus_listener == ""  # off when absent
    with pytest.raises(ConfigError):
        BrokerConfig.from_properties({"prometheus.naming": "graphite"})
