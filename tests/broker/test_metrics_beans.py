"""Kafka 3.9 MBeans a broker of ours in this process registers, read from its registry by Kafka's object names and
attributes (the Prometheus naming is exporter/naming.py's business, tested there)."""

from __future__ import annotations

import asyncio

from tests.broker.inproc import inproc_broker, metric
from tests.support.wire import WireClient

API_VERSIONS = 18


def answered(port: int, **body: str) -> WireClient:
    """A connection whose ApiVersions (v3, with `body`'s client software fields if any) was answered."""
    c = WireClient(port)
    c.call(API_VERSIONS, 3, {"client_software_name": body.get("name", ""),
                             "client_software_version": body.get("version", "")})
    return c


async def test_acceptor_blocked_percent_times_the_wait_for_a_connection_slot(tmp_path):
    """At max.connections the acceptor holds the next connection until one closes (Kafka's
    waitForConnectionSlot) and marks the wait in nanoseconds; never blocked, it reads 0."""
    async with inproc_broker(tmp_path, **{"max.connections": 2}) as (b, port):
        blocked = metric(b, "kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT")
        assert blocked.count == 0

        def clients() -> None:
            a1, a2 = answered(port), answered(port)
            a3 = WireClient(port, timeout_s=0.5)
            a3.send(API_VERSIONS, 3, {"client_software_name": "", "client_software_version": ""})
            try:
                a3.recv(API_VERSIONS, 3)
                raise AssertionError("a third connection was served at max.connections=2")
            except TimeoutError:
                pass  # held, not refused: the answer comes once a slot frees
            a1.close()
            a3.sock.settimeout(10)
            assert a3.recv(API_VERSIONS, 3).error_code == 0
            for c in (a2, a3):
                c.close()

        await asyncio.to_thread(clients)
        assert blocked.count >= 0.5e9  # ns: at least the half second the third client waited
        assert 0 < blocked.mean_rate <= 1.0  # the meter's rate unit is ns: a share of time
