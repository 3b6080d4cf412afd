"""A coordinator answers a group write only once its records are in the offsets partition's ISR, as Kafka does
(classic SyncGroup: storeGroup's callback; ConsumerGroupHeartbeat: the CoordinatorRuntime's committed offset). With a
follower of the offsets partition paused, the answer waits until the leader drops it from the ISR, and when it comes
the group's records are below the high watermark: a coordinator failover cannot lose an assignment a member has."""

from __future__ import annotations

import uuid

from broker.coordinator.consumer.records import decode_key as decode_consumer_key
from broker.coordinator.group_metadata_manager import coordinator_partition
from broker.coordinator.offsets_schema import GroupMetadataKey, decode_group_metadata_value, decode_key
from kafkascope.local.cluster import wait_for
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import records as visible_records
from tests.replication.helpers import FIND_COORDINATOR, create_topic, metadata, topic_name

OFFSETS_PARTITIONS = 10   # the launcher's offsets.topic.num.partitions
LAG_MS = 2000             # the paused follower leaves the ISR 2-3 s after it stopped fetching
# The paused broker keeps its ZooKeeper session; the write's wait outlasts the ISR shrink (Kafka's default is 5 s).
PROPS = {"replica.lag.time.max.ms": LAG_MS, "zookeeper.session.timeout.ms": 30000, "offsets.commit.timeout.ms": 20000}
JOIN, SYNC, CONSUMER_HEARTBEAT = 11, 14, 68


def _group_on_controller_partition(c) -> tuple[str, str, int, int, int]:
    """Two group ids whose offsets partition the controller leads (pausing a follower never pauses the
    controller), that partition, its leader and one follower."""
    port = c.brokers[0].port
    with WireClient(port) as w:   # creates __consumer_offsets
        w.call(FIND_COORDINATOR, 3, {"key": "warm-up", "key_type": 0})
    ctrl = wait_for(lambda: (m := metadata(c)).controller_id >= 0 and m, 15, what="a controller").controller_id
    m = wait_for(lambda: (m := metadata(c, ["__consumer_offsets"])) and all(
        len(m.part("__consumer_offsets", p).isr) == 3 for p in range(OFFSETS_PARTITIONS)) and m, 30,
        what="__consumer_offsets with full ISRs")
    p = next(p for p in range(OFFSETS_PARTITIONS) if m.part("__consumer_offsets", p).leader == ctrl)
    groups = [g for g in (f"grp-{i}" for i in range(1000)) if coordinator_partition(g, OFFSETS_PARTITIONS) == p][:2]
    follower = next(b for b in m.part("__consumer_offsets", p).replicas if b != ctrl)
    return groups[0], groups[1], p, ctrl, follower


def _classic_generation_visible(port: int, group: str, p: int) -> int:
    """The generation of the group's latest GroupMetadata record below the high watermark (-1: none)."""
    generation = -1
    for r in visible_records(port, "__consumer_offsets", p):
        if r.value is not None and isinstance(k := decode_key(r.key), GroupMetadataKey) and k.group == group:
            generation = decode_group_metadata_value(r.value).generation
    return generation


def _consumer_group_records_visible(port: int, group: str, p: int) -> int:
    """How many records of a consumer-protocol group are below the high watermark."""
    count = 0
    for r in visible_records(port, "__consumer_offsets", p):
        key = decode_consumer_key(r.key)
        count += key is not None and key[1] == group
    return count


class _FollowerPaused:
    """The follower paused for one write: on leaving, it runs again and is back in the partition's ISR."""

    def __init__(self, c, p: int, follower: int) -> None:
        self.c, self.p, self.follower = c, p, follower

    def __enter__(self) -> None:
        self.c.broker(self.follower).pause()

    def __exit__(self, *exc: object) -> None:
        self.c.broker(self.follower).resume()
        wait_for(lambda: self.follower in metadata(self.c, ["__consumer_offsets"]).part("__consumer_offsets",
                                                                                        self.p).isr,
                 30, what="the follower back in the ISR")

    def left_isr(self) -> bool:
        """The leader dropped the follower (seen once the ISR change reaches the broker asked)."""
        return bool(wait_for(lambda: self.follower not in metadata(self.c, ["__consumer_offsets"]).part(
            "__consumer_offsets", self.p).isr, 10, what="the paused follower out of the ISR"))


def test_sync_group_and_consumer_heartbeat_wait_for_the_isr(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("gw")
    create_topic(c, topic, 1)
    classic, consumer, p, leader, follower = _group_on_controller_partition(c)
    port = c.broker(leader).port
    paused = _FollowerPaused(c, p, follower)
    with paused, WireClient(port, 30) as w:
        beat = w.call(CONSUMER_HEARTBEAT, 0, {
            "group_id": consumer, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30000, "subscribed_topic_names": [topic],
            "server_assignor": None, "topic_partitions": []})
        assert (beat.error_code, beat.member_epoch) == (0, 1), beat
        # Answered: the group's records are committed (before, the answer came at once and the records stayed
        # above the high watermark until the paused follower left the ISR).
        assert _consumer_group_records_visible(port, consumer, p) > 0
        assert paused.left_isr()   # what let the high watermark move
    with paused, WireClient(port, 30) as w:
        join = w.call(JOIN, 3, {
            "group_id": classic, "session_timeout": 30000, "rebalance_timeout": 30000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"x"}]})
        assert join.error_code == 0, join
        sync = w.call(SYNC, 3, {"group_id": classic, "generation_id": join.generation_id,
                                "member_id": join.member_id, "assignments": [
                                    {"member_id": join.member_id, "assignment": b"assigned"}]})
        assert (sync.error_code, bytes(sync.assignment)) == (0, b"assigned")
        assert _classic_generation_visible(port, classic, p) == join.generation_id
        assert paused.left_isr()
