"""Altering a broker's configs: no dynamic broker config is ever set, so IncrementalAlterConfigs' DELETE is answered
NONE at once (kafka-reassign-partitions.sh --verify removes its replication throttles from every broker that way;
before, it failed on INVALID_REQUEST), and setting one is refused with a message naming server.properties."""

from __future__ import annotations

from broker.errors import ErrorCode
from tests.broker.harness import Harness

INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS, BROKER = 44, 33, 4
SET, DELETE = 0, 1
THROTTLE = "leader.replication.throttled.rate"


def _incremental(h: Harness, op: int, value: str | None = None):
    return h.request(INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
        {"resource_type": BROKER, "resource_name": "0",
         "configs": [{"name": THROTTLE, "config_operation": op, "value": value}]}]}).responses[0]


def test_deleting_a_broker_config_is_done_and_setting_one_is_refused(tmp_path):
    with Harness(tmp_path) as h:
        assert _incremental(h, DELETE).error_code == ErrorCode.none
        refused = _incremental(h, SET, "1000000")
        assert refused.error_code == ErrorCode.invalid_request and "server.properties" in refused.error_message
        legacy = h.request(ALTER_CONFIGS, 2, {"validate_only": False, "resources": [
            {"resource_type": BROKER, "resource_name": "0", "configs": [{"name": THROTTLE, "value": "1"}]}]})
        assert legacy.responses[0].error_code == ErrorCode.invalid_request
