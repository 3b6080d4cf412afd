"""The controller's partition state writes are pipelined (issue 20: one synchronous ZooKeeper round trip per
partition made a failover of 1,000 leaders take 23 s): driven against a scripted ZooKeeper client that records
how many writes were sent before the first answer was awaited."""

from __future__ import annotations

import uuid

import pytest
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)

from broker.controller import zk_paths as zp
from broker.controller.cache import MetadataCache
from broker.controller.controller import Controller, ControllerSettings, Fenced
from broker.controller.events import ControllerEventQueue
from broker.controller.state import PartitionState
from broker.controller.state_writes import BATCH, IN_FLIGHT
from broker.metadata import BrokerInfo


class Stat:
    def __init__(self, version: int) -> None:
        self.version = version


class Result:
    def __init__(self, zk: ScriptedZk, tx: Tx) -> None:
        self.zk, self.tx = zk, tx

    def get(self, timeout: float | None = None) -> list:
        return self.zk.answer(self.tx)


def failed_multi(ops: int, failed: int, error: Exception) -> list:
    """ZooKeeper's answer to a multi-op whose op `failed` failed (kazoo's exceptions for error codes 0 and -2)."""
    return [RolledBackError() if i < failed else error if i == failed else RuntimeInconsistency()
            for i in range(ops)]


class Tx:
    def __init__(self, zk: ScriptedZk) -> None:
        self.zk = zk
        self.ops: list[tuple] = []

    def check(self, path: str, version: int) -> None:
        self.ops.append(("check", path, version))

    def set_data(self, path: str, data: bytes, version: int = -1) -> None:
        self.ops.append(("set", path, version))

    def commit_async(self) -> Result:
        self.zk.sent += 1
        return Result(self.zk, self)

    def commit(self) -> list:
        return self.commit_async().get()


class ScriptedZk:
    """Answers writes as ZooKeeper would; `moved` state znodes have a newer version than the controller's cache,
    `epoch` is /controller_epoch's version."""

    def __init__(self, epoch: int = 0, moved: dict[str, int] | None = None) -> None:
        self.epoch = epoch
        self.versions: dict[str, int] = dict(moved or {})
        self.sent = 0
        self.sent_before_first_answer: int | None = None

    def transaction(self) -> Tx:
        return Tx(self)

    def answer(self, tx: Tx) -> list:
        if self.sent_before_first_answer is None:
            self.sent_before_first_answer = self.sent
        (_, _, epoch), *sets = tx.ops
        if epoch != self.epoch:
            return failed_multi(len(tx.ops), 0, BadVersionError())
        for i, (_, path, version) in enumerate(sets, start=1):
            if version != self.versions.get(path, 0):
                return failed_multi(len(tx.ops), i, BadVersionError())
        for _, path, _ in sets:
            self.versions[path] = self.versions.get(path, 0) + 1
        return [True, *(Stat(self.versions[path]) for _, path, _ in sets)]

    def get(self, path: str, watch=None) -> tuple[bytes, Stat]:
        if path.startswith(zp.state_path("t", 0).rsplit("/", 3)[0]):
            version = self.versions.get(path, 0)
            return zp.encode_state(PartitionState((1, 2, 3), 1, 0, (1, 2), version=version)), Stat(version)
        raise NoNodeError()


def controller(zk: ScriptedZk, partitions: int) -> Controller:
    cache = MetadataCache()
    cache.put_assignment("t", zp.TopicAssignment(uuid.uuid4(), {p: (1, 2, 3) for p in range(partitions)}, version=0))
    for p in range(partitions):
        cache.put_state("t", p, PartitionState((1, 2, 3), leader=1, leader_epoch=0, isr=(1, 2, 3), version=0))
    cache.set_brokers({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in (2, 3)}, {2: 1, 3: 1})  # broker 1 died
    c = Controller(zk, cache, ControllerEventQueue(), 2, ControllerSettings())  # type: ignore[arg-type]
    c.active, c.epoch, c.epoch_zk_version = True, 1, 0
    return c


def test_failover_sends_batches_of_writes_in_a_pipeline():
    zk = ScriptedZk()
    c = controller(zk, 2_500)
    c._reconcile_with({2, 3})
    assert zk.sent == 2_500 // BATCH  # one multi-op per partition before
    assert zk.sent_before_first_answer == IN_FLIGHT  # one at a time before
    states = c.cache.partition_states()
    assert all(s.leader == 2 and s.isr == (2, 3) and s.leader_epoch == 1 and s.version == 1 for s in states.values())
    assert c.leader_elections == 2_500


