"""GroupCoordinator over an in-memory OffsetsLog, with a ManualClock; timers are driven with tick()."""

import asyncio
import functools
import struct

from broker.config import BrokerConfig
from broker.coordinator.group_coordinator import GroupCoordinator, java_string_hash
from broker.coordinator.offsets_schema import GroupMetadataKey, decode_group_metadata_value, decode_key
from broker.errors import ErrorCode, KafkaError
from common.clock import ManualClock


class MemoryOffsetsLog:
    def __init__(self) -> None:
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = {}
        # Set: `replicated` waits for it (the ISR's progress), as a coordinator write does on a real partition.
        self.replication: asyncio.Future[ErrorCode] | None = None

    async def replicated(self, partition):
        return ErrorCode.none if self.replication is None else await asyncio.shield(self.replication)

    def append(self, partition, records, topic_stats=True):
        self.partitions.setdefault(partition, []).extend(records)

    def read(self, partition):
        return list(self.partitions.get(partition, []))

    def records(self):
        return [(decode_key(k), v) for recs in self.partitions.values() for k, v in recs]


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


PROTOCOLS = [("range", subscription("t"))]


def make(**cfg):
    config = BrokerConfig(**{"offsets_topic_num_partitions": 4, "group_initial_rebalance_delay_ms": 0, **cfg})
    clock = ManualClock()
    log = MemoryOffsetsLog()
    coordinator = GroupCoordinator(config, clock, log)
    coordinator.load()  # coordinate every offsets partition
    return coordinator, clock, log


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(**fixtures):
        asyncio.run(asyncio.wait_for(fn(**fixtures), 5))
    return wrapper


def join(coord, member_id="", group="g", instance=None, protocols=PROTOCOLS, require=False, session=10_000):
    return asyncio.ensure_future(coord.join_group(group, member_id, instance, "client", "/127.0.0.1", session,
                                                  30_000, "consumer", protocols, require))


async def settle():
    for _ in range(5):
        await asyncio.sleep(0)


async def form_group(coord, clock, n):
    """Join n members and sync them; returns the join results (leader first)."""
    first = await join(coord)
    tasks = [join(coord) for _ in range(n - 1)]
    await settle()
    if n > 1:
        # The others' arrival rebalanced the group: the first member rejoins.
        assert coord.heartbeat("g", first.generation_id, first.member_id, None) == ErrorCode.rebalance_in_progress
        tasks.insert(0, join(coord, first.member_id))
    results = list(await asyncio.gather(*tasks)) if n > 1 else [first]
    leader = next(r for r in results if r.members)
    syncs = [asyncio.ensure_future(coord.sync_group("g", r.generation_id, r.member_id, None, None, None,
                                                    [(m[0], m[0].encode()) for m in leader.members]
                                                    if r is leader else []))
             for r in results]
    for s, r in zip(await asyncio.gather(*syncs), results, strict=True):
        assert s.error == ErrorCode.none and s.assignment == r.member_id.encode()
    return sorted(results, key=lambda r: not r.members)


def test_partition_for_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31   # Integer.MIN_VALUE: Utils.abs gives 0
    coord, _, _ = make()
    assert coord.partition_for("polygenelubricants") == 0
    assert coord.partition_for("hello") == 99162322 % 4
    assert java_string_hash("é€😀") == (((0xE9 * 31 + 0x20AC) * 31 + 0xD83D) * 31 + 0xDE00)


@async_test
async def test_three_members_join_sync_and_share_a_generation():
    coord, clock, log = make()
    results = await form_group(coord, clock, 3)
    assert {r.generation_id for r in results} == {2}
    leader = results[0]
    assert leader.leader_id == leader.member_id and len(leader.members) == 3
    assert all(r.leader_id == leader.member_id and r.protocol_name == "range" for r in results)
    desc = coord.describe_group("g")
    assert desc.state == "Stable" and desc.protocol == "range" and len(desc.members) == 3
    assert all(m.metadata == PROTOCOLS[0][1] for m in desc.members)
    stored = [decode_group_metadata_value(v) for k, v in log.records() if isinstance(k, GroupMetadataKey)]
    assert stored[-1].generation == 2 and len(stored[-1].members) == 3
    assert {m.assignment for m in stored[-1].members} == {r.member_id.encode() for r in results}
    for r in results:
        assert coord.heartbeat("g", 2, r.member_id, None) == ErrorCode.none
    assert coord.heartbeat("g", 1, results[1].member_id, None) == ErrorCode.illegal_generation


