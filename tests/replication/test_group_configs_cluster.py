"""A group config set through any broker of a ZooKeeper cluster (`/config/groups/<group>`) reaches every broker,
and the group's coordinator, wherever it is, hands its members the group's heartbeat interval (KIP-848)."""

from __future__ import annotations

import uuid

from kafkascope.local.cluster import wait_for
from kafkascope.local.wire import WireClient
from tests.replication.helpers import FIND_COORDINATOR, create_topic, metadata, topic_name

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, CONSUMER_HEARTBEAT, GROUP = 32, 44, 68, 32


def _described(port: int, group: str) -> tuple[str, int] | None:
    with WireClient(port) as w:
        r = w.call(DESCRIBE_CONFIGS, 4, {"include_synonyms": False, "include_documentation": False, "resources": [
            {"resource_type": GROUP, "resource_name": group,
             "configuration_keys": ["consumer.heartbeat.interval.ms"]}]}).results[0]
    return (r.configs[0].value, r.configs[0].config_source) if r.error_code == 0 and r.configs else None


def test_a_group_config_set_on_one_broker_is_used_by_the_groups_coordinator(cluster_factory):
    c = cluster_factory(brokers=3)
    topic, group = topic_name("gcfg"), f"gcfg-{uuid.uuid4().hex[:8]}"
    create_topic(c, topic, 2, rf=3)
    with WireClient(c.brokers[0].port) as w:
        r = w.call(INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": GROUP, "resource_name": group, "configs": [
                {"name": "consumer.heartbeat.interval.ms", "config_operation": 0, "value": "7000"}]}]})
    assert r.responses[0].error_code == 0, r
    for b in c.brokers:
        wait_for(lambda b=b: _described(b.port, group) == ("7000", 8), 15, what=f"broker {b.broker_id} sees it")

    def coordinator_port() -> int | None:
        with WireClient(c.brokers[1].port) as w:
            found = w.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0]
        return found.port if found.error_code == 0 else None
    port = wait_for(coordinator_port, 30, what="the group's coordinator")
    assert port in {b.port for b in c.brokers} and metadata(c).controller_id >= 0

    def join():
        with WireClient(port) as w:
            beat = w.call(CONSUMER_HEARTBEAT, 0, {
                "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout": 30000, "subscribed_topic_names": [topic],
                "server_assignor": None, "topic_partitions": []})
        return beat if beat.error_code == 0 else None
    beat = wait_for(join, 30, what="a member joined")
    assert beat.heartbeat_interval.total_seconds() * 1000 == 7000
