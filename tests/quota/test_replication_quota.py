"""Replication throttles (KIP-73): the throttled-replica lists, Kafka's SimpleRate, one side's quota, the size the
leader counts, and the leader holding a throttled follower out of the ISR, in an in-process broker on a manual
clock."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode
from broker.protocol.codec import encode_with_kio
from broker.protocol.fetch_size import fetch_response_size
from broker.quota.replication import (
    ALL_REPLICAS,
    LEADER,
    LEADER_REPLICAS,
    ReplicationQuota,
    ReplicationQuotaSettings,
    throttled_partitions,
    validate_throttled_replicas,
)
from common.clock import ManualClock
from exporter.registry import SimpleRate
from tests.broker.harness import Harness
from tests.broker.test_inproc_handlers import FETCH, create, fetch_body, produce

ALTER_CONFIGS_INCREMENTAL, TOPIC, BROKER, SET = 44, 2, 4, 0


@pytest.mark.parametrize("value", ["*", " * ", "0:1", "0:1,1:2", " 0:1 , 1:2 ", "0:1,", "", ",0:1"])
def test_valid_throttled_replica_lists(value):
    validate_throttled_replicas(LEADER_REPLICAS, value)


@pytest.mark.parametrize("value", ["0-1", "x:y", "0:1,*", "0 : 1", "0:1:2", "*,*"])
def test_invalid_throttled_replica_lists_name_the_format(value):
    with pytest.raises(ValueError, match=r"must be the literal '\*' or a list of replicas in the following format: "
                                         r"\[partitionId\]:\[brokerId\],\[partitionId\]:\[brokerId\],\.\.\."):
        validate_throttled_replicas(LEADER_REPLICAS, value)


def test_a_broker_takes_the_partitions_listed_with_its_own_id():
    assert throttled_partitions("0:1,1:2,2:1", 1) == {0, 2}
    assert throttled_partitions("0:1, 1:2", 2) == {1}
    assert throttled_partitions("0:1", 3) == set()
    assert throttled_partitions(" * ", 3) is ALL_REPLICAS


def test_simple_rate_divides_by_one_window_at_least():
    clock = ManualClock()
    rate = SimpleRate(clock, 1.0, 11)
    rate.record(1000)
    assert rate.rate == 1000.0            # one window, where Rate would take ten
    clock.advance(4000)
    rate.record(1000)
    assert rate.rate == pytest.approx(500.0)
    clock.advance(20_000)                 # past every window: all reset
    assert rate.rate == 0.0


def _quota(clock, configs):
    return ReplicationQuota(LEADER, LEADER_REPLICAS, 1, ReplicationQuotaSettings(), clock, configs.get)


def test_quota_exceeded_only_with_a_bound_and_a_rate_above_it():
    clock, made = ManualClock(), []
    quota = _quota(clock, {"t": {LEADER_REPLICAS: "0:1,3:2"}})
    quota.on_sensor = lambda q, up: made.append(up)
    assert quota.is_throttled("t", 0) and not quota.is_throttled("t", 3) and not quota.is_throttled("u", 0)
    assert not quota.is_quota_exceeded() and made == [True]   # the sensor is made by the first check
    quota.record(5000)
    assert not quota.is_quota_exceeded()                      # no bound: never
    quota.update_bound(4000)
    assert quota.is_quota_exceeded()
    quota.update_bound(5000)
    assert not quota.is_quota_exceeded()                      # at the bound is within it
    clock.advance(3_600_000)
    quota.expire()
    assert quota.rate is None and made == [True, False]


def test_a_changed_topic_config_is_read_again():
    configs = {"t": {LEADER_REPLICAS: "0:1"}}
    quota = _quota(ManualClock(), configs)
    assert quota.is_throttled("t", 0)
    configs["t"] = {LEADER_REPLICAS: "*"}
    assert quota.is_throttled("t", 5)
    configs["t"] = {}
    assert not quota.is_throttled("t", 0)


@pytest.mark.parametrize("version", range(4, 13))
@pytest.mark.parametrize("shape", ["none", "empty", "records", "two topics"])
def test_fetch_response_size_is_what_the_encoder_writes(version, shape):
    def part(i: int, records: bytes | None) -> dict:
        return {"partition_index": i, "error_code": 0, "high_watermark": 5, "last_stable_offset": 5,
                "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1, "records": records}

    topics = {"none": [], "empty": [("t", [part(0, b"")])], "records": [("tøpic", [part(0, b"x" * 300), part(1, b"")])],
              "two topics": [("a", [part(0, b"y" * 200)]), ("b" * 40, [part(2, b"z" * 129)])]}[shape]
    body = {"throttle_time": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic": name, "partitions": parts} for name, parts in topics]}
    frame = encode_with_kio(1, version, 7, body)
    header = 4 + (1 if version >= 12 else 0)              # correlation id, and tagged fields in the v1 header
    assert fetch_response_size(version, topics) == 4 + len(frame) - 4 - header


def _set_configs(h: Harness, resource_type: int, name: str, **configs: str) -> None:
    res = h.request(ALTER_CONFIGS_INCREMENTAL, 1, {"validate_only": False, "resources": [
        {"resource_type": resource_type, "resource_name": name, "configs": [
            {"name": k.replace("_", "."), "config_operation": SET, "value": v} for k, v in configs.items()]}]})
    assert res.responses[0].error_code == ErrorCode.none, res.responses[0].error_message


def _follower_fetch(h: Harness, offset: int):
    body = fetch_body("t", offset)
    body["replica_id"] = 1       # a replica that is not in the ISR (a standalone broker's ISR is itself)
    return h.request(FETCH, 12, body).responses[0].partitions[0]


def test_the_leader_holds_a_throttled_follower_out_of_the_isr_while_over_the_rate(tmp_path):
    with Harness(tmp_path) as h:
        create(h, "t")
        for i in range(3):
            assert produce(h, "t", bytes([i]) * 2000).error_code == ErrorCode.none
        _set_configs(h, BROKER, "0", leader_replication_throttled_rate="1000")
        _set_configs(h, TOPIC, "t", leader_replication_throttled_replicas="0:0")
        quota = h.broker.replication_quotas.leader

        first = _follower_fetch(h, 0)
        assert len(first.records) > 6000          # under the rate when asked: everything
        counted = quota.rate.total
        assert counted == fetch_response_size(12, [("t", [{"records": first.records, "aborted_transactions": None}])])
        held = _follower_fetch(h, 0)
        assert held.error_code == ErrorCode.none and not held.records and held.high_watermark == 3
        h.advance(11_000)                          # the rate falls back under the bound as the windows pass
        assert len(_follower_fetch(h, 0).records) == len(first.records)

        consumer = h.request(FETCH, 12, fetch_body("t", 0)).responses[0].partitions[0]
        assert len(consumer.records) == len(first.records)   # consumers are never held by it

        _set_configs(h, TOPIC, "t", leader_replication_throttled_replicas="0:5")   # another broker's replica
        before = quota.rate.total
        assert len(_follower_fetch(h, 0).records) == len(first.records)
        assert quota.rate.total - before == fetch_response_size(12, [])   # Kafka counts an answer's header anyway


def _target(topic: str, index: int, log_end: int, leader_hw: int):
    from types import SimpleNamespace as NS

    from broker.replication.fetcher import FetchTarget

    part = NS(topic=topic, index=index, log=NS(log_end_offset=log_end))
    return FetchTarget(part, leader_epoch=0, truncated=True, leader_high_watermark=leader_hw)


def test_the_follower_leaves_out_throttled_replicas_behind_the_high_watermark_while_over_the_rate():
    from broker.config import BrokerConfig
    from broker.quota.replication import FOLLOWER, FOLLOWER_REPLICAS
    from broker.replication.fetcher import ReplicaFetcherManager

    clock = ManualClock()
    configs = {"t": {FOLLOWER_REPLICAS: "0:1,1:1"}}
    quota = ReplicationQuota(FOLLOWER, FOLLOWER_REPLICAS, 1, ReplicationQuotaSettings(), clock, configs.get)
    manager = ReplicaFetcherManager(1, BrokerConfig(broker_id=1), lambda b: None, lambda p, hw: None)
    manager.quota = quota
    behind, caught_up, new = _target("t", 0, 10, 50), _target("t", 1, 50, 50), _target("t", 1, 0, -1)
    other = _target("u", 0, 0, 50)
    everything = [behind, caught_up, new, other]
    assert manager.unthrottled(everything) == everything          # no bound yet
    quota.update_bound(1000)
    manager.record_throttled(behind.partition, 5000)               # a throttled partition's bytes count
    manager.record_throttled(other.partition, 10**9)               # an unthrottled one's do not
    assert quota.rate.total == 5000
    # Over the rate: the replica behind the leader's high watermark waits, as does one never fetched yet (no lag
    # known); the caught-up one and the unthrottled topic are fetched.
    assert manager.unthrottled(everything) == [caught_up, other]
    clock.advance(6000)
    assert manager.unthrottled(everything) == everything


def test_byte_rate_mbeans_follow_the_sensor_and_no_community_rule_exports_them():
    from broker.metrics.quotas import register_replication_metrics
    from broker.quota.replication import ReplicationQuotas
    from exporter.collector import build_prometheus_registry, render
    from exporter.registry import Registry

    clock = ManualClock()
    reg = Registry(clock)
    quotas = ReplicationQuotas(1, ReplicationQuotaSettings(), clock, lambda topic: {})
    register_replication_metrics(reg, quotas)

    def mbeans() -> dict[str, float]:
        return {n.mbean: m.read() for n, m in reg.items() if n.type.endswith("Replication")}

    assert mbeans() == {}                        # nothing until the sensor is made
    quotas.leader.record(5000)
    assert mbeans() == {"kafka.server:type=LeaderReplication,name=byte-rate": 5000.0}
    for rules in ("strimzi", "confluent"):       # neither has a rule for an MBean without a name key (as upstream)
        assert "replication_byte" not in render(build_prometheus_registry(reg, rules, process=False)).decode()
    clock.advance(3_600_000)
    quotas.expire()
    assert mbeans() == {}


def test_the_leader_counts_kafkas_slice_of_a_read_not_only_its_whole_batches(tmp_path):
    """Kafka sends a follower bytes up to its partition_max_bytes, ending in a partial batch the follower drops
    (LogSegment.read), and counts them all; we send whole batches, and count what Kafka would have sent."""
    with Harness(tmp_path) as h:
        create(h, "t")
        for i in range(2):
            assert produce(h, "t", bytes([i]) * 2000).error_code == ErrorCode.none
        _set_configs(h, TOPIC, "t", leader_replication_throttled_replicas="*")
        body = fetch_body("t", 0)
        body["replica_id"], body["topics"][0]["partitions"][0]["partition_max_bytes"] = 1, 3000
        got = h.request(FETCH, 12, body).responses[0].partitions[0]
        assert 2000 < len(got.records) < 3000            # the first batch only
        counted = h.broker.replication_quotas.leader.rate.total
        assert counted == fetch_response_size(12, [("t", [{"records": b"x" * 3000, "aborted_transactions": None}])])