@async_test
async def test_initial_rebalance_delay_collects_members():
    coord, clock, _ = make(group_initial_rebalance_delay_ms=3000)
    a, b = join(coord), join(coord)
    await settle()
    assert not a.done()
    clock.advance(3000)
    coord.tick()
    # b arrived during the delay, so Kafka's InitialDelayedJoin waits one more delay.
    assert not a.done()
    clock.advance(3000)
    coord.tick()
    ra, rb = await asyncio.gather(a, b)
    assert ra.generation_id == rb.generation_id == 1
    assert sum(bool(r.members) for r in (ra, rb)) == 1


@async_test
async def test_leave_triggers_rebalance():
    coord, clock, _ = make()
    leader, follower = await form_group(coord, clock, 2)
    assert coord.leave_group("g", [(follower.member_id, None)]) == [ErrorCode.none]
    assert coord.describe_group("g").state == "PreparingRebalance"
    assert coord.heartbeat("g", 2, leader.member_id, None) == ErrorCode.rebalance_in_progress
    rejoined = await join(coord, leader.member_id)
    assert rejoined.generation_id == 3 and [m[0] for m in rejoined.members] == [leader.member_id]
    assert coord.leave_group("g", [("nobody", None)]) == [ErrorCode.unknown_member_id]
    assert coord.leave_group("missing", [("x", None)]) == [ErrorCode.unknown_member_id]


@async_test
async def test_session_timeout_removes_member():
    coord, clock, _ = make()
    leader, follower = await form_group(coord, clock, 2)
    clock.advance(6000)
    assert coord.heartbeat("g", 2, leader.member_id, None) == ErrorCode.none
    clock.advance(4000)
    coord.tick()
    desc = coord.describe_group("g")
    assert [m.member_id for m in desc.members] == [leader.member_id]
    assert desc.state == "PreparingRebalance"
    assert coord.heartbeat("g", 2, follower.member_id, None) == ErrorCode.unknown_member_id


@async_test
async def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    coord, clock, _ = make()
    leader, follower = await form_group(coord, clock, 2)
    rejoin = join(coord, leader.member_id, protocols=[("range", subscription("t", "u"))])
    await settle()
    assert not rejoin.done()
    clock.advance(9000)   # the follower keeps its session alive but never rejoins
    assert coord.heartbeat("g", 2, follower.member_id, None) == ErrorCode.rebalance_in_progress
    clock.advance(21_000)
    coord.tick()
    result = await rejoin
    assert result.generation_id == 3 and [m[0] for m in result.members] == [leader.member_id]


@async_test
async def test_member_id_required_flow():
    coord, clock, _ = make()
    first = await join(coord, require=True)
    assert first.error == ErrorCode.member_id_required and first.member_id.startswith("client-")
    result = await join(coord, first.member_id, require=True)
    assert result.error == ErrorCode.none and result.member_id == first.member_id and result.generation_id == 1
    # A pending member that never comes back expires after its session timeout.
    pending = await join(coord, require=True)
    assert pending.error == ErrorCode.member_id_required
    clock.advance(10_000)
    coord.tick()
    assert pending.member_id not in coord.group_manager.group("g").pending_members


@async_test
async def test_join_errors():
    coord, _, _ = make()
    assert (await join(coord, session=1000)).error == ErrorCode.invalid_session_timeout
    assert (await join(coord, "ghost")).error == ErrorCode.unknown_member_id
    assert (await join(coord, group="")).error == ErrorCode.invalid_group_id
    await join(coord)
    other = await join(coord, protocols=[("roundrobin", b"")])
    assert other.error == ErrorCode.inconsistent_group_protocol


