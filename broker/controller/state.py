"""What the cluster layer (ZooKeeper store + controller) and the replication layer say to each other.

The controller is the only writer of leaders (it bumps the leader epoch); a partition's leader is the only
writer of its ISR, with conditional updates on the znode version, as Kafka's ZooKeeper mode did. Every
broker learns partition states by watching ZooKeeper and hands them to its `ClusterListener`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionState:
    """`/brokers/topics/<t>/partitions/<p>/state`, plus the replica assignment it belongs to."""

    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int = 0
    version: int = -1  # znode version for conditional ISR updates; -1 in standalone mode

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER


class ClusterListener(Protocol):
    """Implemented by the broker's replica manager; called on the event loop thread."""

    def on_partition_state(self, topic: str, partition: int, state: PartitionState) -> None:
        """This broker's role or the partition's leader/ISR may have changed."""

    def on_topic_deleted(self, topic: str) -> None:
        """Drop the topic's local logs."""

    def on_brokers_changed(self) -> None:
        """The set of live brokers changed (Metadata caches refresh)."""

    def on_topic_config_changed(self, topic: str) -> None:
        """A topic's config overrides changed (the log picks them up live)."""
