"""A real broker of ours in this process (standalone, 127.0.0.1), for tests that read its metric registry at the
MBean level: Kafka's object names and attributes, independent of the Prometheus naming rules. Its clients use real
sockets and real time; handler tests that need neither use tests/broker/harness.py (no socket, a manual clock).

    async with inproc_broker(tmp_path, **{"max.connections": 2}) as (broker, port):
        await asyncio.to_thread(blocking_client_work, port)   # clients run off the broker's event loop
        meter(broker, "kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT").count
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from broker.broker import Broker
from broker.config import BrokerConfig
from exporter.registry import MetricName


@contextlib.asynccontextmanager
async def inproc_broker(data_dir: Path, **props: object) -> AsyncIterator[tuple[Broker, int]]:
    cfg = BrokerConfig.from_properties({"log.dirs": str(data_dir), "listeners": "PLAINTEXT://127.0.0.1:0",
                                        "prometheus.listener": "127.0.0.1:0",
                                        **{k: str(v) for k, v in props.items()}})
    b = Broker(cfg)
    port = await b.start()
    try:
        yield b, port
    finally:
        await b.stop()


def metric(broker: Broker, domain: str, type_: str, name: str, **tags: object) -> object | None:
    """The registered metric (Meter, Gauge, Timer, KafkaMetric) under that MBean name, or None."""
    return broker.metrics.registry.get(MetricName.of(domain, type_, name, **tags))


def names(broker: Broker, domain: str, type_: str, name: str) -> list[MetricName]:
    """Every registered MBean name of (domain, type, name), whatever its tags."""
    return [mn for mn, _ in broker.metrics.registry.items()
            if (mn.domain, mn.type, mn.name) == (domain, type_, name)]
