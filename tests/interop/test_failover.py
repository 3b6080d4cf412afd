"""Leader failover on a three-broker cluster, one body for ours and Apache Kafka 3.9 (slow: a cluster each)."""

from __future__ import annotations

import pytest

from benchmarks.cluster_throughput import create_replicated_topic
from kafkascope.local.cluster import Cluster
from tests.e2e.helpers import wait_until
from tests.interop.conftest import BACKENDS, apache_kafka_or_skip
from tests.scenarios.clients import consume, produce

pytestmark = pytest.mark.slow


def _leader(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[0].leader


@pytest.mark.parametrize("impl", BACKENDS)
def test_leader_failover_keeps_acked_records(tmp_path, impl):
    if impl == "apache-kafka":
        apache_kafka_or_skip()
    with Cluster(tmp_path, brokers=3, impl=impl, group_initial_rebalance_delay_ms=0) as c:
        topic = "failover"
        create_replicated_topic(c.bootstrap, topic, 1, 3, {"min.insync.replicas": "2"})
        first = [(f"k{i}".encode(), f"a{i}".encode(), []) for i in range(100)]
        produce("confluent", c.bootstrap, topic, first, partition=0, acks="all")
        old = _leader(c.bootstrap, topic)
        c.broker(old).kill()
        survivors = ",".join(f"127.0.0.1:{c.broker(b).port}" for b in c.broker_ids if b != old)
        # a 1-tuple: Kafka numbers its brokers from 0, and broker 0 as the new leader must count as found
        (new,) = wait_until(lambda: (ld := _leader(survivors, topic)) not in (old, -1) and (ld,), 60,
                            what="a new leader")
        second = [(f"k{i}".encode(), f"b{i}".encode(), []) for i in range(100)]
        produce("confluent", survivors, topic, second, partition=0, acks="all")
        got = consume("confluent", survivors, topic, 200, timeout_s=60)
        assert [v for _, _, _, v, *_ in got] == [v for _, v, _ in first + second], (impl, old, new)
        c.broker(old).start()
        wait_until(lambda: _leader(c.bootstrap, topic) >= 0, 60, what="leader after the restart")
