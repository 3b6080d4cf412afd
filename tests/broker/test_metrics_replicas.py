"""Replication gauges (broker/metrics/replicas.py) over a fake replica view: Kafka's Partition and ReplicaManager
definitions, without servers."""

from __future__ import annotations

from types import SimpleNamespace

from broker.metrics.replicas import PartitionStats, ReplicaGauges
from exporter.registry import ManualClock, MetricName, Registry


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
