"""The reference Apache Kafka (kafkascope/local/apache_kafka.py) starts and round-trips records."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkascope.local.apache_kafka import ApacheKafka

N = 10


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_reference_kafka_produce_consume_roundtrip() -> None:
    topic = f"ref-{uuid.uuid4().hex[:8]}"
    with ApacheKafka() as k:
        assert k.bootstrap.startswith("127.0.0.1:")
        admin = AdminClient({"bootstrap.servers": k.bootstrap})
        for fut in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
            fut.result(timeout=30)

        delivered: list[tuple[int, int]] = []
        errors: list[object] = []

        def on_delivery(err, msg) -> None:
            if err is not None:
                errors.append(err)
            else:
                delivered.append((msg.partition(), msg.offset()))

        producer = Producer({"bootstrap.servers": k.bootstrap, "acks": "all", "linger.ms": 5})
        for i in range(N):
            producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(30) == 0, "producer did not drain within 30 s"
        assert not errors, errors
        assert sorted(off for _, off in delivered) == list(range(N))

        consumer = Consumer(
            {
                "bootstrap.servers": k.bootstrap,
                "group.id": f"g-{topic}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            got: list[tuple[bytes, bytes]] = []
            deadline = time.monotonic() + 30
            while len(got) < N and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                assert msg.error() is None, msg.error()
                got.append((msg.key(), msg.value()))
        finally:
            consumer.close()
        assert got == [(f"k{i}".encode(), f"v{i}".encode()) for i in range(N)]
