"""ISR shrink and expand with paused (SIGSTOP) followers; acks=all against min.insync.replicas."""

from __future__ import annotations

from kafkascope.local.cluster import wait_for
from tests.replication.helpers import (
    NOT_ENOUGH_REPLICAS,
    create_topic,
    list_offset,
    metadata,
    metadata_from,
    produce_raw,
    read_partitions,
    topic_name,
)

LAG_MS = 2000
# A paused broker must not lose its ZooKeeper session during the test: ISR changes here come from the leader.
PROPS = {"min.insync.replicas": 2, "replica.lag.time.max.ms": LAG_MS, "zookeeper.session.timeout.ms": 30000}


def _partition_led_by_controller(c, name):
    """RF=3 topic with a partition led by the controller (so that pausing followers never pauses the
    controller); leaders are spread over the brokers, so three partitions give one. (partition, leader,
    followers)."""
    ctrl = wait_for(lambda: (m := metadata(c)).controller_id >= 0 and m, 15, what="a controller").controller_id
    create_topic(c, name, 3)
    m = metadata(c, [name])
    p = next(p for p in range(3) if m.part(name, p).leader == ctrl)
    return p, ctrl, [b for b in m.part(name, p).replicas if b != ctrl]


def test_paused_follower_leaves_isr_and_rejoins(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("isr")
    p, ctrl, (f1, f2) = _partition_led_by_controller(c, topic)
    port = c.broker(ctrl).port
    assert produce_raw(port, topic, p, [b"a", b"b"])[0] == 0

    c.broker(f1).pause()
    try:
        shrunk = wait_for(lambda: (m := metadata_from(port, [topic]).part(topic, p)).isr == (ctrl, f2) and m,
                          LAG_MS / 1000 + 10, what=f"{f1} out of the ISR")
        # under-replicated: ISR shorter than the replica list; the paused broker is still registered
        assert len(shrunk.isr) < len(shrunk.replicas) and f1 in shrunk.replicas and not shrunk.offline
        # with 2 in sync, acks=all still succeeds (min.insync.replicas=2)
        err, base = produce_raw(port, topic, p, [b"c"])
        assert (err, base) == (0, 2)
    finally:
        c.broker(f1).resume()
    rejoined = wait_for(lambda: set((m := metadata_from(port, [topic]).part(topic, p)).isr) == {ctrl, f1, f2}
                        and m, 20, what=f"{f1} back in the ISR")
    assert rejoined.leader == ctrl
    # the rejoined follower caught up: every broker's view agrees and the data reads back
    assert [v for _, v in read_partitions(c.bootstrap, topic, 3)[p]] == [b"a", b"b", b"c"]


def test_two_replicas_paused_acks_all_not_enough_replicas(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("minisr")
    p, ctrl, followers = _partition_led_by_controller(c, topic)
    port = c.broker(ctrl).port
    assert produce_raw(port, topic, p, [b"a", b"b", b"c"]) == (0, 0)
    wait_for(lambda: list_offset(port, topic, p) == (0, 3), 10, what="high watermark at 3")

    for f in followers:
        c.broker(f).pause()
    try:
        wait_for(lambda: metadata_from(port, [topic]).part(topic, p).isr == (ctrl,), LAG_MS / 1000 + 10,
                 what="ISR shrunk to the leader alone")
        for _ in range(3):
            err, _ = produce_raw(port, topic, p, [b"lost-1", b"lost-2"], acks=-1, timeout_ms=3000)
            assert err == NOT_ENOUGH_REPLICAS
        # nothing appended: the high watermark did not move, and acks=1 (which ignores min.insync.replicas)
        # lands right after the committed records
        assert list_offset(port, topic, p) == (0, 3)
        assert produce_raw(port, topic, p, [b"d"], acks=1) == (0, 3)
    finally:
        for f in followers:
            c.broker(f).resume()
    wait_for(lambda: set(metadata_from(port, [topic]).part(topic, p).isr) == {ctrl, *followers}, 20,
             what="followers back in the ISR")
    assert produce_raw(port, topic, p, [b"e"], acks=-1) == (0, 4)
    values = [v for _, v in read_partitions(c.bootstrap, topic, 3)[p]]
    assert values == [b"a", b"b", b"c", b"d", b"e"]
