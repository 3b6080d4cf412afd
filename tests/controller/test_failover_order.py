"""A broker failure is written in Kafka's order (KafkaController.onReplicasBecomeOffline): every partition that
needs a new leader first, then the ISR shrinks of the partitions whose leader stays (issue 20: at 10,000
partitions two thirds of the writes after a broker's death are ISR shrinks, and in assignment order the last new
leader waited for nearly all of them). Driven against the scripted ZooKeeper client of test_pipelined_writes."""

from __future__ import annotations

import uuid

from broker.controller import election
from broker.controller import zk_paths as zp
from broker.controller.cache import MetadataCache
from broker.controller.controller import Controller, ControllerSettings
from broker.controller.events import ControllerEventQueue
from broker.controller.state import NO_LEADER, PartitionState
from broker.metadata import BrokerInfo
from tests.controller.test_pipelined_writes import ScriptedZk, Tx

ROTATIONS = [(1, 2, 3), (2, 3, 1), (3, 1, 2)]


class OrderedZk(ScriptedZk):
    """Records the state znodes in the order their writes were applied."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[str] = []

    def answer(self, tx: Tx) -> list:
        res = super().answer(tx)
        if not isinstance(res[0], Exception):
            self.applied += [path for _, path, _ in tx.ops[1:]]
        return res


def spread(zk: ScriptedZk, topics: int, per_topic: int) -> Controller:
    """Leaders spread over brokers 1-3 (replica lists rotated, preferred leader first), full ISRs; broker 1 died."""
    cache = MetadataCache()
    for i in range(topics):
        t = f"t{i}"
        cache.put_assignment(t, zp.TopicAssignment(uuid.uuid4(), {p: ROTATIONS[p % 3] for p in range(per_topic)},
                                                   version=0))
        for p in range(per_topic):
            r = ROTATIONS[p % 3]
            cache.put_state(t, p, PartitionState(r, leader=r[0], leader_epoch=0, isr=r, version=0))
    cache.set_brokers({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in (2, 3)}, {2: 1, 3: 1})
    c = Controller(zk, cache, ControllerEventQueue(), 2, ControllerSettings())  # type: ignore[arg-type]
    c.active, c.epoch, c.epoch_zk_version = True, 1, 0
    return c


def path_of(t: str, p: int) -> str:
    return zp.state_path(t, p)


def test_a_broker_failure_elects_every_leader_before_shrinking_any_isr():
    zk = OrderedZk()
    c = spread(zk, topics=6, per_topic=100)  # 600 partitions: 204 led by the dead broker 1
    c._reconcile_with({2, 3})
    led_by_1 = {path_of(f"t{i}", p) for i in range(6) for p in range(100) if ROTATIONS[p % 3][0] == 1}
    assert len(led_by_1) == 204 and len(zk.applied) == 600  # every partition had broker 1 in its ISR
    assert set(zk.applied[:204]) == led_by_1  # in assignment order, 1 in 3 of the first 204 writes
    states = c.cache.partition_states()
    assert all(s.leader in (2, 3) and 1 not in s.isr and s.leader_epoch == 1 for s in states.values())
    assert c.leader_elections == 204


def test_state_events_also_elect_first():
    zk = OrderedZk()
    c = spread(zk, topics=1, per_topic=300)
    c._process([("state", "t0", p) for p in range(300)])
    assert {int(path.rsplit("/", 2)[1]) % 3 for path in zk.applied[:100]} == {0}
    assert len(zk.applied) == 300


def test_leader_moves_matches_the_elections_of_reconcile():
    live, shutting = {2, 3}, {3}
    cases = [((1, 2, 3), 1), ((1, 2, 3), 2), ((1, 2, 3), 3), ((2, 3), 4), ((2, 3), NO_LEADER)]
    for replicas, leader in cases:
        d = election.reconcile(replicas, leader, replicas, live, False, shutting)
        moves = election.leader_moves(replicas, leader, live, shutting)
        assert moves == (d is not None and d.leader != leader), (replicas, leader, d)
