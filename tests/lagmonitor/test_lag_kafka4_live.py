"""The lag monitor against Apache Kafka 4.1 (single-node KRaft) with consumers on the new group protocol (KIP-848,
`group.protocol=consumer`): it sees the group, its lag, its owners (ConsumerGroupDescribe), its members (from the
group's own __consumer_offsets records), OK while consuming and Burrow's STOP once the consumers stop."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from common.polling import wait_until
from lagmonitor.rules import Status
from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios.lag import CONFIG, Running

PARTITIONS = 3
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def kafka41():
    from kafkascope.local.apache_kafka import DEFAULT_VERSION, ApacheKafka

    apache_kafka_or_skip(DEFAULT_VERSION)
    with ApacheKafka(version=DEFAULT_VERSION) as k:
        yield k


def _produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"m%d" % i, partition=i % PARTITIONS)
    assert p.flush(10) == 0


def _consume_all(consumers: list[Consumer], want: int) -> None:
    """Poll every consumer, committing each message synchronously, until `want` messages were read."""
    got = 0

    def step() -> bool:
        nonlocal got
        for c in consumers:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                c.commit(message=m, asynchronous=False)
                got += 1
        return got >= want
    wait_until(step, 60.0, interval_s=0.0, what=f"{want} messages consumed")


def test_consumer_protocol_group_ok_owners_then_stop(kafka41):
    bootstrap = kafka41.bootstrap
    topic, group = f"k4-{uuid.uuid4().hex[:8]}", f"g848-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    running = Running(bootstrap, CONFIG)
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                           "client.id": f"c{i}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
                 for i in range(2)]
    try:
        _produce(bootstrap, topic, 30)
        # Burrow drops commits for partitions whose log end it has not seen yet
        wait_until(lambda: running.monitor.storage.topic_offsets(topic) == [10] * PARTITIONS, 30.0,
                   what="log-end offsets known")
        for c in consumers:
            c.subscribe([topic])
        _consume_all(consumers, 30)
        for _ in range(3):   # keep up with new messages: commits spread over time fill the windows
            _produce(bootstrap, topic, 6)
            _consume_all(consumers, 6)

        def ok_with_owners():
            g = running.status(group)
            if g.status is not Status.OK or len(g.partitions) != PARTITIONS or g.totallag != 0:
                return None
            return g if all(p.owner for p in g.partitions) else None
        g = wait_until(ok_with_owners, 60.0, interval_s=0.2, what=f"{group} OK with owners")
        assert {p.owner for p in g.partitions} == {"/127.0.0.1"}
        assert {p.client_id for p in g.partitions} == {"c0", "c1"}   # the uniform assignor splits the topic
        with running.monitor.lock:
            assert set(running.monitor.consumer_groups[group].values()) == {"c0", "c1"}
            assert running.monitor.storage.members[group] == 2
            assert not any("key version" in r for r in running.monitor.skipped)   # every record type known

        for c in consumers:
            c.close()
        consumers = []
        _produce(bootstrap, topic, 30)
        g = wait_until(lambda: (g := running.status(group)).status is Status.ERR
                       and all(p.status is Status.STOP for p in g.partitions) and g,
                       60.0, interval_s=0.2, what=f"{group} ERR/STOP after its consumers stopped")
        assert g.totallag == 30
        # the members left: their ConsumerGroupMemberMetadata tombstones empty the group
        wait_until(lambda: running.monitor.storage.members.get(group) == 0, 30.0, what="members gone")
    finally:
        for c in consumers:
            c.close()
        running.close()
