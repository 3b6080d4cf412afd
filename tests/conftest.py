"""Shared fixtures: a real broker subprocess on a free loopback port."""

from __future__ import annotations

import asyncio
import inspect
import uuid

import pytest

from kafkascope.local.broker_process import BrokerProcess


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory):
    """One broker for tests that only need *a* broker (each test uses its own topic names)."""
    with BrokerProcess(tmp_path_factory.mktemp("shared-broker")) as b:
        yield b


@pytest.fixture
def broker(tmp_path):
    """A fresh broker per test, for tests that restart, crash or reconfigure it."""
    b = BrokerProcess(tmp_path)
    yield b
    b.stop()


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests in a fresh event loop, bounded in time (no plugin needed)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(asyncio.wait_for(pyfuncitem.obj(**kwargs), 60))
        return True
    return None
