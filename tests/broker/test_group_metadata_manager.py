"""GroupMetadataManager alone (no membership protocol): the group cache of the owned offsets partitions, offsets
committed and read back, the counts the GroupMetadataManager gauges read, and what leadership changes drop."""

import asyncio

from broker.config import BrokerConfig
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.coordinator.group_metadata_manager import OFFSET_METADATA_MAX_BYTES, GroupMetadataManager
from broker.coordinator.offsets_schema import OffsetCommitKey
from broker.errors import ErrorCode, KafkaError
from common.clock import ManualClock
from tests.broker.test_group_coordinator import MemoryOffsetsLog, async_test, form_group


def manager() -> tuple[GroupMetadataManager, MemoryOffsetsLog]:
    log = MemoryOffsetsLog()
    m = GroupMetadataManager(BrokerConfig(offsets_topic_num_partitions=4), ManualClock(), log)
    for p in range(4):
        m.load_partition(p)
    return m, log


def test_offsets_are_stored_in_the_group_partition_and_read_back():
    m, log = manager()
    g = m.add_group("g")
    results = m.store_offsets(g, [("t", 0, 5, 1, "meta"), ("t", 1, 7, -1, "x" * (OFFSET_METADATA_MAX_BYTES + 1))])
    assert results == {("t", 0): ErrorCode.none, ("t", 1): ErrorCode.offset_metadata_too_large}
    assert [k for k, _ in log.records()] == [OffsetCommitKey("g", "t", 0)]
    assert list(log.partitions) == [m.partition_for("g")]
    assert m.get_offsets("g", [("t", 0), ("t", 1)]) == {("t", 0): (5, 1, "meta"), ("t", 1): (-1, -1, "")}
    assert m.get_offsets("g", None) == {("t", 0): (5, 1, "meta")}
    assert m.num_offsets() == 1 and m.group_state_counts() == {"Empty": 1}


def test_unload_drops_the_partitions_groups_and_load_rebuilds_them():
    m, log = manager()
    m.store_offsets(m.add_group("g"), [("t", 0, 5, -1, "")])
    p = m.partition_for("g")
    assert m.unload_partition(p) == ["g"]
    assert not m.owns("g") and m.group("g") is None and m.num_offsets() == 0
    assert m.load_partition(p) == []
    assert m.owns("g") and m.get_offsets("g", None) == {("t", 0): (5, -1, "")}
    assert m.load_partition(p) == ["g"]  # taking it over again replaces the cached groups


def test_coordinator_reports_group_states_for_the_gauges():
    coord = GroupCoordinator(BrokerConfig(offsets_topic_num_partitions=4, group_initial_rebalance_delay_ms=0),
                             ManualClock(), MemoryOffsetsLog())
    coord.load()
    assert coord.group_state_counts() == {} and coord.num_offsets() == 0

    async def scenario():
        await form_group(coord, None, 2)
        coord.commit_offsets("solo", -1, "", None, [("t", 0, 1, -1, ""), ("t", 1, 1, -1, "")])

    async_test(scenario)()
    assert coord.group_state_counts() == {"Stable": 1, "Empty": 1}
    assert coord.num_offsets() == 2


def test_unloading_answers_waiting_members_not_coordinator():
    coord = GroupCoordinator(BrokerConfig(offsets_topic_num_partitions=4, group_initial_rebalance_delay_ms=10_000),
                             ManualClock(), MemoryOffsetsLog())
    coord.load()

    async def scenario():
        waiting = asyncio.ensure_future(coord.join_group("g", "", None, "c", "/h", 10_000, 30_000, "consumer",
                                                         [("range", b"")], False))
        await asyncio.sleep(0)
        coord.unload_partition(coord.partition_for("g"))
        assert (await waiting).error == ErrorCode.not_coordinator

    asyncio.run(asyncio.wait_for(scenario(), 5))


def test_unreadable_records_are_skipped_and_the_rest_of_the_partition_loads(caplog):
    """Records that do not decode (damaged, forged by an `__admin_client`, a keyless one) are skipped with one
    warning; before, the first one failed the load and none of the partition's groups came back."""
    m, log = manager()
    m.store_offsets(m.add_group("g"), [("t", 0, 5, -1, "")])
    p = m.partition_for("g")
    log.partitions[p][:0] = [(b"\x00\x01\xff\xff", b"x"),            # OffsetCommit key with a null group name
                             (b"\x00\x01\x00\x01\xff", b"x"),        # cut short
                             (None, b"keyless")]
    log.partitions[p].append((log.partitions[p][-1][0], b"\x00\x03garbage"))   # g's key, a damaged value
    log.partitions[p].append((b"\x00\x02\x00\x01h", b"\x00\x09"))    # a group metadata value of no version
    m.store_offsets(m.group("g"), [("t", 1, 7, -1, "")])
    with caplog.at_level("WARNING"):
        m.load_partition(p)
    assert m.get_offsets("g", None) == {("t", 0): (5, -1, ""), ("t", 1): (7, -1, "")}
    assert [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()] == [
        f"__consumer_offsets-{p}: skipped 5 unreadable record(s) while loading (first: null in a non-nullable "
        "string)"]


def test_a_commit_the_offsets_log_refuses_is_answered_as_kafka_and_not_cached():
    """The append fails (a full disk: KAFKA_STORAGE_ERROR; the partition moved: NOT_LEADER_OR_FOLLOWER): Kafka's
    storeOffsets answers NOT_COORDINATOR, the consumer finds the coordinator again and retries; nothing is cached.
    Before, the error escaped the handler and closed the connection."""
    m, log = manager()
    g = m.add_group("g")

    def refuse(partition, records, topic_stats=True):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left")

    log.append = refuse
    results = m.store_offsets(g, [("t", 0, 5, -1, ""), ("t", 1, 7, -1, "x" * (OFFSET_METADATA_MAX_BYTES + 1))])
    assert results == {("t", 0): ErrorCode.not_coordinator, ("t", 1): ErrorCode.offset_metadata_too_large}
    assert m.get_offsets("g", None) == {}
