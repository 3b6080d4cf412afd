"""The leader's ISR writes are submitted, not awaited (issue 20): while one is in flight the partition sends no
other, the shrink check does not wait for ZooKeeper, and an answer overtaken by a newer state is not applied."""

from __future__ import annotations

from broker.controller.state import PartitionState
from tests.broker.test_replica_manager import FakeStore, _batch, _manager


class DeferredStore(FakeStore):
    """Answers ISR writes only when the test says so (as ZooKeeper's answer arrives later on the loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list = []

    def submit_isr_update(self, topic, partition, current, isr, done):
        self.pending.append((current, isr, done))

    def answer_all(self) -> None:
        pending, self.pending = self.pending, []
        for current, isr, done in pending:
            done(self.update_isr("t", 0, current, isr))


def test_shrinks_of_many_partitions_are_all_sent_before_any_answer(tmp_path):
    rm, clock, _ = _manager(tmp_path)
    store = rm.store = DeferredStore()
    for p in range(50):
        rm.on_partition_state("t", p, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    clock.advance(1500)
    rm.shrink_isrs()
    assert len(store.pending) == 50  # no answer awaited in between
    assert all(part.state.isr == (1, 2) and part.isr_update_in_flight for part in rm.partitions.values())
    rm.shrink_isrs()
    assert len(store.pending) == 50  # in flight: not sent twice
    store.answer_all()
    assert all(part.state.isr == (1,) and not part.isr_update_in_flight for part in rm.partitions.values())


def test_an_answer_overtaken_by_a_newer_state_is_not_applied(tmp_path):
    rm, clock, _ = _manager(tmp_path)
    store = rm.store = DeferredStore()
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    rm.append("t", 0, _batch(), 1)
    clock.advance(1500)
    rm.shrink_isrs()
    newer = PartitionState((1, 2), 1, 0, (1, 2), version=5)  # e.g. the controller's write, delivered first
    rm.on_partition_state("t", 0, newer)
    store.answer_all()
    part = rm.partitions[("t", 0)]
    assert part.state == newer and not part.isr_update_in_flight
