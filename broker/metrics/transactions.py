"""The transaction coordinator's metrics as Kafka's TransactionStateManager registers them:
kafka.server:type=transaction-coordinator-metrics partition-load-time-max / -avg (ms to load a
`__transaction_state` partition, over the last 2 × 30 s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exporter.registry import Registry, SampledMaxAvg

if TYPE_CHECKING:
    from broker.coordinator.transaction.coordinator import TransactionCoordinator

TRANSACTION_COORDINATOR_METRICS = ("kafka.server", "transaction-coordinator-metrics")


class TransactionCoordinatorMetrics:
    """Records each partition load through the coordinator's `on_partition_loaded` hook."""

    def __init__(self, registry: Registry, coordinator: TransactionCoordinator) -> None:
        self._load_time = SampledMaxAvg(registry.clock)
        coordinator.on_partition_loaded = self._load_time.record
        registry.kafka_metric(*TRANSACTION_COORDINATOR_METRICS, "partition-load-time-max",
                              lambda: self._load_time.max)
        registry.kafka_metric(*TRANSACTION_COORDINATOR_METRICS, "partition-load-time-avg",
                              lambda: self._load_time.avg)