@async_test
async def test_static_member_rejoin_keeps_generation_and_fences_old_id():
    coord, clock, log = make()
    a = await join(coord, instance="i-1")
    sync = await coord.sync_group("g", a.generation_id, a.member_id, "i-1", None, None, [(a.member_id, b"A")])
    assert sync.assignment == b"A"
    again = await join(coord, instance="i-1")
    assert again.error == ErrorCode.none and again.member_id != a.member_id
    assert again.generation_id == a.generation_id and coord.describe_group("g").state == "Stable"
    assert again.skip_assignment   # it is the leader: it may check the assignment but need not redo it
    assert coord.heartbeat("g", a.generation_id, a.member_id, "i-1") == ErrorCode.fenced_instance_id
    assert coord.heartbeat("g", again.generation_id, again.member_id, "i-1") == ErrorCode.none
    s2 = await coord.sync_group("g", again.generation_id, again.member_id, "i-1", None, None, [])
    assert s2.assignment == b"A"
    # Changed metadata forces a rebalance.
    changed = await join(coord, instance="i-1", protocols=[("range", subscription("t", "u"))])
    assert changed.generation_id == a.generation_id + 1


@async_test
async def test_a_static_rejoin_is_answered_once_replicated_and_undone_when_it_cannot_be_written():
    """Kafka's updateStaticMemberAndRebalance (Stable, same protocols): the new member id is answered from
    storeGroup's callback; a failed write puts the old member id back and answers the mapped error (before,
    the answer came at once, and a failed append escaped the handler)."""
    coord, clock, log = make()
    a = await join(coord, instance="i-1")
    await coord.sync_group("g", a.generation_id, a.member_id, "i-1", None, None, [(a.member_id, b"A")])
    log.replication = asyncio.get_running_loop().create_future()
    again = join(coord, instance="i-1")
    await settle()
    assert not again.done()
    log.replication.set_result(ErrorCode.none)
    b = await again
    assert (b.error, b.generation_id) == (ErrorCode.none, a.generation_id) and b.member_id != a.member_id
    log.replication = asyncio.get_running_loop().create_future()
    timed_out = join(coord, instance="i-1")
    await settle()
    log.replication.set_result(ErrorCode.request_timed_out)
    assert ((await timed_out).error, (await timed_out).member_id) == (ErrorCode.coordinator_not_available, "")
    assert coord.heartbeat("g", b.generation_id, b.member_id, "i-1") == ErrorCode.none   # b is back
    log.replication = None
    log.append = _disk_full
    full = await join(coord, instance="i-1")
    assert (full.error, full.generation_id) == (ErrorCode.not_coordinator, a.generation_id)
    assert coord.heartbeat("g", b.generation_id, b.member_id, "i-1") == ErrorCode.none
    assert [m.member_id for m in coord.describe_group("g").members] == [b.member_id]


@async_test
async def test_sync_errors():
    coord, clock, _ = make()
    leader, follower = await form_group(coord, clock, 2)
    assert (await coord.sync_group("g", 1, leader.member_id, None, None, None, [])).error \
        == ErrorCode.illegal_generation
    assert (await coord.sync_group("g", 2, "x", None, None, None, [])).error == ErrorCode.unknown_member_id
    assert (await coord.sync_group("g", 2, leader.member_id, None, "consumer", "roundrobin", [])).error \
        == ErrorCode.inconsistent_group_protocol
    rejoin = join(coord, leader.member_id, protocols=[("range", subscription("u"))])
    await settle()
    assert (await coord.sync_group("g", 2, follower.member_id, None, None, None, [])).error \
        == ErrorCode.rebalance_in_progress
    rejoin.cancel()


@async_test
async def test_follower_sync_waits_for_leader():
    coord, clock, _ = make()
    a = await join(coord)
    b_task = join(coord)
    await settle()
    a2, b = await asyncio.gather(join(coord, a.member_id), b_task)
    leader, follower = (a2, b) if a2.members else (b, a2)
    follower_sync = asyncio.ensure_future(coord.sync_group("g", 2, follower.member_id, None, None, None, []))
    await settle()
    assert not follower_sync.done()
    await coord.sync_group("g", 2, leader.member_id, None, None, None, [(follower.member_id, b"F")])
    assert (await follower_sync).assignment == b"F"


