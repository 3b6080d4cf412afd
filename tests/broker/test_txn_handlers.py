"""The transaction APIs through the in-process harness (real dispatch, manual clock): FindCoordinator key_type 1,
InitProducerId with an id, AddPartitionsToTxn errors, KIP-890 produce verification, EndTxn, WriteTxnMarkers,
DescribeTransactions / ListTransactions, and the timeout abort driven by the broker's timer."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch
from tests.broker.harness import Harness
from tests.broker.test_inproc_handlers import FETCH, PRODUCE, create, fetch_body, values

FIND_COORDINATOR, INIT_PID, ADD_PARTITIONS, END_TXN, WRITE_MARKERS, DESCRIBE_TXNS, LIST_TXNS = 10, 22, 24, 26, 27, 65, 66


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path, transaction_state_log_num_partitions=2,
                 transaction_abort_timed_out_transaction_cleanup_interval_ms=1000) as harness:
        yield harness


@pytest.fixture
def coordinated(h):
    """A broker whose __transaction_state exists (a client's FindCoordinator creates it)."""
    h.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["any"]})
    return h


def init_pid(h, tid: str, timeout_ms: int = 60000):
    return h.request(INIT_PID, 4, {"transactional_id": tid, "transaction_timeout": timeout_ms,
                                   "producer_id": -1, "producer_epoch": -1})


def add_partitions(h, tid, pid, epoch, topics):
    resp = h.request(ADD_PARTITIONS, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                         "v3_and_below_producer_epoch": epoch,
                                         "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics]})
    return {(t.name, p.partition_index): p.partition_error_code
            for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}


def produce_txn(h, tid, topic, pid, epoch, seq, *vals):
    batch = build_batch([Record(timestamp=1, value=v) for v in vals], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, is_transactional=True)
    resp = h.request(PRODUCE, 9, {"transactional_id": tid, "acks": -1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    return resp.responses[0].partition_responses[0].error_code


def end_txn(h, tid, pid, epoch, commit):
    return h.request(END_TXN, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "committed": commit}).error_code


def describe(h, *tids):
    return h.request(DESCRIBE_TXNS, 0, {"transactional_ids": list(tids)}).transaction_states


def test_find_coordinator_for_a_transactional_id_creates_the_state_topic(h):
    resp = h.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["app"]})
    [c] = resp.coordinators
    assert (c.error_code, c.node_id) == (ErrorCode.none, h.broker.node_id)
    info = h.broker.metadata.topic("__transaction_state")
    assert info is not None and info.partitions == 2 and info.configs["cleanup.policy"] == "compact"


def test_transaction_round_trip_over_the_wire(coordinated):
    h = coordinated
    assert create(h, "t").error_code == ErrorCode.none
    first = init_pid(h, "app")
    assert (first.error_code, first.producer_epoch) == (ErrorCode.none, 0)
    pid = first.producer_id
    assert init_pid(h, "app").producer_epoch == 1  # nothing ongoing: a plain epoch bump
    # KIP-890 part 1: a transactional batch to a partition not in the transaction is refused.
    assert produce_txn(h, "app", "t", pid, 1, 0, b"early") == ErrorCode.invalid_txn_state
    assert add_partitions(h, "app", pid, 1, [("t", [0]), ("missing", [0])]) == {
        ("t", 0): ErrorCode.operation_not_attempted, ("missing", 0): ErrorCode.unknown_topic_or_partition}
    assert add_partitions(h, "app", pid, 0, [("t", [0])]) == {("t", 0): ErrorCode.producer_fenced}
    assert add_partitions(h, "app", pid, 1, [("t", [0])]) == {("t", 0): ErrorCode.none}
    assert produce_txn(h, "app", "t", pid, 1, 0, b"v1", b"v2") == ErrorCode.none
    [state] = describe(h, "app")
    assert (state.transaction_state, state.producer_epoch, [(t.topic, t.partitions) for t in state.topics]) == \
        ("Ongoing", 1, [("t", (0,))])
    listed = h.request(LIST_TXNS, 1, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [],
                                      "duration_filter": -1})
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [("app", "Ongoing")]
    assert listed.unknown_state_filters == ("Bogus",)
    body = fetch_body("t", 0)
    body["isolation_level"] = 1
    assert h.request(FETCH, 12, body).responses[0].partitions[0].records in (None, b"")
    assert end_txn(h, "app", pid, 1, True) == ErrorCode.none
    h.settle()  # markers, then CompleteCommit
    assert describe(h, "app")[0].transaction_state == "CompleteCommit"
    part = h.request(FETCH, 12, body).responses[0].partitions[0]
    assert [v for _, v in values(part.records)][:2] == [b"v1", b"v2"] and part.last_stable_offset == 3
    assert describe(h, "nobody")[0].error_code == ErrorCode.transactional_id_not_found


def test_write_txn_markers_from_another_coordinator(coordinated):
    h = coordinated
    assert create(h, "m").error_code == ErrorCode.none
    plog = h.broker.replicas.leader_log("m", 0)
    plog.append_as_leader(build_batch([Record(timestamp=1, value=b"x")], producer_id=77, producer_epoch=0,
                                      base_sequence=0, is_transactional=True), 0)
    resp = h.request(WRITE_MARKERS, 1, {"markers": [{"producer_id": 77, "producer_epoch": 0,
                                                     "transaction_result": False, "coordinator_epoch": 3,
                                                     "topics": [{"name": "m", "partition_indexes": [0, 5]}]}]})
    [marker] = resp.markers
    assert [(p.partition_index, p.error_code) for p in marker.topics[0].partitions] == [
        (0, ErrorCode.none), (5, ErrorCode.unknown_topic_or_partition)]
    assert plog.last_stable_offset == 2
    assert [(a.producer_id, a.first_offset) for a in plog.aborted_transactions(0, 2)] == [(77, 0)]


