"""The transaction coordinator as pure logic: state machine, `__transaction_state` records, fencing, timeouts,
reload after a restart or a coordinator move (fake state log and marker writer, manual clock)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from broker.config import BrokerConfig
from broker.coordinator.transaction import log_schema
from broker.coordinator.transaction.coordinator import TransactionCoordinator
from broker.coordinator.transaction.metadata import TransactionMetadata, TxnState, TxnTransit
from broker.errors import ErrorCode, KafkaError
from common.clock import ManualClock


class FakeStateLog:
    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail: ErrorCode | None = None

    async def append(self, partition: int, key: bytes, value: bytes | None) -> None:
        if self.fail is not None:
            raise KafkaError(self.fail)
        self.records.setdefault(partition, []).append((key, value))

    def read(self, partition: int):
        return list(self.records.get(partition, []))


class FakeMarkers:
    def __init__(self) -> None:
        self.written: list[tuple[int, int, int, bool, frozenset]] = []
        self.gate: asyncio.Event | None = None

    async def write(self, producer_id, producer_epoch, coordinator_epoch, commit, partitions) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.written.append((producer_id, producer_epoch, coordinator_epoch, commit, frozenset(partitions)))


def make(num_partitions: int = 3, **props):
    cfg = BrokerConfig.from_properties({"log.dirs": "/tmp/unused", "transaction.state.log.num.partitions":
                                        str(num_partitions), **props})
    clock = ManualClock()
    state_log, markers = FakeStateLog(), FakeMarkers()
    pids = itertools.count(1000)
    tc = TransactionCoordinator(cfg, clock, state_log, markers, lambda: next(pids))
    for p in range(num_partitions):
        tc.load_partition(p, coordinator_epoch=4)
    return tc, clock, state_log, markers


def run(coro):
    return asyncio.run(coro)


def test_partition_for_is_kafkas_hash():
    tc, *_ = make(50)
    # abs("my-txn".hashCode()) % 50 as Java computes it: String.hashCode("my-txn") = -1061187895
    assert tc.partition_for("my-txn") == 1061187895 % 50 == 45
    assert make(7)[0].partition_for("my-txn") == 1061187895 % 7


def test_log_value_round_trips_v0_and_v1_and_empty_has_null_partitions():
    t = TxnTransit(7, 3, 2, 1, 60000, TxnState.ONGOING, frozenset({("a", 0), ("a", 2), ("b", 1)}), 10, 20)
    for version in (0, 1):
        back = log_schema.decode_value(log_schema.encode_value(t, version))
        assert (back.producer_id, back.producer_epoch, back.timeout_ms, back.state, back.partitions,
                back.start_ms, back.update_ms) == (7, 2, 60000, TxnState.ONGOING, t.partitions, 10, 20)
    assert log_schema.decode_value(log_schema.encode_value(t, 1)).last_producer_id == 3
    v0 = log_schema.encode_value(t, 0)
    # int16 version, int64 pid, int16 epoch, int32 timeout, int8 status, then the partitions array
    assert v0[:17] == b"\x00\x00" + (7).to_bytes(8, "big") + b"\x00\x02" + (60000).to_bytes(4, "big") + b"\x01"
    empty = TxnTransit(7, -1, 0, -1, 60000, TxnState.EMPTY, frozenset(), -1, 20)
    assert log_schema.encode_value(empty)[17:21] == b"\xff\xff\xff\xff"  # null TransactionPartitions
    assert log_schema.decode_key(log_schema.encode_key("tx-1")) == "tx-1"
    assert log_schema.encode_key("tx-1") == b"\x00\x00\x00\x04tx-1"


def test_invalid_transitions_are_refused():
    md = TransactionMetadata("t", 1, 0, 1000)
    with pytest.raises(KafkaError) as e:
        md.prepare_end(True, 0)
    assert e.value.code == ErrorCode.invalid_txn_state
    transit = md.prepare_add_partitions({("x", 0)}, 5)
    with pytest.raises(KafkaError) as e:
        md.prepare_add_partitions({("y", 0)}, 6)  # the first is still being written
    assert e.value.code == ErrorCode.concurrent_transactions
    md.complete(transit)
    assert (md.state, md.partitions, md.start_ms) == (TxnState.ONGOING, {("x", 0)}, 5)
    assert TxnState.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"


def test_commit_across_partitions_writes_markers_then_completes():
    tc, clock, state_log, markers = make()

    async def scenario():
        pid, epoch = await tc.init_producer_id("app", 60000)
        assert (pid, epoch) == (1000, 0)
        await tc.add_partitions("app", pid, epoch, {("t", 0), ("t", 1)})
        await tc.add_partitions("app", pid, epoch, {("t", 2)})
        await tc.end_txn("app", pid, epoch, commit=True)
        assert tc.describe("app").state == TxnState.PREPARE_COMMIT
        with pytest.raises(KafkaError) as e:
            await tc.add_partitions("app", pid, epoch, {("t", 0)})
        assert e.value.code == ErrorCode.concurrent_transactions
        await tc.idle()
        assert markers.written == [(1000, 0, 4, True, frozenset({("t", 0), ("t", 1), ("t", 2)}))]
        md = tc.describe("app")
        assert (md.state, md.partitions) == (TxnState.COMPLETE_COMMIT, set())
        await tc.end_txn("app", pid, epoch, commit=True)  # a retried EndTxn is fine
        with pytest.raises(KafkaError) as e:
            await tc.end_txn("app", pid, epoch, commit=False)
        assert e.value.code == ErrorCode.invalid_txn_state

    run(scenario())
    states = [log_schema.decode_value(v).state for _, v in state_log.records[tc.partition_for("app")]]
    assert states == [TxnState.EMPTY, TxnState.ONGOING, TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                      TxnState.COMPLETE_COMMIT]


def test_second_producer_fences_the_first_and_aborts_its_transaction():
    tc, clock, state_log, markers = make()

    async def scenario():
        pid, epoch = await tc.init_producer_id("app", 60000)
        await tc.add_partitions("app", pid, epoch, {("t", 0)})
        with pytest.raises(KafkaError) as e:
            await tc.init_producer_id("app", 60000)
        assert e.value.code == ErrorCode.concurrent_transactions
        await tc.idle()
        assert markers.written == [(pid, 1, 4, False, frozenset({("t", 0)}))]
        assert await tc.init_producer_id("app", 60000) == (pid, 2)
        for call in (tc.add_partitions("app", pid, epoch, {("t", 1)}), tc.end_txn("app", pid, epoch, True)):
            with pytest.raises(KafkaError) as e:
                await call
            assert e.value.code == ErrorCode.producer_fenced

    run(scenario())


def test_timeout_aborts_with_a_bumped_epoch_and_validates_the_timeout():
    tc, clock, state_log, markers = make(**{"transaction.max.timeout.ms": "5000"})

    async def scenario():
        with pytest.raises(KafkaError) as e:
            await tc.init_producer_id("app", 6000)
        assert e.value.code == ErrorCode.invalid_transaction_timeout
        pid, epoch = await tc.init_producer_id("app", 1000)
        await tc.add_partitions("app", pid, epoch, {("t", 0)})
        assert await tc.abort_timed_out() == 0
        clock.advance(1001)
        assert await tc.abort_timed_out() == 1
        await tc.idle()
        assert markers.written == [(pid, 1, 4, False, frozenset({("t", 0)}))]
        assert tc.describe("app").state == TxnState.COMPLETE_ABORT
        with pytest.raises(KafkaError) as e:
            await tc.end_txn("app", pid, epoch, True)
        assert e.value.code == ErrorCode.producer_fenced

    run(scenario())


def test_reload_resumes_a_prepared_commit_and_keeps_ongoing_ones():
    tc, clock, state_log, markers = make()

    async def scenario():
        markers.gate = asyncio.Event()  # markers never get written before the "crash"
        pid, epoch = await tc.init_producer_id("a", 60000)
        await tc.add_partitions("a", pid, epoch, {("t", 0)})
        await tc.end_txn("a", pid, epoch, commit=True)
        pid_b, epoch_b = await tc.init_producer_id("b", 60000)
        await tc.add_partitions("b", pid_b, epoch_b, {("t", 1)})
        # A new coordinator (a restart, or another broker) loads the same log.
        fresh_markers = FakeMarkers()
        other = TransactionCoordinator(tc._config, clock, state_log, fresh_markers, lambda: 5000)
        for p in range(3):
            other.load_partition(p, coordinator_epoch=5)
        await other.idle()
        assert fresh_markers.written == [(pid, 0, 5, True, frozenset({("t", 0)}))]
        assert other.describe("a").state == TxnState.COMPLETE_COMMIT
        b = other.describe("b")
        assert (b.state, b.partitions, b.producer_id) == (TxnState.ONGOING, {("t", 1)}, pid_b)
        for task in tc._tasks:
            task.cancel()

    run(scenario())


def test_ownership_errors_and_failed_writes():
    tc, clock, state_log, markers = make()
    tc.unload_partition(tc.partition_for("gone"))

    async def scenario():
        with pytest.raises(KafkaError) as e:
            await tc.init_producer_id("gone", 1000)
        assert e.value.code == ErrorCode.not_coordinator
        with pytest.raises(KafkaError) as e:
            await tc.add_partitions("nobody", 1, 0, {("t", 0)})
        assert e.value.code in (ErrorCode.invalid_producer_id_mapping, ErrorCode.not_coordinator)
        state_log.fail = ErrorCode.not_enough_replicas
        with pytest.raises(KafkaError) as e:
            await tc.init_producer_id("app", 1000)
        assert e.value.code == ErrorCode.coordinator_not_available
        state_log.fail = None
        assert await tc.init_producer_id("app", 1000) == (tc.describe("app").producer_id, 0)

    run(scenario())


def test_idle_ids_expire_with_a_tombstone():
    tc, clock, state_log, markers = make(**{"transactional.id.expiration.ms": "1000"})

    async def scenario():
        await tc.init_producer_id("app", 500)
        clock.advance(1000)
        assert await tc.remove_expired() == 1
        with pytest.raises(KafkaError) as e:
            tc.describe("app")
        assert e.value.code == ErrorCode.transactional_id_not_found

    run(scenario())
    assert state_log.records[tc.partition_for("app")][-1][1] is None


def test_list_filters_and_verify():
    tc, clock, *_ = make()

    async def scenario():
        pid, epoch = await tc.init_producer_id("x", 1000)
        await tc.init_producer_id("y", 1000)
        await tc.add_partitions("x", pid, epoch, {("t", 0)})
        assert [m.transactional_id for m in tc.list_transactions({"Ongoing"}, set())] == ["x"]
        assert {m.transactional_id for m in tc.list_transactions(set(), set())} == {"x", "y"}
        assert tc.list_transactions(set(), {pid}, min_duration_ms=10) == []
        clock.advance(10)
        assert [m.transactional_id for m in tc.list_transactions(set(), {pid}, min_duration_ms=10)] == ["x"]
        assert tc.verify_partitions("x", pid, epoch, {("t", 0)}) == ErrorCode.none
        assert tc.verify_partitions("x", pid, epoch, {("t", 1)}) == ErrorCode.invalid_txn_state
        assert tc.verify_partitions("x", pid, epoch + 1, {("t", 0)}) == ErrorCode.producer_fenced

    run(scenario())


def test_unreadable_state_records_are_skipped_on_load():
    """A keyless record, a key that is not UTF-8 and a cut-short value are skipped (one warning per partition);
    the transactional ids around them load. Before, the keyless record and the bad UTF-8 failed the load."""
    async def scenario():
        tc, clock, state_log, markers = make(num_partitions=1)
        pid, epoch = await tc.init_producer_id("a", 60000)
        state_log.records[0][:0] = [(None, b"x"), (b"\x00\x01\x00\x02\xff\xfe", b"x")]
        state_log.records[0].append((state_log.records[0][-1][0], b"\x00\x01"))   # "a", cut short
        pid_b, _ = await tc.init_producer_id("b", 60000)
        other = TransactionCoordinator(tc._config, clock, state_log, FakeMarkers(), lambda: 5000)
        other.load_partition(0, coordinator_epoch=5)
        assert other.describe("a").producer_id == pid and other.describe("b").producer_id == pid_b

    run(scenario())
