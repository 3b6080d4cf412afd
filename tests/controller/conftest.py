"""A real ZooKeeper (kafkascope.local.zookeeper) and in-process cluster members (ZkMetadata + controller)
driven with fake listeners on one background event loop."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable

import pytest

from broker.controller.cache import MetadataCache
from broker.controller.controller import Controller, ControllerSettings
from broker.controller.events import ControllerEventQueue
from broker.controller.state import PartitionState
from broker.controller.store import ZkMetadata
from broker.controller.zk_session import new_client
from broker.metadata import BrokerInfo
from common.polling import wait_until
from kafkascope.local import zookeeper as zkrun

_chroots = itertools.count()


class FakeListener:
    def __init__(self, loop_thread: threading.Thread) -> None:
        self.loop_thread = loop_thread
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.deleted: list[str] = []
        self.brokers_changed = 0
        self.wrong_thread = 0

    def _check(self) -> None:
        if threading.current_thread() is not self.loop_thread:
            self.wrong_thread += 1

    def on_partition_state(self, topic: str, partition: int, state: PartitionState) -> None:
        self._check()
        self.states[(topic, partition)] = state

    def on_topic_deleted(self, topic: str) -> None:
        self._check()
        self.deleted.append(topic)
        for k in [k for k in self.states if k[0] == topic]:
            del self.states[k]

    def on_brokers_changed(self) -> None:
        self._check()
        self.brokers_changed += 1


class Cluster:
    """Brokers as ZkMetadata instances in this process, all on one event loop thread."""

    def __init__(self, zk: zkrun.ZooKeeperServer, chroot: str) -> None:
        self.zk_server = zk
        self.connect = zk.connect(chroot)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-loop", daemon=True)
        self.thread.start()
        self.nodes: dict[int, ZkMetadata] = {}
        self.listeners: dict[int, FakeListener] = {}

    def run(self, coro, timeout_s: float = 30.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def call(self, fn: Callable[[], object], timeout_s: float = 30.0):
        async def wrapper():
            return fn()
        return self.run(wrapper(), timeout_s)

    def start(self, broker_id: int, rack: str | None = None, session_timeout_ms: int = 4000,
              **settings: object) -> ZkMetadata:
        s = ControllerSettings(**{"leader_imbalance_check_interval_s": 3600.0, **settings})
        # built as broker.broker.zookeeper_metadata builds it
        zk = new_client(self.connect, session_timeout_ms)
        cache, events = MetadataCache(), ControllerEventQueue()
        controller = Controller(zk, cache, events, broker_id, s)
        store = ZkMetadata(zk, cache, events, controller, BrokerInfo(broker_id, "127.0.0.1", 19000 + broker_id, rack),
                           connect=self.connect, session_timeout_ms=session_timeout_ms)
        listener = FakeListener(self.thread)
        self.call(lambda: store.start(listener))
        self.nodes[broker_id] = store
        self.listeners[broker_id] = listener
        return store

    def stop(self, broker_id: int) -> None:
        store = self.nodes.pop(broker_id)
        store.close()

    def controller(self) -> ZkMetadata:
        def active():
            act = [n for n in self.nodes.values() if n.controller.active]
            return act[0] if len(act) == 1 else None
        return wait_until(active, 15, 0.02, "one active controller")

    def close(self) -> None:
        for b in list(self.nodes):
            self.stop(b)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory):
    if not zkrun.available():
        pytest.skip("ZooKeeper (Debian package) or Java not installed")
    server = zkrun.ZooKeeperServer(tmp_path_factory.mktemp("zk"), tick_time_ms=200)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def cluster(zk_server):
    c = Cluster(zk_server, f"/kafkascope-t{next(_chroots)}")
    yield c
    c.close()
