"""The broker's per-partition gauge producers at scale (issue 20), without servers: Log gauges' tags built once
per set of logs, the Partition gauges and ReplicaManager counts taken in one pass over the states with Kafka's
definitions, and partition states re-read only for topics whose metadata generation moved."""

from __future__ import annotations

import random
from types import SimpleNamespace

from broker.controller.state import PartitionState
from broker.metrics.logs import LOG_GAUGES, LOG_STEP, LogColumns, define_log_gauges
from broker.metrics.replicas import (
    PARTITION_GAUGES,
    SNAPSHOT_STEP,
    BrokerReplicaView,
    PartitionStats,
    ReplicaGauges,
    is_at_min_isr,
    is_under_min_isr,
    is_under_replicated,
    take_snapshot,
    take_snapshot_steps,
)
from common.clock import ManualClock
from common.steps import run_counting
from exporter.registry import MetricName, Registry


def fake_log(topic: str, p: int, leo: int = 0) -> SimpleNamespace:
    return SimpleNamespace(topic=topic, partition=p, size_bytes=leo * 10, log_end_offset=leo, log_start_offset=0,
                           segment_count=1, high_watermark=leo, last_stable_offset=leo)


def test_log_tags_are_one_tuple_while_the_logs_are_the_same_and_values_are_read_afresh():
    logs = [fake_log("t", p, leo=p) for p in range(5)]
    reg = Registry(ManualClock())
    define_log_gauges(reg, lambda: list(logs))
    end = reg.get(MetricName("kafka.log", "Log", "LogEndOffset"))
    first = end.fn()
    assert list(first) == [((("topic", "t"), ("partition", str(p))), p) for p in range(5)]
    logs[2].log_end_offset = 99
    second = end.fn()
    assert second.tags is first.tags and second.values == [0, 1, 99, 3, 4]
    size = reg.get(MetricName("kafka.log", "Log", "Size")).fn()
    assert size.tags is first.tags and size.values == [0, 10, 20, 30, 40]
    assert {n for n, _ in LOG_GAUGES} == {"Size", "LogEndOffset", "LogStartOffset", "NumLogSegments"}


def test_log_tags_follow_a_new_removed_or_reordered_log():
    logs = [fake_log("t", p) for p in range(3)]
    cols = LogColumns(lambda: list(logs))
    _, tags = cols.current()
    logs.append(fake_log("u", 0))
    _, added = cols.current()
    assert added is not tags and added[-1] == (("topic", "u"), ("partition", "0"))
    logs.reverse()
    _, reordered = cols.current()
    assert [dict(t)["partition"] for t in reordered] == ["0", "2", "1", "0"]
    logs[:] = [fake_log("t", 0)]  # same names, another log object: a deleted and re-created partition
    _, again = cols.current()
    assert again == ((("topic", "t"), ("partition", "0")),)


def random_states(rnd: random.Random, n: int) -> list[PartitionStats]:
    out = []
    for i in range(n):
        replicas = rnd.randint(1, 4)
        out.append(PartitionStats(f"t{i // 7}", i % 7, replicas, rnd.randint(0, replicas), rnd.randint(1, 4),
                                  rnd.random() < 0.9, rnd.random() < 0.5, rnd.random() < 0.8, rnd.random() < 0.7,
                                  rnd.choice((0, 0, 3))))
    return out


def test_snapshot_columns_and_counts_are_kafkas_definitions():
    rnd = random.Random(7)
    for _ in range(20):
        states = random_states(rnd, rnd.randint(0, 60))
        snap = take_snapshot(states, None, {})
        hosted = [s for s in states if s.hosted]
        assert snap.tags == tuple((("topic", s.topic), ("partition", str(s.partition))) for s in hosted)
        for name, fn in PARTITION_GAUGES:
            assert snap.columns[name] == [fn(s) for s in hosted], name
        c = snap.summary
        assert c.leaders == sum(s.is_local_leader for s in states)
        assert c.under_replicated == sum(map(is_under_replicated, states))
        assert c.under_min_isr == sum(map(is_under_min_isr, states))
        assert c.at_min_isr == sum(map(is_at_min_isr, states))
        assert c.offline == sum(not s.has_leader for s in states)
        assert c.not_preferred == sum(not s.preferred_is_leader for s in states)
        assert c.total == len(states)