@async_test
async def test_assign_style_commit_and_fetch():
    coord, _, log = make()
    assert coord.commit_offsets("solo", -1, "", None, [("t", 0, 10, 3, None), ("t", 1, 20, -1, "meta")]) == {
        ("t", 0): ErrorCode.none, ("t", 1): ErrorCode.none}
    assert coord.fetch_offsets("solo", [("t", 0), ("t", 1), ("t", 2)]) == {
        ("t", 0): (10, 3, ""), ("t", 1): (20, -1, "meta"), ("t", 2): (-1, -1, "")}
    assert coord.fetch_offsets("solo", None) == {("t", 0): (10, 3, ""), ("t", 1): (20, -1, "meta")}
    assert coord.fetch_offsets("nobody", None) == {}
    assert coord.describe_group("solo").state == "Empty"
    assert coord.commit_offsets("other", 3, "m", None, [("t", 0, 1, -1, None)]) == {("t", 0): ErrorCode.illegal_generation}
    assert coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, "x" * 5000)]) == {
        ("t", 0): ErrorCode.offset_metadata_too_large}


@async_test
async def test_member_commits_are_checked():
    coord, clock, _ = make()
    leader, _ = await form_group(coord, clock, 2)
    assert coord.commit_offsets("g", 2, leader.member_id, None, [("t", 0, 5, 0, "")]) == {("t", 0): ErrorCode.none}
    assert coord.commit_offsets("g", 1, leader.member_id, None, [("t", 0, 5, 0, "")]) == {
        ("t", 0): ErrorCode.illegal_generation}
    assert coord.commit_offsets("g", 2, "x", None, [("t", 0, 5, 0, "")]) == {("t", 0): ErrorCode.unknown_member_id}
    assert coord.commit_offsets("g", -1, "", None, [("t", 0, 5, 0, "")]) == {("t", 0): ErrorCode.unknown_member_id}


@async_test
async def test_state_survives_load_into_a_fresh_coordinator():
    coord, clock, log = make()
    leader, follower = await form_group(coord, clock, 2)
    coord.commit_offsets("g", 2, leader.member_id, None, [("t", 0, 7, 1, "m")])
    coord.commit_offsets("solo", -1, "", None, [("t", 1, 9, -1, None)])
    coord.commit_offsets("solo", -1, "", None, [("t", 1, 11, -1, None)])
    fresh = GroupCoordinator(coord._config, clock, log)
    fresh.load()
    assert fresh.fetch_offsets("g", None) == {("t", 0): (7, 1, "m")}
    assert fresh.fetch_offsets("solo", None) == {("t", 1): (11, -1, "")}
    desc = fresh.describe_group("g")
    assert desc.state == "Empty" and desc.protocol_type == "consumer" and not desc.members
    assert sorted(fresh.list_groups()) == [("g", "consumer", "Empty"), ("solo", "", "Empty")]
    # The generation carries on from the stored one.
    rejoined = await join(fresh)
    assert rejoined.generation_id == 3


@async_test
async def test_offsets_of_empty_groups_expire():
    coord, clock, log = make(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader = (await form_group(coord, clock, 1))[0]
    coord.commit_offsets("g", 1, leader.member_id, None, [("t", 0, 7, 1, "")])
    clock.advance(120_000)   # older than retention, but the group is not empty
    coord.heartbeat("g", 1, leader.member_id, None)
    coord.tick()
    assert coord.fetch_offsets("g", None) == {("t", 0): (7, 1, "")}
    coord.leave_group("g", [(leader.member_id, None)])
    assert coord.describe_group("g").state == "Empty"
    clock.advance(59_000)
    coord.tick()
    assert coord.fetch_offsets("g", None)
    clock.advance(1000)
    coord.tick()
    assert coord.fetch_offsets("g", None) == {}
    assert coord.describe_group("g").state == "Dead" and coord.list_groups() == []
    tail = log.records()[-2:]
    assert all(v is None for _, v in tail) and isinstance(tail[-1][0], GroupMetadataKey)
    fresh = GroupCoordinator(coord._config, clock, log)
    fresh.load()
    assert fresh.list_groups() == []


@async_test
async def test_delete_groups():
    coord, clock, log = make()
    leader = (await form_group(coord, clock, 1))[0]
    coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    assert coord.delete_groups(["g", "solo", "nope"]) == {
        "g": ErrorCode.non_empty_group, "solo": ErrorCode.none, "nope": ErrorCode.group_id_not_found}
    assert coord.fetch_offsets("solo", None) == {}
    assert [g for g, *_ in coord.list_groups()] == ["g"]
    coord.leave_group("g", [(leader.member_id, None)])
    assert coord.delete_groups(["g"]) == {"g": ErrorCode.none}
    fresh = GroupCoordinator(coord._config, clock, log)
    fresh.load()
    assert fresh.list_groups() == []


def _tombstones(log, group):
    return [type(k).__name__ for k, v in log.records() if v is None and k.group == group]


@async_test
async def test_group_metadata_tombstone_only_after_generation_0():
    """Kafka's cleanupGroupMetadata writes the group's tombstone only when its generation is above 0."""
    coord, clock, log = make()
    coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None), ("t", 1, 2, -1, None)])
    assert coord.delete_groups(["solo"]) == {"solo": ErrorCode.none}
    assert _tombstones(log, "solo") == ["OffsetCommitKey", "OffsetCommitKey"]
    leader = (await form_group(coord, clock, 1))[0]
    coord.commit_offsets("g", 1, leader.member_id, None, [("t", 0, 5, -1, None)])
    coord.leave_group("g", [(leader.member_id, None)])
    assert coord.delete_groups(["g"]) == {"g": ErrorCode.none}
    assert _tombstones(log, "g") == ["OffsetCommitKey", "GroupMetadataKey"]


