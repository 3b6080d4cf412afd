"""Replication gauges (broker/metrics/replicas.py) over a fake replica view: Kafka's Partition and ReplicaManager
definitions, without servers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from broker.metrics.replicas import FetcherMetrics, PartitionStats, ReplicaGauges
from broker.replication.fetcher import ReplicaFetcherManager
from common.clock import ManualClock
from exporter.registry import MetricName, Registry


class FakeView:
    def __init__(self, states: list[PartitionStats], lag: int = 0) -> None:
        self.states = states
        self.lag = lag

    def partition_states(self):
        return self.states

    def is_active_controller(self) -> bool:
        return False

    def max_lag(self) -> int:
        return self.lag

    def reassigning_leaders(self) -> int:
        return 0


def stats(topic: str, p: int, replicas: int, isr: int, min_isr: int, leader: bool, hosted: bool = True):
    return PartitionStats(topic, p, replicas, isr, min_isr, True, leader, True, hosted)


def gauges(states: list[PartitionStats]) -> tuple[Registry, ReplicaGauges]:
    reg = Registry(ManualClock())
    g = ReplicaGauges(reg, SimpleNamespace(), reg.clock.monotonic)
    g.set_view(FakeView(states))
    return reg, g


def partition_values(reg: Registry, name: str) -> dict[tuple[str, int], float]:
    fam = reg.get(MetricName("kafka.cluster", "Partition", name))
    return {(dict(tags)["topic"], int(dict(tags)["partition"])): v for tags, v in fam.fn()}


def value(reg: Registry, name: str) -> float:
    return reg.get(MetricName("kafka.server", "ReplicaManager", name)).value


def test_partition_gauges_only_for_hosted_replicas_and_flags_only_on_the_leader():
    reg, _ = gauges([
        stats("t", 0, replicas=3, isr=2, min_isr=2, leader=True),    # led here, ISR shrunk to its minimum
        stats("t", 1, replicas=3, isr=2, min_isr=2, leader=False),   # the same state, followed here
        stats("t", 2, replicas=3, isr=2, min_isr=2, leader=False, hosted=False),  # not a replica here
    ])
    assert partition_values(reg, "UnderReplicated") == {("t", 0): 1, ("t", 1): 0}
    assert partition_values(reg, "AtMinIsr") == {("t", 0): 1, ("t", 1): 0}
    assert partition_values(reg, "UnderMinIsr") == {("t", 0): 0, ("t", 1): 0}
    assert partition_values(reg, "InSyncReplicasCount") == {("t", 0): 2, ("t", 1): 0}
    assert partition_values(reg, "ReplicasCount") == {("t", 0): 3, ("t", 1): 0}
    assert partition_values(reg, "LastStableOffsetLag") == {("t", 0): 0, ("t", 1): 0}
    assert value(reg, "UnderReplicatedPartitions") == 1
    assert value(reg, "AtMinIsrPartitionCount") == 1


def test_min_isr_is_the_effective_one():
    """Partition.effectiveMinIsr = min(min.insync.replicas, replication factor): RF 1 with min ISR 2 is at its
    minimum, not under it; RF 3 with min ISR 2 and an ISR of 1 is under."""
    reg, _ = gauges([stats("rf1", 0, replicas=1, isr=1, min_isr=2, leader=True),
                     stats("rf3", 0, replicas=3, isr=1, min_isr=2, leader=True)])
    assert partition_values(reg, "UnderMinIsr") == {("rf1", 0): 0, ("rf3", 0): 1}
    assert partition_values(reg, "AtMinIsr") == {("rf1", 0): 1, ("rf3", 0): 0}
    assert value(reg, "UnderMinIsrPartitionCount") == 1
    assert value(reg, "AtMinIsrPartitionCount") == 1


def lagging(hw: int, leo: int):
    return SimpleNamespace(leader_high_watermark=hw, partition=SimpleNamespace(log=SimpleNamespace(log_end_offset=leo)))


def test_max_lag_is_never_negative():
    """AbstractFetcherManager MaxLag folds max(0, ...) over lags that are themselves max(0, hw - next offset):
    a follower ahead of the high watermark it was last told, or not yet answered (hw -1), lags 0."""
    m = ReplicaFetcherManager(1, SimpleNamespace(), lambda broker_id: None, lambda part, hw: None)
    assert m.max_lag() == 0
    m._fetchers = {1: SimpleNamespace(targets={("t", 0): lagging(hw=-1, leo=0), ("t", 1): lagging(hw=8, leo=10)})}
    assert m.max_lag() == 0
    m._fetchers[2] = SimpleNamespace(targets={("u", 0): lagging(hw=25, leo=20)})
    assert m.max_lag() == 5


def test_min_fetch_rate_over_the_active_fetchers():
    reg = Registry(ManualClock())
    active: list = []
    fm = FetcherMetrics(reg, lambda: active)
    min_rate = reg.get(MetricName.of("kafka.server", "ReplicaFetcherManager", "MinFetchRate", clientId="Replica"))
    assert min_rate.value == 0.0                       # no fetcher
    fast = SimpleNamespace(leader_id=1, endpoint=("127.0.0.1", 9001))
    slow = SimpleNamespace(leader_id=2, endpoint=("127.0.0.1", 9002))
    active[:] = [fast, slow]
    for _ in range(20):
        fm.on_fetch_request(fast)
    assert min_rate.value == 0.0                       # slow has sent nothing yet
    for _ in range(5):
        fm.on_fetch_request(slow)
    reg.clock.advance(5000)
    reg.tick()
    assert min_rate.value == pytest.approx(5 / 5)      # Yammer's first tick: events / 5 s
    requests = reg.get(MetricName.of("kafka.server", "FetcherStats", "RequestsPerSec",
                                     clientId="ReplicaFetcherThread-0-1", brokerHost="127.0.0.1", brokerPort=9001))
    assert requests.count == 20
    active[:] = [fast]                                 # slow follows nothing any more
    assert min_rate.value == pytest.approx(20 / 5)


def test_reassigning_partitions_counts_the_moves_this_broker_leads():
    from types import SimpleNamespace as NS

    from broker.controller.state import PartitionState
    from broker.metrics.replicas import BrokerReplicaView

    states = {("a", 0): PartitionState((1, 2, 3), 1, 0, (1, 2)), ("a", 1): PartitionState((2, 3), 2, 0, (2, 3)),
              ("b", 0): PartitionState((1, 3), 1, 0, (1,))}
    metadata = NS(reassignments=lambda: {("a", 0): ((1, 2, 3), (3,), ()), ("a", 1): ((2, 3), (3,), ())},
                  partition_state=lambda t, p: states.get((t, p)))
    assert BrokerReplicaView(NS(metadata=metadata, node_id=1)).reassigning_leaders() == 1   # a-1 is led by 2
