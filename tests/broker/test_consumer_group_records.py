"""KIP-848 group records in `__consumer_offsets`: what is written as the group changes, that the lag monitor's
independent decoder of Kafka's schemas reads them, and that a coordinator loading the partition resumes the group
(members keep their ids, epochs and partitions)."""

import asyncio
import base64
import uuid

from broker.config import BrokerConfig
from broker.coordinator.consumer.coordinator import HeartbeatRequest
from broker.coordinator.consumer.records import decode_key
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.errors import ErrorCode, KafkaError
from common.clock import ManualClock
from lagmonitor import decode as lag
from tests.broker.test_group_coordinator import MemoryOffsetsLog

TOPICS = {"t": (uuid.uuid4(), 4)}
COUNTS = {name: n for name, (_, n) in TOPICS.items()}


def make(log=None, clock=None):
    config = BrokerConfig(offsets_topic_num_partitions=1)
    coordinator = GroupCoordinator(config, clock or ManualClock(), log or MemoryOffsetsLog(), lambda: TOPICS)
    coordinator.load()
    return coordinator, coordinator.consumer.coordinator.settings


def beat(coordinator, member, epoch, owned=None):
    req = HeartbeatRequest("g", member, epoch, owned=owned)
    if epoch == 0:
        req.rebalance_timeout_ms, req.subscribed_topic_names, req.owned = 30_000, ["t"], {}
    return coordinator.consumer_group_heartbeat(req, COUNTS, 1)


def settle(coordinator):
    """A and B heartbeat until both are stable, reporting what they were given."""
    owned = {"A": {}, "B": {}}
    epochs = {"A": 0, "B": 0}
    for _ in range(4):
        for m in ("A", "B"):
            r = beat(coordinator, m, epochs[m], owned[m] if epochs[m] else None)
            assert r.error == ErrorCode.none
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
    return owned, epochs


def test_records_decode_with_kafkas_schemas_and_tombstone_on_leave():
    log = MemoryOffsetsLog()
    coordinator, _ = make(log)
    owned, epochs = settle(coordinator)
    latest = {}
    for k, v in log.read(0):
        latest[k] = v
    decoded = [lag.decode_record(k, v) for k, v in latest.items() if v is not None]
    kinds = {type(d).__name__ for d in decoded}
    assert {"ConsumerGroupEpoch", "ConsumerGroupMember", "ConsumerGroupTargetEpoch", "ConsumerGroupTargetMember",
            "ConsumerGroupMemberAssignment"} <= kinds
    (epoch,) = [d for d in decoded if isinstance(d, lag.ConsumerGroupEpoch)]
    assert epoch.epoch == 2
    assigned = {d.member_id: d for d in decoded if isinstance(d, lag.ConsumerGroupMemberAssignment)}
    printed = base64.urlsafe_b64encode(TOPICS["t"][0].bytes).decode().rstrip("=")   # Uuid.toString()
    for m in ("A", "B"):
        assert (assigned[m].member_epoch, assigned[m].state) == (epochs[m], 0)          # STABLE
        assert dict(assigned[m].assigned) == {printed: tuple(sorted(owned[m]["t"]))}
    beat(coordinator, "B", -1)
    tombstoned = {decode_key(k) for k, v in log.read(0)[-4:] if v is None}
    assert {(5, "g", "B"), (7, "g", "B"), (8, "g", "B")} <= tombstoned


def test_a_new_coordinator_resumes_the_group_from_the_log():
    log = MemoryOffsetsLog()
    clock = ManualClock()
    first, settings = make(log, clock)
    owned, epochs = settle(first)
    assert first.commit_offsets("g", epochs["A"], "A", None, [("t", 0, 42, -1, "")]) == {("t", 0): ErrorCode.none}
    group_epoch = first.consumer.group("g").group_epoch

    second, _ = make(log, clock)     # a restart, or the offsets partition moving to another broker
    group = second.consumer.group("g")
    assert group is not None and group.group_epoch == group_epoch
    assert {m: group.members[m].member_epoch for m in ("A", "B")} == epochs
    for m in ("A", "B"):
        r = beat(second, m, epochs[m], owned[m])      # the members just carry on: same epoch, nothing moves
        assert (r.error, r.member_epoch) == (ErrorCode.none, epochs[m])
    assert second.consumer.group("g").group_epoch == group_epoch
    assert second.fetch_offsets("g", [("t", 0)]) == {("t", 0): (42, -1, "")}
    assert second.list_typed_groups() == [("g", "consumer", "Stable", "consumer")]