@async_test
async def test_expired_generation_0_group_gets_no_group_tombstone():
    coord, clock, log = make(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    clock.advance(61_000)
    coord.tick()
    assert coord.list_groups() == []
    assert _tombstones(log, "solo") == ["OffsetCommitKey"]


@async_test
async def test_delete_offsets():
    coord, clock, _ = make()
    leader = (await form_group(coord, clock, 1))[0]
    coord.commit_offsets("g", 1, leader.member_id, None, [("t", 0, 1, -1, ""), ("other", 0, 2, -1, "")])
    error, parts = coord.delete_offsets("g", [("t", 0), ("other", 0)])
    assert error == ErrorCode.none
    assert parts == {("t", 0): ErrorCode.group_subscribed_to_topic, ("other", 0): ErrorCode.none}
    assert coord.fetch_offsets("g", None) == {("t", 0): (1, -1, "")}
    assert coord.delete_offsets("nope", [("t", 0)]) == (ErrorCode.group_id_not_found, {})
    coord.leave_group("g", [(leader.member_id, None)])
    assert coord.delete_offsets("g", [("t", 0)]) == (ErrorCode.none, {("t", 0): ErrorCode.none})
    assert coord.describe_group("g").state == "Dead"   # empty and no offsets left


@async_test
async def test_list_groups_filters_by_state():
    coord, clock, _ = make()
    await form_group(coord, clock, 1)
    coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, None)])
    assert coord.list_groups(["stable"]) == [("g", "consumer", "Stable")]
    assert coord.list_groups(["Empty"]) == [("solo", "", "Empty")]


@async_test
async def test_run_drives_timers_and_close_answers_waiters():
    coord, clock, _ = make(group_initial_rebalance_delay_ms=3000)
    runner = asyncio.ensure_future(coord.run())
    waiting = join(coord)
    await settle()
    coord.close()
    assert (await waiting).error == ErrorCode.not_coordinator
    await runner


def _disk_full(partition, records, topic_stats=True):
    raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")


async def _two_joined(coord):
    """Two members joined at generation 1: (leader's join, the other's join, the other's waiting SyncGroup)."""
    first = await join(coord)
    second_join = join(coord)
    await settle()
    results = list(await asyncio.gather(join(coord, first.member_id), second_join))
    leader = next(r for r in results if r.members)
    other = next(r for r in results if r is not leader)
    waiting = asyncio.ensure_future(coord.sync_group("g", other.generation_id, other.member_id, None, None, None, []))
    await settle()
    return leader, other, waiting


@async_test
async def test_a_sync_whose_assignment_cannot_be_stored_fails_every_member_and_rebalances():
    """The leader's assignment does not reach the offsets log (a full disk): as Kafka's doSyncGroup, every member
    waiting in SyncGroup gets the mapped error (KAFKA_STORAGE_ERROR -> NOT_COORDINATOR) and the group prepares a
    rebalance. Before, the leader's handler failed (connection closed) and the others waited."""
    coord, clock, log = make()
    leader, other, waiting = await _two_joined(coord)
    log.append = _disk_full
    led = await coord.sync_group("g", leader.generation_id, leader.member_id, None, None, None,
                                 [(m[0], b"plan") for m in leader.members])
    assert (led.error, (await waiting).error) == (ErrorCode.not_coordinator, ErrorCode.not_coordinator)
    assert coord.describe_group("g").state == "PreparingRebalance"


