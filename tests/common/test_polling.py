import asyncio
import socket
import subprocess
import sys
import time

import pytest

from common.polling import ProcessExited, WaitTimeout, port_open, wait_for_port, wait_until, wait_until_async


def _counter(ready_at: int):
    calls = []

    def pred():
        calls.append(1)
        return len(calls) if len(calls) >= ready_at else 0
    return pred, calls


def test_returns_the_truthy_value():
    pred, calls = _counter(3)
    assert wait_until(pred, 5, 0) == 3 and len(calls) == 3


def test_timeout_names_what_and_the_last_value():
    with pytest.raises(WaitTimeout, match=r"the answer not reached after 0.05s \(last value: 0\)") as e:
        wait_until(lambda: 0, 0.05, 0.01, "the answer")
    assert isinstance(e.value, TimeoutError) and isinstance(e.value, AssertionError)


def test_exceptions_propagate_unless_retried():
    def boom():
        raise ConnectionRefusedError("not yet")
    with pytest.raises(ConnectionRefusedError):
        wait_until(boom, 1, 0)
    with pytest.raises(WaitTimeout, match="last error: ConnectionRefusedError"):
        wait_until(boom, 0.05, 0.01, retry_on=(OSError,))


def test_async_twin_lets_the_loop_run():
    async def main():
        flag = []
        asyncio.get_running_loop().call_later(0.05, flag.append, 1)
        assert await wait_until_async(lambda: flag, 2) == [1]
        with pytest.raises(WaitTimeout, match="never"):
            await wait_until_async(lambda: None, 0.05, what="never")
    asyncio.run(main())


def test_wait_for_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        wait_for_port("127.0.0.1", port, lambda: True, 2)
        assert port_open("127.0.0.1", port)
    with pytest.raises(WaitTimeout, match=f"127.0.0.1:{port} not reached"):
        wait_for_port("127.0.0.1", port, None, 0.1)


def test_wait_for_port_stops_when_the_process_exits():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    t0 = time.monotonic()
    with pytest.raises(ProcessExited):
        wait_for_port("127.0.0.1", 1, lambda: p.poll() is None, 30)
    assert time.monotonic() - t0 < 5