def test_deleted_group_stays_deleted_after_a_reload():
    log = MemoryOffsetsLog()
    clock = ManualClock()
    first, _ = make(log, clock)
    beat(first, "A", 0)
    beat(first, "A", -1)
    assert first.delete_groups(["g"]) == {"g": ErrorCode.none}
    second, _ = make(log, clock)
    assert second.consumer.group("g") is None and second.list_typed_groups() == []


def test_offsets_expire_for_unsubscribed_topics_and_then_the_empty_group_goes():
    log = MemoryOffsetsLog()
    clock = ManualClock()
    coordinator, _ = make(log, clock)
    _, epochs = settle(coordinator)
    offsets = [("t", 0, 5, -1, ""), ("gone", 0, 9, -1, "")]
    assert set(coordinator.commit_offsets("g", epochs["A"], "A", None, offsets).values()) == {ErrorCode.none}
    retention_ms = BrokerConfig().offsets_retention_minutes * 60_000
    clock.advance(retention_ms)
    for m in ("A", "B"):
        beat(coordinator, m, epochs[m])     # still alive
    coordinator.expire()
    assert coordinator.fetch_offsets("g", None) == {("t", 0): (5, -1, "")}   # "gone" is not subscribed
    beat(coordinator, "A", -1)
    beat(coordinator, "B", -1)
    coordinator.expire()    # empty now: the rest goes, commit time being old enough, and the group with it
    assert coordinator.consumer.group("g") is None and coordinator.list_typed_groups() == []
    reloaded, _ = make(log, clock)
    assert reloaded.list_typed_groups() == [] and reloaded.fetch_offsets("g", None) == {}


def test_damaged_records_leave_the_other_groups_loaded():
    """A consumer-group key that does not decode is skipped; a group whose records do not decode is left out
    with a warning. Before, either failed the whole partition's load. The other group loads as it was."""
    log = MemoryOffsetsLog()
    clock = ManualClock()
    first, _ = make(log, clock)
    settle(first)
    records = log.partitions[0]
    # group "h": g's records under another id, then h's member A damaged (a string cut short)
    copies = [(k.replace(b"\x00\x01g", b"\x00\x01h", 1), v) for k, v in records if decode_key(k) is not None]
    damaged = next(k for k, _ in copies if decode_key(k)[0] == 5)
    records[:0] = [(b"\x00\x03\x00", b"x")]                   # a group metadata key cut short
    records += copies + [(damaged, b"\x00\x00\x00\x05ab")]
    second, _ = make(log, clock)
    assert second.consumer.group("h") is None
    group = second.consumer.group("g")
    assert group is not None and set(group.members) == {"A", "B"}


def test_a_heartbeat_whose_records_cannot_be_written_is_answered_not_coordinator():
    """A full disk under `__consumer_offsets` (KAFKA_STORAGE_ERROR): NOT_COORDINATOR, as Kafka's
    GroupCoordinatorService answers a failed write; before, the error escaped the handler and closed the
    connection. Once the log takes writes again the member goes on."""
    log = MemoryOffsetsLog()
    coordinator, _ = make(log)
    real_append = log.append

    def full(partition, records, topic_stats=True):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")

    log.append = full
    assert beat(coordinator, "A", 0).error == ErrorCode.not_coordinator
    log.append = real_append
    r = beat(coordinator, "A", 0)
    assert r.error == ErrorCode.none and r.member_epoch > 0


