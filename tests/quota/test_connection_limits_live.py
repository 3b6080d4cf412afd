"""Connection limits changed at run time on a real broker of ours (kafka-configs.sh --entity-type brokers, here
through the Admin API): a listener's max.connections holds its acceptor until a connection closes, an address over
its override is closed at once, a lowered max.connections closes the least recently active connections of the
other listeners, and the listener's acceptor metrics count it all."""

from __future__ import annotations

import asyncio
import select
import socket

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kafkascope.local.process import free_port
from kafkascope.local.wire import WireClient
from tests.broker.inproc import inproc_broker, metric

API_VERSIONS = 18


def listeners() -> dict[str, str]:
    """Two listeners on fixed ports (the Admin API's clients connect to what the broker advertises)."""
    return {"listeners": f"PLAINTEXT://127.0.0.1:{free_port()},EXTERNAL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"}


def alter(bootstrap: str, admin: AdminClient | None = None, **configs: str | None) -> AdminClient:
    admin = admin or AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET)
        for k, v in configs.items()])
    admin.incremental_alter_configs([res])[res].result(30)
    return admin


def client(port: int, source: str = "127.0.0.1") -> WireClient:
    c = WireClient.__new__(WireClient)
    c.sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    c._corr = 0
    return c


def answered(c: WireClient) -> bool:
    c.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    return True


def held(c: WireClient, seconds: float = 0.5) -> bool:
    """Sent a request and got no answer (nor a close) within `seconds`."""
    c.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    readable, _, _ = select.select([c.sock], [], [], seconds)
    return not readable


def closed_by_broker(c: WireClient) -> bool:
    c.sock.settimeout(10)
    try:
        c.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        return c.sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


async def test_limits_changed_at_run_time(tmp_path):
    async with inproc_broker(tmp_path, **listeners()) as (b, port):
        external = b.server.ports["EXTERNAL"]
        bootstrap = f"127.0.0.1:{port}"
        blocked = metric(b, "kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="EXTERNAL")
        rate = metric(b, "kafka.server", "socket-server-metrics", "connection-accept-rate", listener="EXTERNAL")
        assert blocked is not None and rate is not None and blocked.count == 0

        def listener_limit() -> None:
            admin = alter(bootstrap, **{"listener.name.external.max.connections": "2"})
            c1, c2 = client(external), client(external)
            assert answered(c1) and answered(c2)
            c3 = client(external)
            assert held(c3)                       # accepted by the kernel, not served: the acceptor waits
            c1.close()
            c3.sock.settimeout(10)
            c3.recv(API_VERSIONS, 3)              # served once a slot freed
            alter(bootstrap, admin, **{"listener.name.external.max.connections": None})
            for c in (c2, c3):
                c.close()

        await asyncio.to_thread(listener_limit)
        assert blocked.count >= 0.5e9             # ns: the half second the third connection waited, and more
        assert rate.read() > 0

        def address_override() -> None:
            admin = alter(bootstrap, **{"max.connections.per.ip.overrides": "127.0.0.2:1"})
            first = client(external, source="127.0.0.2")
            assert answered(first)
            assert closed_by_broker(client(external, source="127.0.0.2"))   # TooManyConnections: closed at once
            assert answered(client(external))                              # another address is not limited
            alter(bootstrap, admin, **{"max.connections.per.ip.overrides": None})
            assert answered(client(external, source="127.0.0.2"))
            first.close()

        await asyncio.to_thread(address_override)

        # A lowered max.connections, stored as the handler stores it (the Admin API's own connections would come
        # and go while the count is read).
        def open_two() -> tuple[WireClient, WireClient]:
            idle, busy = client(external), client(external)
            assert answered(idle) and answered(busy) and answered(busy)   # busy: the more recently active
            return idle, busy

        idle, busy = await asyncio.to_thread(open_two)
        on_external = b.server.counts.per_listener["EXTERNAL"]
        b.metadata.broker_configs().set("0", {"max.connections": str(b.server.counts.total - 1),
                                              "listener.name.plaintext.max.connections": "100"})
        assert await asyncio.to_thread(closed_by_broker, idle)   # the least recently active connection of EXTERNAL
        assert await asyncio.to_thread(answered, busy)
        assert b.server.counts.per_listener["EXTERNAL"] == on_external - 1
        b.metadata.broker_configs().set("0", {})
        busy.close()
