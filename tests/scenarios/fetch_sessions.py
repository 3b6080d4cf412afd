"""What the fetch-session tests (KIP-227) share: the FetchSessionCache gauge names and a producer that remembers
what it sent per partition (tests/e2e with the Python clients, tests/interop with Kafka's Java consumer)."""

from __future__ import annotations

SESSIONS = "kafka_server_fetchsessioncache_numincrementalfetchsessions"
CACHED = "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"
PARTITIONS = 6


class Produced:
    """Values sent per partition, in order (one confluent-kafka producer, acks=all)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.values: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self._p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})

    def send(self, counts: dict[int, int]) -> None:
        errors: list = []
        for part, n in counts.items():
            for _ in range(n):
                v = f"{self.topic}-{part}-{len(self.values[part])}".encode()
                self._p.produce(self.topic, value=v, partition=part, on_delivery=lambda e, m: e and errors.append(e))
                self.values[part].append(v)
        assert self._p.flush(30) == 0 and not errors, errors
