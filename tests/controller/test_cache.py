"""MetadataCache and the reassignment plan without ZooKeeper: what the store, the watches and the controller
put into the cache, and what the listener hears (delivered on a real event loop)."""

from __future__ import annotations

import asyncio
import uuid

from broker.controller.cache import MetadataCache
from broker.controller.reassignment import plan
from broker.controller.state import PartitionState
from broker.controller.zk_paths import TopicAssignment
from broker.errors import ErrorCode
from broker.metadata import BrokerInfo


class Listener:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_partition_state(self, topic, partition, state):
        self.calls.append(("state", topic, partition, state.leader, state.replicas))

    def on_topic_deleted(self, topic):
        self.calls.append(("deleted", topic))

    def on_brokers_changed(self):
        self.calls.append(("brokers",))

    def on_topic_config_changed(self, topic):
        self.calls.append(("configs", topic))


def _cache():
    cache, listener, new = MetadataCache(), Listener(), []
    cache.attach(listener, asyncio.get_running_loop())
    cache.on_new_partitions(lambda t, tid, parts: new.append((t, tid, parts)))
    return cache, listener, new


def _state(leader, version, replicas=(1, 2)):
    return PartitionState(replicas=replicas, leader=leader, leader_epoch=version, isr=replicas, version=version)


async def _settle():
    await asyncio.sleep(0)


async def test_assignment_states_and_deletion_reach_the_listener_in_order():
    cache, listener, new = _cache()
    tid = uuid.uuid4()
    cache.put_assignment("t", TopicAssignment(tid, {0: (1, 2), 1: (2, 1)}, version=0))
    assert new == [("t", tid, [0, 1])]                          # the watcher sets state watches for these
    assert cache.topic("t").partitions == 2 and cache.topic("t").replication_factor == 2
    assert cache.put_state("t", 0, _state(1, 0), topic_id=tid)
    assert not cache.put_state("t", 0, _state(2, 0))            # not newer (znode version): ignored
    assert not cache.put_state("u", 0, _state(2, 5))            # unknown topic
    assert not cache.put_state("t", 1, _state(2, 5), topic_id=uuid.uuid4())  # a watch of a former topic
    cache.put_assignment("t", TopicAssignment(tid, {0: (1, 2), 1: (2, 1)}, version=0))  # same version: no-op
    assert len(new) == 1
    cache.drop_topic("t")
    await _settle()
    assert listener.calls == [("state", "t", 0, 1, (1, 2)), ("deleted", "t")]
    assert cache.topic("t") is None and cache.partition_states() == {}


async def test_a_recreated_topic_replaces_the_old_one():
    cache, listener, new = _cache()
    old, fresh = uuid.uuid4(), uuid.uuid4()
    cache.put_assignment("t", TopicAssignment(old, {0: (1,)}, version=3))
    cache.put_state("t", 0, _state(1, 4, (1,)))
    cache.put_assignment("t", TopicAssignment(fresh, {0: (2,)}, version=0))  # lower version, new topic id
    await _settle()
    assert cache.assignment("t").topic_id == fresh and cache.partition_state("t", 0) is None
    assert [n[1] for n in new] == [old, fresh]
    assert ("deleted", "t") in listener.calls


async def test_own_isr_write_is_cached_without_a_listener_call_and_replicas_follow_the_assignment():
    cache, listener, _ = _cache()
    tid = uuid.uuid4()
    cache.put_assignment("t", TopicAssignment(tid, {0: (1, 2)}, version=0))
    cache.put_state("t", 0, _state(1, 0), deliver=False)
    await _settle()
    assert listener.calls == [] and cache.partition_state("t", 0).version == 0
    # a reassignment changes the replicas before the state znode: the cache shows the assignment's
    cache.put_assignment("t", TopicAssignment(tid, {0: (3, 1, 2)}, adding={0: (3,)}, removing={0: (2,)},
                                              version=1))
    await _settle()
    assert cache.partition_state("t", 0).replicas == (3, 1, 2)
    assert listener.calls == [("state", "t", 0, 1, (3, 1, 2))]
    assert cache.reassignments() == {("t", 0): ((3, 1, 2), (3,), (2,))}


async def test_brokers_configs_and_waiting():
    cache, listener, _ = _cache()
    cache.set_brokers({1: BrokerInfo(1, "h", 1)}, {1: 10})
    cache.set_brokers({1: BrokerInfo(1, "h", 1)}, {1: 10})     # unchanged: no second call
    cache.set_brokers({1: BrokerInfo(1, "h", 1)}, {1: 11})     # bounced (new registration znode)
    cache.put_assignment("t", TopicAssignment(uuid.uuid4(), {0: (1,)}, version=0))
    assert cache.put_configs("t", {"retention.ms": "1"}, notify=False).configs == {"retention.ms": "1"}
    cache.put_configs("t", {"retention.ms": "1"}, notify=True)  # what we wrote comes back: no call
    cache.put_configs("t", {"retention.ms": "2"}, notify=True)
    waiter = asyncio.create_task(cache.wait_until(lambda: cache.partition_state("t", 0) is not None, 5))
    await _settle()
    assert not waiter.done()
    cache.put_state("t", 0, _state(1, 0, (1,)))
    assert await asyncio.wait_for(waiter, 1)
    assert not await cache.wait_until(lambda: False, 0.05)
    assert [c for c in listener.calls if c[0] != "state"] == [("brokers",), ("brokers",), ("configs", "t")]
    assert cache.broker_czxids() == {1: 11} and cache.live_racks() == {1: None}


