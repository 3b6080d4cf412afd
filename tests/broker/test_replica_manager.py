"""ReplicaManager without servers: a fake store, a real log, the real purgatory."""

import asyncio

import pytest

from broker.config import BrokerConfig
from broker.controller.state import PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.log.manager import LogManager
from broker.log.records import Record, build_batch
from broker.metadata import TopicInfo
from broker.purgatory import Purgatory
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ProducePartitionStatus, ReplicaManager, hw_key
from common.clock import ManualClock


class FakeStore:
    def __init__(self):
        self.isr_writes = []
        self.topics = {"t": TopicInfo("t", None, 1)}

    def topic(self, name):
        return self.topics.get(name)

    def update_isr(self, topic, partition, current, isr):
        self.isr_writes.append(isr)
        return PartitionState(current.replicas, current.leader, current.leader_epoch, isr,
                              version=current.version + 1)

    def submit_isr_update(self, topic, partition, current, isr, done):
        done(self.update_isr(topic, partition, current, isr))

    def shutting_down_brokers(self):
        return set()


class FakeFetchers:
    """Records what the replica manager asks of the follower side (ReplicaFetchers)."""

    def __init__(self):
        self.following: dict[tuple[str, int], tuple[int, int]] = {}
        self.brokers_changed = 0

    def follow(self, part, leader_id, leader_epoch):
        self.following[(part.topic, part.index)] = (leader_id, leader_epoch)

    def unfollow(self, key):
        self.following.pop(key, None)

    def on_brokers_changed(self):
        self.brokers_changed += 1


def _manager(tmp_path, fetchers=None, **cfg):
    config = BrokerConfig(broker_id=1, replica_lag_time_max_ms=1000, **cfg)
    clock = ManualClock()
    logs = LogManager([tmp_path], clock, lambda t: config.log_config())
    store = FakeStore()
    return ReplicaManager(config, clock, logs, store, Purgatory(), fetchers or FakeFetchers()), clock, store


def _batch():
    return build_batch([Record(timestamp=1, key=b"k", value=b"v")])


async def test_unreplicated_append_wakes_consumers_waiting_on_the_high_watermark(tmp_path):
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1,), 1, 0, (1,)))
    waiter = asyncio.create_task(rm.purgatory.wait([hw_key("t", 0)], 5))
    await asyncio.sleep(0)
    rm.append("t", 0, _batch(), 1)
    assert await asyncio.wait_for(waiter, 1) is True


async def test_acks_all_waits_for_followers_then_completes(tmp_path):
    rm, clock, store = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 3, (1, 2), version=0))
    part, result = rm.append("t", 0, _batch(), -1)
    assert part.log.high_watermark == 0  # follower 2 has nothing yet
    done = asyncio.create_task(rm.wait_for_replication(part, result.last_offset, 5))
    await asyncio.sleep(0)
    assert not done.done()
    rm.on_follower_fetch(part, 2, 1)  # follower fetches from offset 1: it has offset 0
    assert await asyncio.wait_for(done, 1) == ErrorCode.none
    assert part.log.high_watermark == 1


