"""CreateTopics and CreatePartitions with explicit replica assignments (kafka-topics --replica-assignment)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkascope.local.cluster import wait_for


def test_explicit_assignment_is_honoured_and_extended(cluster_factory):
    c = cluster_factory(brokers=3)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("manual", num_partitions=2, replica_assignment=[[2, 1], [1, 0]])])["manual"].result(30)
    admin.create_partitions([NewPartitions("manual", 3, replica_assignment=[[0, 2]])])["manual"].result(30)

    def replicas():
        md = admin.list_topics("manual", timeout=10).topics["manual"].partitions
        got = {p: list(md[p].replicas) for p in md}
        return got if len(got) == 3 and all(md[p].leader >= 0 for p in md) else None

    assert wait_for(replicas, 30) == {0: [2, 1], 1: [1, 0], 2: [0, 2]}


def test_assignment_to_unknown_broker_is_refused(cluster_factory):
    c = cluster_factory(brokers=3)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    with pytest.raises(Exception, match="INVALID_REPLICA_ASSIGNMENT|Unknown broker"):
        admin.create_topics([NewTopic("bad", num_partitions=1, replica_assignment=[[7, 1]])])["bad"].result(30)
