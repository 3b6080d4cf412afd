"""StateWatches (broker/controller/state_watches.py) against a scripted ZooKeeper client: reads are pipelined
(every read of a batch is sent before any answer), a watch event re-reads with a new watch, a missing znode is
watched for its creation, a topic that went stops its watches, a reconnection reads everything again."""

from __future__ import annotations

import threading
import uuid

from kazoo.client import KazooState
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from broker.controller import zk_paths as zp
from broker.controller.state_watches import StateWatches
from common.polling import wait_until


class Pending:
    """An unanswered kazoo request: its rawlink callback runs when the test answers it."""

    def __init__(self, op: str, path: str, watch) -> None:
        self.op, self.path, self.watch = op, path, watch
        self._callbacks: list = []
        self._value: object = None
        self._error: Exception | None = None

    def rawlink(self, cb) -> None:
        self._callbacks.append(cb)

    def get_nowait(self):
        if self._error is not None:
            raise self._error
        return self._value

    def answer(self, value: object = None, error: Exception | None = None) -> None:
        self._value, self._error = value, error
        for cb in self._callbacks:
            cb(self)


class ScriptedZk:
    def __init__(self) -> None:
        self.sent: list[Pending] = []
        self.listeners: list = []
        self.lock = threading.Lock()

    def add_listener(self, fn) -> None:
        self.listeners.append(fn)

    def _send(self, op: str, path: str, watch) -> Pending:
        p = Pending(op, path, watch)
        with self.lock:
            self.sent.append(p)
        return p

    def get_async(self, path: str, watch=None) -> Pending:
        return self._send("get", path, watch)

    def exists_async(self, path: str, watch=None) -> Pending:
        return self._send("exists", path, watch)

    def unanswered(self) -> list[Pending]:
        with self.lock:
            out, self.sent = self.sent, []
        return out


class Stat:
    def __init__(self, version: int) -> None:
        self.version = version


def setup(keep: bool | None = None):
    zk = ScriptedZk()
    seen: list[tuple[str, int, bytes | None]] = []

    def on_state(t, p, tid, data, stat):
        seen.append((t, p, data))
        return keep
    return zk, StateWatches(zk, on_state), seen  # type: ignore[arg-type]


def test_a_topics_reads_are_all_sent_before_any_answer_and_each_sets_a_watch():
    zk, w, seen = setup()
    w.watch("t", uuid.uuid4(), list(range(500)))
    reads = zk.unanswered()
    assert [r.op for r in reads] == ["get"] * 500 and all(r.watch is not None for r in reads)
    assert {r.path for r in reads} == {zp.state_path("t", p) for p in range(500)}
    assert seen == []  # nothing answered yet, nothing waited for
    for r in reads:
        r.answer((b"{}", Stat(1)))
    assert len(seen) == 500 and w.watched() == 500


def test_a_change_event_reads_again_with_a_new_watch():
    zk, w, seen = setup()
    w.watch("t", uuid.uuid4(), [0])
    (first,) = zk.unanswered()
    first.answer((b"v1", Stat(1)))
    first.watch(WatchedEvent(EventType.CHANGED, KazooState.CONNECTED, first.path))
    (again,) = zk.unanswered()
    assert again.op == "get" and again.path == first.path and again.watch is not None
    again.answer((b"v2", Stat(2)))
    assert [d for _, _, d in seen] == [b"v1", b"v2"]


def test_a_missing_znode_is_watched_for_its_creation():
    zk, w, seen = setup()
    w.watch("t", uuid.uuid4(), [3])
    (read,) = zk.unanswered()
    read.answer(error=NoNodeError())
    (exists,) = zk.unanswered()
    assert exists.op == "exists" and exists.watch is not None
    exists.answer(None)  # still missing: the creation event will come
    assert zk.unanswered() == []
    exists.watch(WatchedEvent(EventType.CREATED, KazooState.CONNECTED, exists.path))
    (created,) = zk.unanswered()
    created.answer((b"v1", Stat(0)))
    assert seen == [("t", 3, None), ("t", 3, b"v1")]


def test_created_between_the_read_and_the_exists_is_read_at_once():
    zk, w, _ = setup()
    w.watch("t", uuid.uuid4(), [0])
    zk.unanswered()[0].answer(error=NoNodeError())
    zk.unanswered()[0].answer(Stat(0))
    (read,) = zk.unanswered()
    assert read.op == "get"


def test_a_gone_topic_stops_its_watches():
    zk, w, seen = setup(keep=False)
    w.watch("t", uuid.uuid4(), [0])
    (read,) = zk.unanswered()
    read.answer((b"v1", Stat(1)))
    assert w.watched() == 0
    read.watch(WatchedEvent(EventType.CHANGED, KazooState.CONNECTED, read.path))
    assert zk.unanswered() == []


def test_a_reconnection_reads_every_watched_znode_again():
    zk, w, _ = setup()
    w.watch("t", uuid.uuid4(), list(range(50)))
    for r in zk.unanswered():
        r.answer((b"v", Stat(1)))
    for fn in zk.listeners:
        fn(KazooState.CONNECTED)
    reread: list[Pending] = []
    wait_until(lambda: len(reread.__iadd__(zk.unanswered())) == 50, 10, what="the 50 reads after reconnection")
    assert {r.path for r in reread} == {zp.state_path("t", p) for p in range(50)}