async def test_acks_all_outcome_is_decided_at_the_append_when_the_isr_is_the_leader_alone(tmp_path):
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1,), 1, 0, (1,)))
    rm.on_partition_state("t", 1, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    part, result = rm.append("t", 0, _batch(), -1)
    assert rm.replication_outcome(part, result.last_offset, part.leadership) == ErrorCode.none
    part, result = rm.append("t", 1, _batch(), -1)
    assert rm.replication_outcome(part, result.last_offset, part.leadership) is None   # follower 2 has nothing
    rm.on_follower_fetch(part, 2, 1)
    assert rm.replication_outcome(part, result.last_offset, part.leadership) == ErrorCode.none
    assert rm.replication_outcome(part, result.last_offset, part.leadership - 1) == ErrorCode.not_leader_or_follower


def _status(rm, partition):
    part, result = rm.append("t", partition, _batch(), -1)
    return ProducePartitionStatus(part, result.last_offset, part.leadership)


async def test_a_write_to_two_partitions_is_completed_inside_the_notify_that_decides_the_last(tmp_path):
    """Kafka's DelayedProduce over several partitions: one park, one timeout, completed in the notifier."""
    rm, clock, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    rm.on_partition_state("t", 1, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    statuses = [_status(rm, 0), _status(rm, 1)]
    completed, parks = [], []
    done = asyncio.create_task(rm.await_replication(statuses, clock.monotonic() + 5,
                                                    lambda: completed.append([s.outcome for s in statuses]),
                                                    lambda: parks.append(rm.purgatory.delayed("Produce"))))
    await asyncio.sleep(0)
    assert rm.purgatory.delayed("Produce") == 1 and parks == [0]   # told once, just before it parked
    rm.on_follower_fetch(statuses[0].part, 2, 1)
    assert completed == [] and statuses[0].outcome == ErrorCode.none and statuses[1].outcome is None
    rm.on_follower_fetch(statuses[1].part, 2, 1)
    assert completed == [[ErrorCode.none, ErrorCode.none]]   # inside the follower's fetch, not on resuming
    assert await asyncio.wait_for(done, 1) is True


async def test_a_write_past_its_deadline_times_out_only_its_undecided_partitions(tmp_path):
    rm, clock, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1,), 1, 0, (1,)))   # the leader alone: decided at the append
    rm.on_partition_state("t", 1, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    statuses = [_status(rm, 0), _status(rm, 1)]
    assert await rm.await_replication(statuses, clock.monotonic(), lambda: None) is False
    assert [s.outcome for s in statuses] == [ErrorCode.none, ErrorCode.request_timed_out]
    assert rm.purgatory.delayed("Produce") == 0


async def test_a_write_decided_at_the_append_never_parks(tmp_path):
    rm, clock, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1,), 1, 0, (1,)))
    statuses = [_status(rm, 0)]
    waits = []
    rm.purgatory.wait = lambda *a, **k: waits.append(a)   # would fail the await if called
    parks = []
    assert await rm.await_replication(statuses, clock.monotonic() + 5, lambda: None, lambda: parks.append(1)) is False
    assert statuses[0].outcome == ErrorCode.none and waits == [] and parks == []   # no remote time for it


async def test_lagging_follower_is_shrunk_and_min_isr_refuses_acks_all(tmp_path):
    rm, clock, store = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2), version=0))
    rm.append("t", 0, _batch(), 1)
    clock.advance(1500)
    rm.shrink_isrs()
    assert store.isr_writes == [(1,)]
    part = rm.partitions[("t", 0)]
    assert part.state.isr == (1,) and part.log.high_watermark == 1  # HW follows the smaller ISR
    part.log.update_config(part.log.config.__class__(min_insync_replicas=2))
    with pytest.raises(KafkaError) as e:
        rm.append("t", 0, _batch(), -1)
    assert e.value.code == ErrorCode.not_enough_replicas
    rm.on_follower_fetch(part, 2, 1)  # caught up to the HW: back in the ISR
    assert store.isr_writes[-1] == (1, 2)


async def test_requests_to_a_follower_get_not_leader(tmp_path):
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 0, (2, 1)))
    with pytest.raises(KafkaError) as e:
        rm.append("t", 0, _batch(), 1)
    assert e.value.code == ErrorCode.not_leader_or_follower
    with pytest.raises(KafkaError) as e:
        rm.leader_partition("t", 0)
    assert e.value.code == ErrorCode.not_leader_or_follower


async def test_acks_all_survives_an_epoch_bump_while_staying_leader(tmp_path):
    """The controller bumps the leader epoch when it drops a dead follower from the ISR; the leader keeps
    leading, so a waiting acks=all produce completes (Kafka's DelayedProduce only fails on lost leadership)."""
    rm, clock, store = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2, 3), 1, 3, (1, 2, 3), version=0))
    part, result = rm.append("t", 0, _batch(), -1)
    done = asyncio.create_task(rm.wait_for_replication(part, result.last_offset, 5))
    await asyncio.sleep(0)
    rm.on_partition_state("t", 0, PartitionState((1, 2, 3), 1, 4, (1, 2), version=1))  # 3 died
    await asyncio.sleep(0)
    assert not done.done()
    rm.on_follower_fetch(part, 2, 1)
    assert await asyncio.wait_for(done, 1) == ErrorCode.none


async def test_acks_all_fails_when_leadership_was_lost_in_between(tmp_path):
    """Leader -> follower -> leader again before the waiter runs: the offset may now hold other records."""
    rm, clock, store = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 3, (1, 2), version=0))
    part, result = rm.append("t", 0, _batch(), -1)
    done = asyncio.create_task(rm.wait_for_replication(part, result.last_offset, 5))
    await asyncio.sleep(0)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 2, 4, (1, 2), version=1))
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 5, (1, 2), version=2))
    assert await asyncio.wait_for(done, 1) == ErrorCode.not_leader_or_follower