def test_snapshot_keeps_the_tags_tuple_while_the_hosted_replicas_are_the_same():
    states = random_states(random.Random(3), 40)
    cache: dict = {}
    first = take_snapshot(states, None, cache)
    again = take_snapshot([PartitionStats(s.topic, s.partition, s.replicas, s.isr, s.min_isr, s.has_leader,
                                          s.is_local_leader, s.preferred_is_leader, s.hosted, 5) for s in states],
                          first, cache)
    assert again.tags is first.tags and again.columns["LastStableOffsetLag"] == [5] * len(first.tags)
    fewer = take_snapshot(states[1:] if states[0].hosted else states[2:], again, cache)
    assert fewer.tags is not first.tags


class FakeMetadata:
    """Counts partition_state reads; a topic's generation moves only when the test says so."""

    def __init__(self, states: dict[str, list[PartitionState]]) -> None:
        self.states = states
        self.generations = dict.fromkeys(states, 1)
        self.reads = 0
        self.controller_id = 1

    def topics(self) -> dict:
        return {t: SimpleNamespace(partitions=len(s)) for t, s in self.states.items()}

    def topic_generation(self, name: str) -> int:
        return self.generations.get(name, 0)

    def partition_state(self, topic: str, p: int) -> PartitionState | None:
        self.reads += 1
        states = self.states.get(topic)   # None for a topic deleted meanwhile, as MetadataStore
        return states[p] if states is not None and p < len(states) else None


def fake_broker(partitions: int) -> SimpleNamespace:
    states = {f"t{t}": [PartitionState(replicas=(1, 2, 3), leader=1 + p % 3, leader_epoch=0, isr=(1, 2, 3))
                        for p in range(partitions)] for t in range(3)}
    md = FakeMetadata(states)
    hosted = {(t, p): SimpleNamespace(log=fake_log(t, p, leo=4)) for t in states for p in range(partitions)}
    return SimpleNamespace(node_id=1, metadata=md, replicas=SimpleNamespace(partitions=hosted),
                           log_config=lambda name: SimpleNamespace(min_insync_replicas=2))


class CountingView:
    """A ReplicaView that counts its partition_states reads."""

    def __init__(self, view: BrokerReplicaView, reads: list[int]) -> None:
        self.view, self.reads = view, reads

    def partition_states(self):
        self.reads.append(1)
        return self.view.partition_states()

    def is_active_controller(self):
        return True

    def max_lag(self):
        return 0

    def reassigning_leaders(self):
        return 0


def test_states_are_read_again_only_for_topics_whose_generation_moved():
    b = fake_broker(10)
    view = BrokerReplicaView(b)
    first = list(view.partition_states())
    assert b.metadata.reads == 30 and len(first) == 30
    assert list(view.partition_states()) == first and b.metadata.reads == 30
    b.metadata.states["t1"][4] = PartitionState(replicas=(1, 2, 3), leader=1, leader_epoch=1, isr=(1,))
    b.metadata.generations["t1"] += 1
    moved = list(view.partition_states())
    assert b.metadata.reads == 40  # t1 alone
    assert [s for s in moved if (s.topic, s.partition) == ("t1", 4)][0].isr == 1


def test_a_replica_hosted_or_dropped_here_is_seen_without_a_generation_move():
    b = fake_broker(5)
    view = BrokerReplicaView(b)
    list(view.partition_states())
    del b.replicas.partitions[("t2", 3)]  # the replica manager applied a state the metadata cache already had
    states = {(s.topic, s.partition): s for s in view.partition_states()}
    assert not states[("t2", 3)].hosted and states[("t2", 0)].hosted


def test_lso_lag_is_read_afresh_on_the_local_leaders():
    b = fake_broker(3)
    view = BrokerReplicaView(b)
    assert all(s.lso_lag == 0 for s in view.partition_states())
    b.replicas.partitions[("t0", 0)].log.last_stable_offset = 1  # an open transaction from offset 1, HW 4
    b.replicas.partitions[("t0", 1)].log.last_stable_offset = 1  # led by broker 2: a follower reports 0
    lags = {(s.topic, s.partition): s.lso_lag for s in view.partition_states()}
    assert lags[("t0", 0)] == 3 and lags[("t0", 1)] == 0


def test_every_replication_gauge_reads_one_snapshot_per_refresh():
    b = fake_broker(10)
    reg = Registry(ManualClock())
    reads: list[int] = []
    view = BrokerReplicaView(b)

    g = ReplicaGauges(reg, SimpleNamespace(metadata=b.metadata), reg.clock.monotonic)
    g.set_view(CountingView(view, reads))
    values = {mn.name: (list(m.fn()) if m.kind == "gauge_family" else m.value) for mn, m in reg.items()
              if mn.domain in ("kafka.cluster", "kafka.controller") or mn.name == "LeaderCount"}
    assert len(reads) == 1
    assert values["LeaderCount"] == 12 and values["GlobalPartitionCount"] == 30
    assert len(values["UnderReplicated"]) == 30
    reg.clock.advance(600)
    assert reg.get(MetricName("kafka.server", "ReplicaManager", "LeaderCount")).value == 12 and len(reads) == 2


