"""Every broker metric under Kafka's MBean names, one module per concern: ``requests`` (RequestMetrics), ``topics``
(BrokerTopicMetrics), ``replicas`` (ReplicaManager, KafkaController, ReplicaFetcherManager, Partition), ``cluster``
(controller elections, ZooKeeper client), ``runtime`` (idle share, GC, disk), ``clients``, ``jvm`` and ``core``
(BrokerMetrics, which composes them and serves /metrics). How each value is computed: docs/metrics.md.
"""

from broker.metrics.core import BrokerMetrics
from broker.metrics.replicas import BrokerReplicaView, PartitionStats, ReplicaView
from broker.metrics.requests import API_NAMES, count_errors, error_name

__all__ = ["API_NAMES", "BrokerMetrics", "BrokerReplicaView", "PartitionStats", "ReplicaView", "count_errors",
           "error_name"]