def test_a_member_expired_while_the_log_is_full_is_written_by_the_next_write(caplog):
    """A session expiry whose records cannot be written is logged (no request waits on a timer), and the group's
    next write carries what it missed: the expired member's tombstones reach the log."""
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator, settings = make(log, clock)
    _, epochs = settle(coordinator)
    append = log.append

    def full(partition, records, topic_stats=True):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")

    log.append = full
    clock.advance(settings.session_timeout_ms - 1)
    beat(coordinator, "A", epochs["A"])      # A stays; B's session runs out
    clock.advance(2)
    coordinator.tick()
    assert "failed to write the records of consumer group g" in caplog.text
    assert [m.member_id for m in coordinator.consumer.describe("g").members] == ["A"]
    log.append = append
    assert beat(coordinator, "A", epochs["A"]).error == ErrorCode.none
    tombstoned = {decode_key(k) for k, v in log.read(0) if v is None}
    assert {(5, "g", "B"), (7, "g", "B"), (8, "g", "B")} <= tombstoned


def test_conversions_whose_records_cannot_be_written_leave_the_group_as_it_was():
    """An empty classic group becoming a consumer group (a ConsumerGroupHeartbeat) and an empty consumer group
    going back to classic (a JoinGroup, a DeleteGroups) write tombstones first: on a full disk the request gets
    the mapped error (NOT_COORDINATOR) and the group stays as it was. Before, the append failed after the group
    was moved and the error escaped the handler."""
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator, _ = make(log, clock)
    _, epochs = settle(coordinator)
    beat(coordinator, "A", -1)
    beat(coordinator, "B", -1)
    assert coordinator.consumer.group("g") is not None
    append = log.append

    def full(partition, records, topic_stats=True):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")

    log.append = full
    joined = asyncio.run(coordinator.join_group("g", "", None, "c", "/127.0.0.1", 10_000, 30_000, "consumer",
                                                [("range", b"")], False))
    assert joined.error == ErrorCode.not_coordinator
    assert coordinator.delete_groups(["g"]) == {"g": ErrorCode.not_coordinator}
    assert coordinator.consumer.group("g") is not None and coordinator.group_manager.group("g") is None
    log.append = append
    assert coordinator.delete_groups(["g"]) == {"g": ErrorCode.none}
    # Now an empty classic group that completed a rebalance once, turned into a consumer group by a heartbeat.
    classic = coordinator.group_manager.add_group("g")
    classic.generation_id, classic.protocol_type = 1, "consumer"
    assert coordinator.describe_group("g").state == "Empty"
    log.append = full
    assert beat(coordinator, "C", 0).error == ErrorCode.not_coordinator
    assert coordinator.consumer.group("g") is None and coordinator.describe_group("g").state == "Empty"
    log.append = append
    assert beat(coordinator, "C", 0).error == ErrorCode.none and coordinator.consumer.group("g") is not None


def test_a_heartbeat_whose_records_cannot_be_written_is_undone():
    """As Kafka's CoordinatorRuntime reverts a failed write: a join whose records cannot be written leaves no
    member behind (before, each failed join left one that no client heartbeats for, holding its target
    partitions until its session expired: a drill on a full disk stalled a consumer group that way), and the
    members keep the epochs and assignments the log holds."""
    log, clock = MemoryOffsetsLog(), ManualClock()
    coordinator, _ = make(log, clock)
    owned, epochs = settle(coordinator)
    before = coordinator.consumer.describe("g")
    append = log.append

    def full(partition, records, topic_stats=True):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")

    deadlines = {m.member_id: m.session_deadline_ms for m in coordinator.consumer.group("g").members.values()}
    clock.advance(1000)
    log.append = full
    assert beat(coordinator, "C", 0).error == ErrorCode.not_coordinator
    after = coordinator.consumer.describe("g")
    # Sessions run on: the revert does not refresh them (a silent member still expires when it would have).
    assert {m.member_id: m.session_deadline_ms for m in coordinator.consumer.group("g").members.values()} == deadlines
    assert [(m.member_id, m.member_epoch, m.assignment) for m in after.members] == \
        [(m.member_id, m.member_epoch, m.assignment) for m in before.members]
    assert after.group_epoch == before.group_epoch
    log.append = append
    assert beat(coordinator, "A", epochs["A"]).error == ErrorCode.none   # A goes on from its epoch
    joined = beat(coordinator, "C", 0)
    assert joined.error == ErrorCode.none and coordinator.consumer.describe("g").group_epoch == before.group_epoch + 1