async def test_acks_all_waiter_judges_the_leadership_of_the_append_not_of_its_start(tmp_path):
    """Leadership lost and regained after the append but before the waiter first runs: it must not wait on."""
    rm, clock, store = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 3, (1, 2), version=0))
    part, result = rm.append("t", 0, _batch(), -1)
    at_append = part.leadership
    rm.on_partition_state("t", 0, PartitionState((1, 2), 2, 4, (1, 2), version=1))
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 5, (1, 2), version=2))
    assert await asyncio.wait_for(rm.wait_for_replication(part, result.last_offset, 5, at_append), 1) \
        == ErrorCode.not_leader_or_follower


async def test_the_follower_role_follows_the_leader_through_the_fetchers(tmp_path):
    fetchers = FakeFetchers()
    rm, _, _ = _manager(tmp_path, fetchers)
    rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 3, (2, 1), version=0))
    assert fetchers.following == {("t", 0): (2, 3)}
    rm.on_partition_state("t", 0, PartitionState((2, 1), 1, 4, (2, 1), version=1))  # leader now: stop fetching
    assert fetchers.following == {}
    rm.on_partition_state("t", 0, PartitionState((2, 1), -1, 5, (2,), version=2))  # offline: nobody to follow
    assert fetchers.following == {}
    rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 6, (2,), version=3))
    assert fetchers.following == {("t", 0): (2, 6)}
    rm.on_topic_deleted("t")
    assert fetchers.following == {}
    rm.on_brokers_changed()
    assert fetchers.brokers_changed == 1


async def test_fetcher_progress_moves_the_follower_high_watermark_within_its_log(tmp_path):
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 0, (2, 1), version=0))
    part = rm.partitions[("t", 0)]
    part.log.append_as_follower(_batch())
    ReplicaManager.on_follower_progress(part, 10)  # the leader is further: bounded by our log end
    assert part.log.high_watermark == 1
    ReplicaManager.on_follower_progress(part, 0)  # never backwards
    assert part.log.high_watermark == 1


async def test_fetcher_manager_runs_one_fetcher_per_leader_and_looks_the_leader_up(tmp_path):
    looked_up = []

    def endpoint(broker_id):
        looked_up.append(broker_id)
        return None  # not registered (yet): the fetcher backs off and asks again

    config = BrokerConfig(broker_id=1, replica_fetch_backoff_ms=10)
    fm = ReplicaFetcherManager(1, config, endpoint, ReplicaManager.on_follower_progress)
    rm, _, _ = _manager(tmp_path, fm)
    rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 0, (2, 1), version=0))
    rm.on_partition_state("t", 1, PartitionState((2, 1), 2, 0, (2, 1), version=0))
    try:
        assert [f.leader_id for f in fm.active()] == [2] and len(fm.active()[0].targets) == 2
        await asyncio.sleep(0.05)
        assert looked_up and set(looked_up) == {2}
        rm.on_partition_state("t", 0, PartitionState((2, 1), 1, 1, (2, 1), version=1))
        rm.on_partition_state("t", 1, PartitionState((2, 1), 1, 1, (2, 1), version=1))
        assert fm.active() == [] and fm.max_lag() == 0
    finally:
        fm.stop()


async def test_min_insync_replicas_is_capped_at_the_replication_factor(tmp_path):
    """Kafka's Partition.effectiveMinIsr: min.insync.replicas=2 on a partition of one replica takes acks=all writes
    (Kafka 3.9 does; ours answered NOT_ENOUGH_REPLICAS), and 3 on two replicas needs both, not three."""
    rm, _, _ = _manager(tmp_path)
    rm.on_partition_state("t", 0, PartitionState((1,), 1, 0, (1,)))
    part = rm.partitions[("t", 0)]
    part.log.update_config(part.log.config.__class__(min_insync_replicas=2))
    _, result = rm.append("t", 0, _batch(), -1)
    assert rm.replication_outcome(part, result.last_offset, part.leadership) == ErrorCode.none
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 1, (1, 2)))
    part.log.update_config(part.log.config.__class__(min_insync_replicas=3))
    rm.append("t", 0, _batch(), -1)
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 1, (1,), version=1))
    with pytest.raises(KafkaError) as refused:
        rm.append("t", 0, _batch(), -1)
    assert refused.value.code == ErrorCode.not_enough_replicas
