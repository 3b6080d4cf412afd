"""OffsetDelete and DeleteGroups on KIP-848 consumer groups, as Kafka 4.1's OffsetMetadataManager.deleteOffsets and
GroupMetadataManager.deleteGroups answer them, over an in-memory `__consumer_offsets`: what is refused, what is
tombstoned, and that a reload of the log (a restart) does not bring deleted offsets or groups back."""

import uuid

from broker.config import BrokerConfig
from broker.coordinator.consumer.coordinator import HeartbeatRequest
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.errors import ErrorCode
from common.clock import ManualClock
from tests.broker.test_group_coordinator import MemoryOffsetsLog

TOPICS = {"t": (uuid.uuid4(), 2), "orders-1": (uuid.uuid4(), 1), "other": (uuid.uuid4(), 1)}
COUNTS = {name: n for name, (_, n) in TOPICS.items()}
OFFSETS = [("t", 0, 5, -1, ""), ("orders-1", 0, 6, -1, ""), ("other", 0, 7, -1, ""), ("gone", 0, 8, -1, "")]


def make(log, clock):
    coordinator = GroupCoordinator(BrokerConfig(offsets_topic_num_partitions=1), clock, log, lambda: TOPICS)
    coordinator.load()
    return coordinator


def join(coordinator, member, **subscription):
    req = HeartbeatRequest("g", member, 0, rebalance_timeout_ms=30_000, owned={},
                           **(subscription or {"subscribed_topic_names": ["t"]}))
    r = coordinator.consumer_group_heartbeat(req, COUNTS, 1)
    assert r.error == ErrorCode.none
    return r.member_epoch


def leave(coordinator, member):
    assert coordinator.consumer_group_heartbeat(HeartbeatRequest("g", member, -1), COUNTS, 1).error == ErrorCode.none


def test_offset_delete_refuses_subscribed_topics_and_deletes_the_rest():
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator = make(log, clock)
    epoch = join(coordinator, "A")                                  # by name: t
    join(coordinator, "B", subscribed_topic_regex="orders-.*")      # by regex: orders-1
    assert set(coordinator.commit_offsets("g", epoch, "A", None, OFFSETS).values()) == {ErrorCode.none}
    asked = [("t", 0), ("orders-1", 0), ("other", 0), ("gone", 0), ("other", 5)]
    error, results = coordinator.delete_offsets("g", asked)
    assert error == ErrorCode.none
    assert results == {("t", 0): ErrorCode.group_subscribed_to_topic,
                       ("orders-1", 0): ErrorCode.group_subscribed_to_topic,
                       ("other", 0): ErrorCode.none, ("gone", 0): ErrorCode.none,
                       ("other", 5): ErrorCode.none}                 # no offset there: answered, nothing written
    kept = {("t", 0): (5, -1, ""), ("orders-1", 0): (6, -1, "")}
    assert coordinator.fetch_offsets("g", None) == kept
    reloaded = make(log, clock)
    assert reloaded.fetch_offsets("g", None) == kept


def test_offset_delete_on_an_empty_consumer_group_deletes_everything_asked():
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator = make(log, clock)
    epoch = join(coordinator, "A")
    coordinator.commit_offsets("g", epoch, "A", None, OFFSETS)
    leave(coordinator, "A")
    error, results = coordinator.delete_offsets("g", [("t", 0), ("gone", 0)])
    assert (error, set(results.values())) == (ErrorCode.none, {ErrorCode.none})
    assert set(coordinator.fetch_offsets("g", None)) == {("orders-1", 0), ("other", 0)}
    assert coordinator.list_typed_groups() == [("g", "consumer", "Empty", "consumer")]   # the group stays
    assert coordinator.delete_offsets("nope", [("t", 0)]) == (ErrorCode.group_id_not_found, {})


def test_delete_groups_refuses_a_group_with_members_and_a_deleted_one_stays_deleted():
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator = make(log, clock)
    epoch = join(coordinator, "A")
    coordinator.commit_offsets("g", epoch, "A", None, OFFSETS)
    assert coordinator.delete_groups(["g"]) == {"g": ErrorCode.non_empty_group}
    assert coordinator.consumer.group("g") is not None
    leave(coordinator, "A")
    assert coordinator.delete_groups(["g", "g2"]) == {"g": ErrorCode.none, "g2": ErrorCode.group_id_not_found}
    assert coordinator.list_typed_groups() == [] and coordinator.fetch_offsets("g", None) == {}
    reloaded = make(log, clock)
    assert reloaded.list_typed_groups() == [] and reloaded.fetch_offsets("g", None) == {}


def test_a_converted_classic_group_does_not_come_back_after_deletion():
    """An empty classic group that once completed a rebalance wrote a GroupMetadata record; becoming a consumer
    group tombstones it (Kafka's maybeDeleteEmptyClassicGroup), so deleting the consumer group deletes it for good."""
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator = make(log, clock)
    classic = coordinator.group_manager.add_group("g")
    classic.protocol_type, classic.generation_id = "consumer", 3
    coordinator.group_manager.store_group(classic)
    assert make(log, clock).list_typed_groups() == [("g", "consumer", "Empty", "classic")]
    join(coordinator, "A")
    leave(coordinator, "A")
    assert coordinator.delete_groups(["g"]) == {"g": ErrorCode.none}
    assert make(log, clock).list_typed_groups() == []
