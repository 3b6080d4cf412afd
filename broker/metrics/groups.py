"""Kafka 4's group coordinator metrics (GroupCoordinatorMetrics, KIP-848): kafka.server:type=group-coordinator-metrics
with group-count per protocol, consumer-group-count per state and consumer-group-rebalance-rate / -count."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exporter.registry import Registry, SampledRate

if TYPE_CHECKING:
    from broker.coordinator.group_coordinator import GroupCoordinator

GROUP_COORDINATOR_METRICS = ("kafka.server", "group-coordinator-metrics")
# Kafka's ConsumerGroupState names, lower-cased as GroupCoordinatorMetrics tags them.
CONSUMER_GROUP_STATES = ("empty", "assigning", "reconciling", "stable", "dead")


class GroupCoordinatorMetrics:
    """Reads the coordinator's groups at scrape time; counts target assignments through its rebalance hook."""

    def __init__(self, registry: Registry, coordinator: GroupCoordinator) -> None:
        self._coordinator = coordinator
        consumer = coordinator.consumer.coordinator
        self._rebalances = SampledRate(registry.clock)
        consumer.on_rebalance = self._rebalances.record
        registry.kafka_metric(*GROUP_COORDINATOR_METRICS, "group-count",
                              lambda: len(coordinator.group_manager.groups()), protocol="classic")
        registry.kafka_metric(*GROUP_COORDINATOR_METRICS, "group-count", lambda: len(consumer.groups),
                              protocol="consumer")
        for state in CONSUMER_GROUP_STATES:
            def in_state(state: str = state) -> float:
                return sum(1 for g in consumer.groups.values() if g.state.value.lower() == state)
            registry.kafka_metric(*GROUP_COORDINATOR_METRICS, "consumer-group-count", in_state, state=state)
        registry.kafka_metric(*GROUP_COORDINATOR_METRICS, "consumer-group-rebalance-rate",
                              lambda: self._rebalances.rate)
        registry.kafka_metric(*GROUP_COORDINATOR_METRICS, "consumer-group-rebalance-count",
                              lambda: self._rebalances.total, counter=True)
