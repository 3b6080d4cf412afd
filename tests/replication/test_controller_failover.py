"""Controller death: another broker takes over within the ZooKeeper session timeout; a restarted broker
catches up and gets its preferred leadership back through auto rebalancing."""

from __future__ import annotations

import json
import time

from kafkascope.local.cluster import wait_for
from tests.replication.helpers import (
    create_topic,
    metadata,
    produce_to_leader,
    read_partitions,
    topic_name,
    wait_healthy,
)

SESSION_MS = 6000
# ZooKeeper expires sessions on its tick (500 ms in the launcher); the watch and the election follow at once.
SLACK_S = 1.5


def _zk_controller(zk) -> tuple[int, int]:
    """(/controller brokerid, /controller_epoch)."""
    data, _ = zk.get("/controller")
    epoch, _ = zk.get("/controller_epoch")
    return json.loads(data)["brokerid"], int(epoch)


def test_controller_kill_new_controller_within_session_timeout(cluster_factory):
    c = cluster_factory(brokers=3, **{"zookeeper.session.timeout.ms": SESSION_MS})
    topic = topic_name("ctrl")
    create_topic(c, topic, 3)
    zk = c.kazoo()
    old, old_epoch = _zk_controller(zk)
    assert metadata(c).controller_id == old  # Metadata agrees with ZooKeeper
    led_by_old = [p for p in range(3) if metadata(c, [topic]).part(topic, p).leader == old]
    assert led_by_old

    killed = time.monotonic()
    c.broker(old).kill()

    def new_controller():
        cid, epoch = _zk_controller(zk)
        return cid != old and (cid, epoch)
    new, new_epoch = wait_for(new_controller, SESSION_MS / 1000 + 10, 0.02, what="a new /controller")
    elapsed = time.monotonic() - killed
    assert elapsed < SESSION_MS / 1000 + SLACK_S, f"controller failover took {elapsed:.2f}s"
    assert new != old and new_epoch == old_epoch + 1
    # every surviving broker reports the new controller in Metadata
    for b in c.broker_ids:
        if b != old:
            wait_for(lambda: metadata(c, exclude=(old,)).controller_id == new, 5, what="Metadata controller_id")
    # the new controller does its job: partitions the dead broker led are led again, new topics get created
    for p in led_by_old:
        wait_for(lambda: metadata(c, [topic], exclude=(old,)).part(topic, p).leader not in (old, -1),  # noqa: B023
                 10, what=f"partition {p} re-led")
    other = topic_name("after")
    create_topic(c, other, 2, rf=2)
    assert all(old not in metadata(c, [other], exclude=(old,)).part(other, p).isr for p in range(2))


def test_restarted_broker_catches_up_and_regains_preferred_leadership(cluster_factory):
    c = cluster_factory(brokers=3, **{"auto.leader.rebalance.enable": "true",
                                      "leader.imbalance.check.interval.seconds": 2,
                                      "leader.imbalance.per.broker.percentage": 10,
                                      "zookeeper.session.timeout.ms": SESSION_MS})
    topic = topic_name("prefer")
    parts = 6
    create_topic(c, topic, parts)
    m = metadata(c, [topic])
    preferred = {p: m.part(topic, p).replicas[0] for p in range(parts)}
    assert all(m.part(topic, p).leader == preferred[p] for p in range(parts))
    victim = preferred[0]

    for p in range(parts):
        assert produce_to_leader(c, topic, p, [f"before-{p}".encode()]) == 0
    c.broker(victim).stop()  # controlled shutdown: leadership moves away at once
    wait_for(lambda: (mm := metadata(c, [topic], exclude=(victim,))) and all(
        mm.part(topic, p).leader not in (victim, -1) for p in range(parts)), 15, what="leaders moved")
    # records written while the broker is down: it must fetch them when it comes back
    for p in range(parts):
        assert produce_to_leader(c, topic, p, [f"while-down-{p}-{i}".encode() for i in range(50)]) == 1

    c.broker(victim).start()
    # back in the ISR of every partition it hosts (it caught up with the leaders)
    wait_healthy(c, topic, parts, 30)
    # and the rebalancer hands its preferred partitions back to it
    back = wait_for(lambda: (mm := metadata(c, [topic])) and all(
        mm.part(topic, p).leader == preferred[p] for p in range(parts)) and mm, 20, what="preferred leaders")
    assert all(back.part(topic, p).leader == victim for p in range(parts) if preferred[p] == victim)
    read = read_partitions(c.bootstrap, topic, parts)
    for p in range(parts):
        assert [v for _, v in read[p]] == [f"before-{p}".encode()] + [
            f"while-down-{p}-{i}".encode() for i in range(50)]
