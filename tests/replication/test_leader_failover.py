"""Kill -9 a partition leader under an idempotent acks=all producer: a new leader is elected and every
acknowledged record survives exactly once, in order."""

from __future__ import annotations

import pytest

from kafkascope.local.cluster import wait_for
from tests.replication.helpers import (
    ContinuousProducer,
    check_acked_exactly_once_in_order,
    create_topic,
    leader,
    metadata,
    read_partitions,
    topic_name,
    wait_healthy,
)

SESSION_MS = 6000
PROPS = {"min.insync.replicas": 2, "zookeeper.session.timeout.ms": SESSION_MS, "replica.lag.time.max.ms": 4000}
PARTITIONS = 4


def test_kill_leader_under_idempotent_acks_all_producer(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("failover")
    create_topic(c, topic, PARTITIONS, rf=3)
    before = metadata(c, [topic]).part(topic, 0)
    victim = before.leader

    prod = ContinuousProducer(c.bootstrap, topic, PARTITIONS).start()
    try:
        wait_for(lambda: prod.acked_since(300), 20, what="records acked before the kill")
        killed_at_acks = prod.acked_count()
        c.broker(victim).kill()
        # a new leader, from the old ISR, at a higher epoch; the dead broker leaves the ISR
        after = wait_for(lambda: (m := metadata(c, [topic], exclude=(victim,)).part(topic, 0)).leader
                         not in (victim, -1) and victim not in m.isr and m, SESSION_MS / 1000 + 15,
                         what="new leader for partition 0")
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
        assert victim in after.replicas and victim in after.offline
        # the producer keeps going on every partition after the failover
        wait_for(lambda: prod.acked_since(killed_at_acks + 400), 30, what="acks after the failover")
    finally:
        prod.stop()
    assert not prod.failed, prod.failed[:5]
    read = read_partitions(c.bootstrap, topic, PARTITIONS)
    n = check_acked_exactly_once_in_order(prod.acked, read)
    assert n == prod.sent
    assert all(len(prod.acked[p]) > 100 for p in range(PARTITIONS))


@pytest.mark.slow
def test_twenty_kill_restart_cycles(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("cycles")
    create_topic(c, topic, PARTITIONS, rf=3)
    prod = ContinuousProducer(c.bootstrap, topic, PARTITIONS, rate_per_s=200).start()
    try:
        for cycle in range(20):
            p = cycle % PARTITIONS
            victim = leader(c, topic, p)
            acked = prod.acked_count()
            c.broker(victim).kill()
            wait_for(lambda: leader(c, topic, p, exclude=(victim,)) not in (victim, -1),  # noqa: B023
                     SESSION_MS / 1000 + 15, what=f"cycle {cycle}: new leader of {p}")
            wait_for(lambda: prod.acked_since(acked + 50), 30, what=f"cycle {cycle}: acks after kill")  # noqa: B023
            c.broker(victim).start()
            wait_healthy(c, topic, PARTITIONS, 60)  # the next cycle starts from a healthy cluster
    finally:
        prod.stop()
    assert not prod.failed, prod.failed[:5]
    read = read_partitions(c.bootstrap, topic, PARTITIONS)
    assert check_acked_exactly_once_in_order(prod.acked, read) == prod.sent
