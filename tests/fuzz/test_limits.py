"""One client cannot sink the broker by announcing large requests."""

from __future__ import annotations

import asyncio
import socket
import struct

from kafkascope.fuzz.runner import broker_answers
from kafkascope.local.broker_process import BrokerProcess, proc_status_kb


def test_announced_but_unsent_request_bytes_cost_no_memory(broker: BrokerProcess) -> None:
    broker.start()
    assert broker.proc is not None
    before = proc_status_kb(broker.proc.pid, "VmRSS")
    socks = []
    try:
        for _ in range(10):  # 10 x 100 MB announced (socket.request.max.bytes), 1 KB of each sent
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
            s.sendall(struct.pack(">i", 100 * 1024 * 1024) + struct.pack(">hhi", 0, 9, 1) + bytes(1016))
            socks.append(s)
        assert asyncio.run(broker_answers("127.0.0.1", broker.port))  # every announcement has been read
        grown_mb = (proc_status_kb(broker.proc.pid, "VmRSS") - before) / 1024
        assert grown_mb < 100, f"resident memory grew {grown_mb:.0f} MB for 10 KB received"
    finally:
        for s in socks:
            s.close()
    assert asyncio.run(broker_answers("127.0.0.1", broker.port))