def test_a_stepped_snapshot_yields_every_snapshot_step_states_and_equals_the_whole():
    states = random_states(random.Random(11), 2 * SNAPSHOT_STEP + 7)
    n, snap = run_counting(take_snapshot_steps(iter(states), None, {}))
    whole = take_snapshot(states, None, {})
    assert n == 2
    assert (snap.states, snap.tags, snap.columns, snap.summary) == (states, whole.tags, whole.columns, whole.summary)


def test_a_read_of_the_registry_makes_the_snapshot_in_steps_and_the_gauges_read_that_one():
    b = fake_broker(SNAPSHOT_STEP)   # three topics: 3 x SNAPSHOT_STEP states
    reg = Registry(ManualClock())
    view = BrokerReplicaView(b)
    reads: list[int] = []

    g = ReplicaGauges(reg, SimpleNamespace(metadata=b.metadata), reg.clock.monotonic)
    g.set_view(CountingView(view, reads))
    assert sum(1 for _ in reg.read_steps()) >= 3 and len(reads) == 1
    under = reg.get(MetricName("kafka.cluster", "Partition", "UnderReplicated")).fn()
    assert len(under.values) == 3 * SNAPSHOT_STEP and len(reads) == 1   # the stepped one, not a second read
    assert sum(1 for _ in reg.read_steps()) == 0 and len(reads) == 1    # fresh for 0.5 s: nothing to do
    reg.clock.advance(600)   # ms
    list(reg.read_steps())
    assert len(reads) == 2


def test_partition_states_read_across_loop_turns_survive_a_topic_and_a_replica_going():
    """A stepped snapshot reads the states lazily: the metadata's live topic dict and the hosted replicas may
    change between two of them (a deleted topic, a replica moved away)."""
    b = fake_broker(5)
    live = {t: SimpleNamespace(partitions=5) for t in b.metadata.states}
    b.metadata.topics = lambda: live
    it = BrokerReplicaView(b).partition_states()
    got = [next(it) for _ in range(6)]   # t0 whole, t1 partition 0 (led here: its LSO lag was read)
    assert (got[-1].topic, got[-1].partition) == ("t1", 0)
    del live["t2"], b.metadata.states["t2"]
    del b.replicas.partitions[("t1", 3)]   # led here too, gone before its LSO lag is read
    rest = list(it)
    assert [(s.topic, s.partition) for s in rest] == [("t1", 1), ("t1", 2), ("t1", 4)]


def test_log_columns_are_made_in_steps_before_a_read_and_each_taken_once():
    logs = [fake_log("t", p, leo=p) for p in range(LOG_STEP + 3)]
    reg = Registry(ManualClock())
    define_log_gauges(reg, lambda: list(logs))
    assert sum(1 for _ in reg.read_steps()) == 2
    logs[0].log_end_offset = 77                # after the columns were made: this read shows the made one
    end = reg.get(MetricName("kafka.log", "Log", "LogEndOffset"))
    made = end.fn()
    assert made.values[:3] == [0, 1, 2] and len(made.values) == LOG_STEP + 3
    assert end.fn().values[0] == 77            # taken once: the next read is afresh
    size = reg.get(MetricName("kafka.log", "Log", "Size")).fn()
    assert size.tags is made.tags and size.values[:2] == [0, 10]


def test_a_read_that_outlasts_half_a_second_reads_the_snapshot_made_for_it():
    """A stepped scrape of 10,000 partitions on a busy loop can take longer than the snapshot's 0.5 s: its gauges
    must read the snapshot its before-read step made, not take a whole one in the middle of the read."""
    b = fake_broker(10)
    reg = Registry(ManualClock())
    view = BrokerReplicaView(b)
    reads: list[int] = []

    ReplicaGauges(reg, SimpleNamespace(metadata=b.metadata), reg.clock.monotonic).set_view(CountingView(view, reads))
    leaders = reg.get(MetricName("kafka.server", "ReplicaManager", "LeaderCount"))
    with reg.reading():
        list(reg.read_steps())
        reg.clock.advance(2_000)   # ms: the read goes on for two seconds
        assert leaders.value == 12 and len(reads) == 1
    assert leaders.value == 12 and len(reads) == 2   # outside a read: older than 0.5 s, read again