def test_reassignment_plan():
    a = TopicAssignment(uuid.uuid4(), {0: (1, 2), 1: (2, 3), 2: (1, 3)}, adding={2: (1,)}, removing={2: (2,)},
                        version=4)
    a = TopicAssignment(a.topic_id, {**a.partitions, 2: (1, 3, 2)}, a.adding, a.removing, 4)
    new, res = plan(a, "t", {0: (3, 2), 1: (2, 3), 2: None, 7: (1,), }, live={1, 2, 3})
    assert res == {0: (ErrorCode.none, None), 1: (ErrorCode.none, None), 2: (ErrorCode.none, None),
                   7: (ErrorCode.unknown_topic_or_partition, None)}
    assert new.partitions[0] == (3, 2, 1) and new.adding[0] == (3,) and new.removing[0] == (1,)
    assert new.partitions[1] == (2, 3)                          # already there: nothing to move
    assert new.partitions[2] == (3, 2) and 2 not in new.adding   # cancelled: the origin replicas
    _, res = plan(new, "t", {0: (1, 2), 1: None, 2: (9, 3)}, live={1, 2, 3})
    assert res[0][0] == ErrorCode.reassignment_in_progress
    assert res[1][0] == ErrorCode.no_reassignment_in_progress
    assert res[2][0] != ErrorCode.none                           # broker 9 is not alive


def test_reassigning_a_topic_deleted_after_it_was_read_answers_unknown_topic(monkeypatch):
    """The topic znode goes between the read and the conditional write (a concurrent DeleteTopics): each
    partition is UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers, not a failed handler."""
    from kazoo.exceptions import NoNodeError

    from broker.controller import reassignment

    class DeletedMeanwhile:
        def set(self, path, value, version):
            raise NoNodeError()

    a = TopicAssignment(uuid.uuid4(), {0: (1, 2), 1: (2, 3)}, adding={1: (3,)}, removing={1: (1,)}, version=3)
    cache = MetadataCache()
    cache.set_brokers({b: BrokerInfo(b, "h", b) for b in (1, 2, 3)}, {b: b for b in (1, 2, 3)})
    monkeypatch.setattr(reassignment, "refresh_topic", lambda zk, cache, t: a)
    results = reassignment.alter_reassignments(DeletedMeanwhile(), cache, {("t", 0): (3, 2), ("t", 1): None})
    assert results == {("t", 0): (ErrorCode.unknown_topic_or_partition, None),
                       ("t", 1): (ErrorCode.unknown_topic_or_partition, None)}


def test_topic_generation_moves_with_each_change_the_metadata_answer_depends_on():
    cache = MetadataCache()
    tid = uuid.uuid4()
    g0 = cache.topic_generation("t")
    cache.put_assignment("t", TopicAssignment(tid, {0: (1, 2)}, version=0))
    g1 = cache.topic_generation("t")
    cache.put_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    g2 = cache.topic_generation("t")
    assert cache.put_state("t", 0, PartitionState((1, 2), 1, 0, (1,), version=0)) is False  # not newer
    assert cache.topic_generation("t") == g2
    cache.put_state("t", 0, PartitionState((1, 2), 1, 0, (1,), version=1), deliver=False)  # our own ISR write
    g3 = cache.topic_generation("t")
    cache.put_configs("t", {"retention.ms": "1"}, notify=False)  # not part of a Metadata answer
    assert cache.topic_generation("t") == g3
    cache.drop_topic("t")
    g4 = cache.topic_generation("t")
    cache.put_assignment("t", TopicAssignment(uuid.uuid4(), {0: (1, 2)}, version=0))  # re-created
    assert len({g0, g1, g2, g3, g4, cache.topic_generation("t")}) == 6


def test_offline_replicas_by_partition_from_each_brokers_report():
    """/admin/offline_replicas/<id> as the watches put it in the cache: inverted to partition -> brokers, and a
    broker's report gone (its session ended: a restart) takes its replicas back online."""
    from broker.controller import zk_paths as zp

    cache = MetadataCache()
    report = zp.encode_offline_replicas(1, [("t", 2), ("t", 0)])
    cache.set_offline_replicas(1, zp.decode_offline_replicas(report))
    cache.set_offline_replicas(2, frozenset({("t", 0)}))
    assert cache.offline_replicas() == {("t", 0): {1, 2}, ("t", 2): {1}}
    cache.set_offline_replicas(1, frozenset())
    assert cache.offline_replicas() == {("t", 0): {2}}