async def _leader_syncs_while_replicating(coord, log, leader, plan=lambda member_id: b"plan"):
    """The leader's SyncGroup, left waiting while its record replicates (`log.replication`, to be set)."""
    log.replication = asyncio.get_running_loop().create_future()
    led = asyncio.ensure_future(coord.sync_group("g", leader.generation_id, leader.member_id, None, None, None,
                                                 [(m[0], plan(m[0])) for m in leader.members]))
    await settle()
    return led


@async_test
async def test_the_assignment_goes_out_once_its_record_is_replicated():
    """Kafka's doSyncGroup answers from storeGroup's callback: the group stays CompletingRebalance and every
    member waits until the GroupMetadata record is in the offsets partition's ISR."""
    coord, clock, log = make()
    leader, other, waiting = await _two_joined(coord)
    led = await _leader_syncs_while_replicating(coord, log, leader, str.encode)
    assert not led.done() and not waiting.done()
    assert coord.describe_group("g").state == "CompletingRebalance"
    log.replication.set_result(ErrorCode.none)
    assert (await led).assignment == leader.member_id.encode()
    assert (await waiting).assignment == other.member_id.encode()
    assert coord.describe_group("g").state == "Stable"


@async_test
async def test_an_assignment_whose_replication_fails_fails_every_member_and_rebalances():
    """The record was appended but never reached the ISR in offsets.commit.timeout.ms: storeGroup's mapping
    (REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE) to every waiting member, and a rebalance."""
    coord, clock, log = make()
    leader, other, waiting = await _two_joined(coord)
    led = await _leader_syncs_while_replicating(coord, log, leader)
    log.replication.set_result(ErrorCode.request_timed_out)
    assert ((await led).error, (await waiting).error) == (ErrorCode.coordinator_not_available,) * 2
    assert coord.describe_group("g").state == "PreparingRebalance"


@async_test
async def test_a_rebalance_while_the_assignment_replicates_is_left_alone():
    """A member joins before the record is replicated: the group is rebalancing again, the late callback does
    nothing (Kafka checks the state and generation in storeGroup's callback)."""
    coord, clock, log = make()
    leader, other, waiting = await _two_joined(coord)
    led = await _leader_syncs_while_replicating(coord, log, leader)
    third = join(coord)
    await settle()
    assert coord.describe_group("g").state == "PreparingRebalance"
    assert ((await led).error, (await waiting).error) == (ErrorCode.rebalance_in_progress,) * 2
    log.replication.set_result(ErrorCode.none)
    await settle()
    assert coord.describe_group("g").state == "PreparingRebalance"
    third.cancel()


@async_test
async def test_timers_go_on_when_the_offsets_log_cannot_be_written(caplog):
    """The last member's session expires and the group's empty generation cannot be written, then its offsets
    expire and their tombstones cannot be written: as Kafka (onCompleteJoin, cleanupGroupMetadata) a logged
    warning or error each. Before, the first raised out of tick(), which ended the coordinator's timer loop for
    every group."""
    coord, clock, log = make(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader = (await form_group(coord, clock, 1))[0]
    coord.commit_offsets("g", 1, leader.member_id, None, [("t", 0, 7, 1, "")])
    log.append = _disk_full
    clock.advance(10_001)
    coord.tick()
    assert coord.describe_group("g").state == "Empty"
    clock.advance(60_000)
    coord.tick()
    assert coord.fetch_offsets("g", None) == {} and coord.list_groups() == []
    assert "failed to write the empty group metadata of g" in caplog.text
    assert "failed to write 2 tombstones for group g" in caplog.text


@async_test
async def test_the_timer_loop_outlives_a_failing_tick(caplog):
    coord, clock, _ = make()
    failures = iter([RuntimeError("boom")])
    ticked = asyncio.Event()

    def tick():
        ticked.set()
        if (e := next(failures, None)) is not None:
            raise e

    coord.tick = tick
    runner = asyncio.ensure_future(coord.run())
    await ticked.wait()
    ticked.clear()
    coord._wakeup.set()   # a request changed the deadlines: the loop ticks again
    await ticked.wait()
    assert not runner.done() and "timers failed" in caplog.text
    coord.close()
    await runner