def test_a_write_that_lost_a_race_is_read_again_and_retried_and_its_batch_sent_again():
    moved = zp.state_path("t", 7)
    zk = ScriptedZk(moved={moved: 4})  # the leader shrank the ISR of partition 7 meanwhile (znode version 4)
    c = controller(zk, 250)
    c._reconcile_with({2, 3})
    s = c.cache.partition_state("t", 7)
    assert s is not None and (s.leader, s.isr, s.version) == (2, (2,), 5)
    others = [c.cache.partition_state("t", p) for p in range(250) if p != 7]
    assert all(o is not None and (o.leader, o.isr, o.version) == (2, (2, 3), 1) for o in others)
    assert c.leader_elections == 250


def test_a_newer_controller_epoch_fences_the_batch():
    zk = ScriptedZk(epoch=1)
    c = controller(zk, 10)
    with pytest.raises(Fenced):
        c._reconcile_with({2, 3})
    assert all(s.leader == 1 for s in c.cache.partition_states().values())


class Answered:
    def __init__(self, zk: CreatingZk, value: object = None, error: Exception | None = None) -> None:
        self.zk, self.value, self.error = zk, value, error

    def get(self, timeout: float | None = None) -> object:
        self.zk.awaited()
        if self.error is not None:
            raise self.error
        return self.value


class CreateTx:
    def __init__(self, zk: CreatingZk) -> None:
        self.zk = zk
        self.creates: list[str] = []

    def check(self, path: str, version: int) -> None:
        pass

    def create(self, path: str, data: bytes) -> None:
        self.creates.append(path)

    def commit_async(self) -> Answered:
        self.zk.sent += 1
        results: list = [True]
        for path in self.creates:
            if path in self.zk.nodes:
                results.append(NodeExistsError())
            else:
                self.zk.nodes.add(path)
                results.append(path)
        return Answered(self.zk, results)


class CreatingZk:
    """A ZooKeeper where only the topic znode exists: every state (and its parents) is to be created."""

    def __init__(self) -> None:
        self.nodes: set[str] = {zp.topic_path("t")}
        self.sent = 0
        self.sent_before_first_answer: int | None = None

    def awaited(self) -> None:
        if self.sent_before_first_answer is None:
            self.sent_before_first_answer = self.sent

    def get_async(self, path: str, watch=None) -> Answered:
        self.sent += 1
        return Answered(self, error=NoNodeError())

    def exists_async(self, path: str, watch=None) -> Answered:
        self.sent += 1
        return Answered(self, Stat(0) if path in self.nodes else None)

    def transaction(self) -> CreateTx:
        return CreateTx(self)

    def get(self, path: str, watch=None) -> tuple[bytes, Stat]:
        raise NoNodeError()  # no admin znodes


def test_new_partitions_states_are_created_as_a_pipeline():
    zk = CreatingZk()
    c = controller(ScriptedZk(), 0)
    c.zk = zk  # type: ignore[assignment]
    c.cache.put_assignment("t", zp.TopicAssignment(uuid.uuid4(), {p: (1, 2, 3) for p in range(300)}, version=0))
    c._reconcile_with({2, 3})
    assert zk.sent_before_first_answer == 300  # the reads of all 300 states before the first answer
    assert zk.nodes >= {zp.partitions_path("t")} | {zp.state_path("t", p) for p in range(300)}
    states = c.cache.partition_states()
    assert len(states) == 300 and all((s.leader, s.isr, s.leader_epoch) == (2, (2, 3), 0) for s in states.values())


def test_state_events_alone_reconcile_only_their_partitions():
    zk = ScriptedZk()
    c = controller(zk, 2_500)  # broker 1, the leader of every partition, is gone: each needs a new leader
    c._process([("state", "t", 3), ("state", "t", 5), ("state", "t", 3)])
    moved = {p for (_, p), s in c.cache.partition_states().items() if s.leader == 2}
    assert moved == {3, 5}  # a whole-cluster pass would have moved all 2,500
    c._process([("brokers",)])
    assert all(s.leader == 2 for s in c.cache.partition_states().values())
