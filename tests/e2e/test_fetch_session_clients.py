"""Real consumers through incremental fetch sessions (KIP-227) on a fresh broker each.

kafka-python (3.x) opens a session (epoch 0) and then fetches incrementally; librdkafka (confluent-kafka) and
aiokafka send epoch -1 on every Fetch (they implement no sessions), so for them the broker must open none. Every
client reads exactly what was produced, through new data on some partitions only and, for the Python clients,
a reassignment that drops partitions (a session client forgets them: the broker's cached partitions follow).
Kafka's Java consumer is in tests/interop/test_fetch_sessions_java.py."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkascope.local.broker_process import BrokerProcess, free_port
from tests.broker.test_metrics_e2e import scrape
from tests.e2e.helpers import create_topic, wait_until
from tests.scenarios.fetch_sessions import CACHED, PARTITIONS, SESSIONS, Produced

SESSION_ERRORS = ("FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH")
USES_SESSIONS = {"kafka-python": True, "confluent": False, "aiokafka": False}


@pytest.fixture
def metrics_broker(tmp_path):
    mport = free_port()
    b = BrokerProcess(tmp_path, **{"prometheus.listener": f"127.0.0.1:{mport}"})
    b.metrics_port = mport
    with b:
        yield b


def fetch_cache(b: BrokerProcess) -> tuple[float, float]:
    m = scrape(b.metrics_port)
    return m.get((SESSIONS, ()), -1.0), m.get((CACHED, ()), -1.0)


def session_errors(b: BrokerProcess) -> dict[str, float]:
    m = scrape(b.metrics_port)
    return {e: v for (name, labels), v in m.items() for e in SESSION_ERRORS
            if name.startswith("kafka_network_requestmetrics_errors") and ("error", e) in labels}


class KafkaPythonDriver:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaConsumer

        self.topic = topic
        self.c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                               fetch_max_wait_ms=100)

    def assign(self, positions: dict[int, int]) -> None:
        from kafka import TopicPartition

        self.c.assign([TopicPartition(self.topic, p) for p in positions])
        for p, off in positions.items():
            self.c.seek(TopicPartition(self.topic, p), off)

    def poll(self) -> list[tuple[int, int, bytes]]:
        return [(m.partition, m.offset, m.value) for msgs in self.c.poll(timeout_ms=200).values() for m in msgs]

    def close(self) -> None:
        self.c.close()


class ConfluentDriver:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                           "enable.auto.commit": False, "fetch.wait.max.ms": 100})

    def assign(self, positions: dict[int, int]) -> None:
        from confluent_kafka import TopicPartition

        self.c.assign([TopicPartition(self.topic, p, off) for p, off in positions.items()])

    def poll(self) -> list[tuple[int, int, bytes]]:
        out = []
        for m in self.c.consume(num_messages=500, timeout=0.2):
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.value()))
        return out

    def close(self) -> None:
        self.c.close()


class AiokafkaDriver:
    """aiokafka on its own event loop, driven step by step from the test thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from aiokafka import AIOKafkaConsumer

        self.topic = topic
        self.loop = asyncio.new_event_loop()

        async def start():
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                 fetch_max_wait_ms=100)
            await c.start()
            return c

        self.c = self._run(start())

    def _run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))

    def assign(self, positions: dict[int, int]) -> None:
        from aiokafka import TopicPartition

        async def assign():  # aiokafka builds futures on the running loop
            self.c.assign([TopicPartition(self.topic, p) for p in positions])
            for p, off in positions.items():
                self.c.seek(TopicPartition(self.topic, p), off)

        self._run(assign())

    def poll(self) -> list[tuple[int, int, bytes]]:
        batches = self._run(self.c.getmany(timeout_ms=200))
        return [(m.partition, m.offset, m.value) for msgs in batches.values() for m in msgs]

    def close(self) -> None:
        try:
            self._run(self.c.stop())
        finally:
            self.loop.close()


DRIVERS = {"kafka-python": KafkaPythonDriver, "confluent": ConfluentDriver, "aiokafka": AiokafkaDriver}


@pytest.mark.parametrize("client", list(DRIVERS))
def test_consumer_reads_exactly_what_was_produced_through_sessions(metrics_broker, topic_name, client):
    b = metrics_broker
    create_topic(b.port, topic_name, partitions=PARTITIONS)
    produced = Produced(b.bootstrap, topic_name)
    produced.send(dict.fromkeys(range(PARTITIONS), 30))
    consumed: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    c = DRIVERS[client](b.bootstrap, topic_name)

    def read() -> int:
        for p, off, v in c.poll():
            assert off == len(consumed[p]), f"partition {p}: offset {off} after {len(consumed[p])} records"
            consumed[p].append(v)
        return sum(map(len, consumed.values()))

    def read_until(total: int) -> None:
        wait_until(lambda: read() >= total, 30, what=f"{total} records read")

    def cache_is(sessions: int, cached: int):
        return lambda: (read(), fetch_cache(b) == (sessions, cached))[1]

    uses = USES_SESSIONS[client]
    try:
        c.assign(dict.fromkeys(range(PARTITIONS), 0))
        read_until(180)
        # one session of the six partitions while a session client reads; none for the others
        wait_until(cache_is(1, PARTITIONS) if uses else cache_is(0, 0), 15, what="fetch session gauges")
        produced.send({0: 10, 3: 10})                     # news on two partitions only
        read_until(200)
        c.assign({p: len(consumed[p]) for p in (0, 1, 2)})  # drop partitions 3, 4, 5
        wait_until(cache_is(1, 3) if uses else cache_is(0, 0), 15, what="forgotten partitions leave the cache")
        produced.send({1: 5, 4: 5})
        read_until(205)
        produced.send({2: 5})
        read_until(210)
        assert read() == 210
    finally:
        c.close()
    want = {p: list(v) for p, v in produced.values.items()}
    want[4] = want[4][:30]  # the last 5 were written after partition 4 was dropped
    assert consumed == want
    assert not any(session_errors(b).values()), session_errors(b)