def test_the_broker_timer_aborts_an_expired_transaction(coordinated):
    h = coordinated
    assert create(h, "slow").error_code == ErrorCode.none
    init = init_pid(h, "slow-app", timeout_ms=2000)
    pid = init.producer_id
    assert add_partitions(h, "slow-app", pid, 0, [("slow", [0])]) == {("slow", 0): ErrorCode.none}
    assert produce_txn(h, "slow-app", "slow", pid, 0, 0, b"never") == ErrorCode.none
    assert h.broker.replicas.leader_log("slow", 0).last_stable_offset == 0
    h.advance(3500)  # past the timeout, then the next abort check (every 1000 ms)
    [state] = describe(h, "slow-app")
    assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", 1)
    assert h.broker.replicas.leader_log("slow", 0).last_stable_offset == 2
    assert end_txn(h, "slow-app", pid, 0, True) == ErrorCode.producer_fenced


def test_invalid_timeout_and_concurrent_init(coordinated):
    h = coordinated
    assert init_pid(h, "x", timeout_ms=900_001).error_code == ErrorCode.invalid_transaction_timeout
    assert create(h, "c").error_code == ErrorCode.none
    first = init_pid(h, "x")
    assert add_partitions(h, "x", first.producer_id, 0, [("c", [0])]) == {("c", 0): ErrorCode.none}
    # A second producer while the first one's transaction is open: it is aborted; retry once done.
    assert init_pid(h, "x").error_code == ErrorCode.concurrent_transactions
    h.settle()
    again = init_pid(h, "x")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (ErrorCode.none, first.producer_id, 2)


def txn_offset_commit(h, tid, pid, epoch, group, topic, offset):
    resp = h.request(28, 3, {"transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
                             "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
                                 {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                                 "committed_leader_epoch": -1,
                                                                 "committed_metadata": ""}]}]})
    return resp.topics[0].partitions[0].error_code


def committed_offset(h, group, topic):
    from tests.broker.test_inproc_groups import OFFSET_FETCH
    resp = h.request(OFFSET_FETCH, 8, {"require_stable": False, "groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1,
         "topics": [{"name": topic, "partition_indexes": [0]}]}]})
    return resp.groups[0].topics[0].partitions[0].committed_offset


def test_txn_offsets_survive_a_restart_and_count_only_at_commit(tmp_path):
    props = {"transaction_state_log_num_partitions": 2}
    with Harness(tmp_path, **props) as h:
        h.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["eos"]})
        assert create(h, "in").error_code == ErrorCode.none
        init = init_pid(h, "eos")
        pid = init.producer_id
        add = h.request(25, 3, {"transactional_id": "eos", "producer_id": pid, "producer_epoch": 0, "group_id": "g"})
        assert add.error_code == ErrorCode.none
        assert txn_offset_commit(h, "eos", pid, 0, "g", "in", 42) == ErrorCode.none
        assert committed_offset(h, "g", "in") == -1  # pending: not visible
        # In the log already, as a transactional batch of the producer in the group's offsets partition.
        assert h.broker.replicas.leader_log("__consumer_offsets", 0).producer_state.ongoing() == {pid: 0}
    with Harness(tmp_path, **props) as h:  # restart: the offsets come back pending, the transaction Ongoing
        h.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["eos"]})
        assert committed_offset(h, "g", "in") == -1
        assert describe(h, "eos")[0].transaction_state == "Ongoing"
        assert end_txn(h, "eos", pid, 0, True) == ErrorCode.none
        h.settle()
        assert committed_offset(h, "g", "in") == 42
        assert init_pid(h, "eos").producer_epoch == 1
        assert end_txn(h, "eos", pid, 1, False) == ErrorCode.invalid_txn_state  # nothing added: no transaction
        h.request(25, 3, {"transactional_id": "eos", "producer_id": pid, "producer_epoch": 1, "group_id": "g"})
        assert txn_offset_commit(h, "eos", pid, 1, "g", "in", 50) == ErrorCode.none
        assert end_txn(h, "eos", pid, 1, False) == ErrorCode.none
        h.settle()
        assert committed_offset(h, "g", "in") == 42  # aborted: never visible
    with Harness(tmp_path, **props) as h:  # and the log, read again, agrees
        assert committed_offset(h, "g", "in") == 42


def test_txn_offset_commit_checks_the_group_member_kip_447(coordinated):
    from tests.broker.test_inproc_groups import INITIAL_DELAY_MS, join, known_member, sync

    h = coordinated
    assert create(h, "t").error_code == ErrorCode.none
    member = known_member(h.client)
    joined = join(h.client, member)
    h.advance(INITIAL_DELAY_MS)
    assert joined.result().generation_id == 1
    assert sync(h.client, 1, member, {member: b""}).result().error_code == ErrorCode.none
    pid = init_pid(h, "k447").producer_id

    def commit(generation: int, member_id: str) -> ErrorCode:
        resp = h.request(28, 3, {"transactional_id": "k447", "group_id": "g", "producer_id": pid,
                                 "producer_epoch": 0, "generation_id": generation, "member_id": member_id,
                                 "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                                     {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                      "committed_metadata": ""}]}]})
        return resp.topics[0].partitions[0].error_code

    assert commit(1, "zombie") == ErrorCode.unknown_member_id
    assert commit(0, member) == ErrorCode.illegal_generation
    assert commit(1, member) == ErrorCode.none
    assert commit(-1, "") == ErrorCode.none  # no group metadata: not checked (before KIP-447)
