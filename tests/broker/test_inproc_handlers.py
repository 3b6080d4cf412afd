"""Request handlers through the in-process harness: a whole standalone broker, its real dispatch path, a manual
clock. Metadata, Produce/Fetch/ListOffsets, the Fetch long-poll, CreateTopics errors and bad frames."""

from __future__ import annotations

import struct

import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch, decode_records, iter_batches
from broker.metrics.topics import TopicMetrics
from common.clock import ManualClock
from exporter.registry import Registry
from tests.broker.harness import ConnectionClosed, Harness

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS, API_VERSIONS = 0, 1, 2, 3, 19, 18
DELETE_RECORDS = 21
EARLIEST, LATEST = -2, -1


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path, num_partitions=3) as harness:
        yield harness


def metadata(h: Harness, *names: str, auto: bool):
    return h.request(METADATA, 12, {"topics": [{"name": n, "topic_id": None} for n in names],
                                    "allow_auto_topic_creation": auto,
                                    "include_topic_authorized_operations": False})


def create(h: Harness, name: str, partitions: int = 1, version: int = 7):
    resp = h.request(CREATE_TOPICS, version, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": []}], "timeout": 5000, "validate_only": False})
    return resp.topics[0]


def produce(h: Harness, topic: str, *values: bytes, partition: int = 0, acks: int = -1):
    batch = build_batch([Record(timestamp=1, value=v) for v in values])
    resp = h.request(PRODUCE, 9, {"transactional_id": None, "acks": acks, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return resp.responses[0].partition_responses[0]


def fetch_body(topic: str, offset: int, max_wait_ms: int = 0, partition: int = 0) -> dict:
    return {"cluster_id": None, "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 8 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}


def values(records: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in a fetched record set."""
    view = memoryview(records)
    return [(r.offset, r.value) for pos, hdr in iter_batches(view) for r in decode_records(view[pos:pos + hdr.size])]


def list_offset(h: Harness, topic: str, timestamp: int, version: int = 7) -> int:
    resp = h.request(LIST_OFFSETS, version, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    part = resp.topics[0].partitions[0]
    assert part.error_code == ErrorCode.none
    return part.offset


# ---------------------------------------------------------------- Metadata

def test_metadata_auto_creates_with_the_default_partition_count(h):
    resp = metadata(h, "fresh", auto=True)
    [topic] = resp.topics
    assert (topic.name, topic.error_code) == ("fresh", ErrorCode.none)
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1, 2]  # num.partitions=3
    assert {p.leader_id for p in topic.partitions} == {h.broker.node_id}
    assert [b.node_id for b in resp.brokers] == [h.broker.node_id]
    assert h.broker.metadata.topic("fresh") is not None


def test_metadata_unknown_topic_is_an_error_and_stays_unknown(h):
    [topic] = metadata(h, "missing", auto=False).topics
    assert topic.error_code == ErrorCode.unknown_topic_or_partition and topic.partitions == ()
    assert h.broker.metadata.topic("missing") is None


# ---------------------------------------------------------------- Produce, Fetch, ListOffsets

def test_produce_then_fetch_round_trip_up_to_the_high_watermark(h):
    assert create(h, "rt").error_code == ErrorCode.none
    first = produce(h, "rt", b"a", b"b")
    second = produce(h, "rt", b"c")
    assert (first.error_code, first.base_offset, second.base_offset) == (ErrorCode.none, 0, 2)
    part = h.request(FETCH, 12, fetch_body("rt", 0)).responses[0].partitions[0]
    assert part.error_code == ErrorCode.none
    assert (part.high_watermark, part.log_start_offset) == (3, 0)
    assert values(part.records) == [(0, b"a"), (1, b"b"), (2, b"c")]
    later = h.request(FETCH, 12, fetch_body("rt", 2)).responses[0].partitions[0]
    assert values(later.records) == [(2, b"c")]


@pytest.mark.parametrize("version", [1, 7])
def test_list_offsets_earliest_and_latest(h, version):
    assert create(h, "lo").error_code == ErrorCode.none
    assert (list_offset(h, "lo", EARLIEST, version), list_offset(h, "lo", LATEST, version)) == (0, 0)
    produce(h, "lo", b"x", b"y", b"z")
    assert (list_offset(h, "lo", EARLIEST, version), list_offset(h, "lo", LATEST, version)) == (0, 3)


def test_fetch_long_poll_is_answered_once_max_wait_has_passed(h):
    assert create(h, "lp").error_code == ErrorCode.none
    produce(h, "lp", b"old")
    pending = h.send(FETCH, 12, fetch_body("lp", 1, max_wait_ms=500))  # caught up: parks in the purgatory
    assert not pending.done()
    assert h.broker.purgatory.delayed("Fetch") == 1
    h.advance(499)
    assert not pending.done()
    h.advance(1)
    part = pending.result().responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, values(part.records)) == (ErrorCode.none, 1, [])
    assert h.broker.purgatory.delayed("Fetch") == 0


def test_fetch_long_poll_is_answered_by_a_produce_before_max_wait(h):
    assert create(h, "wake").error_code == ErrorCode.none
    consumer = h.connect()
    pending = consumer.send(FETCH, 12, fetch_body("wake", 0, max_wait_ms=30_000))
    assert not pending.done()
    assert produce(h, "wake", b"new").error_code == ErrorCode.none  # on the default connection
    part = pending.result().responses[0].partitions[0]   # no clock movement needed
    assert values(part.records) == [(0, b"new")] and part.high_watermark == 1


# ---------------------------------------------------------------- CreateTopics

def test_create_topics_invalid_partitions_and_already_exists(h):
    ok = create(h, "ct", partitions=2)
    assert (ok.error_code, ok.num_partitions, ok.replication_factor) == (ErrorCode.none, 2, 1)
    again = create(h, "ct", partitions=2)
    assert again.error_code == ErrorCode.topic_already_exists and "already exists" in again.error_message
    zero = create(h, "ct-zero", partitions=0)
    assert zero.error_code == ErrorCode.invalid_partitions
    assert h.broker.metadata.topic("ct-zero") is None
    assert h.broker.metadata.topic("ct").partitions == 2  # the failed create changed nothing


# ---------------------------------------------------------------- bad input: answered as the socket path does

def test_unparseable_frame_closes_only_that_connection(h):
    bad = h.connect()
    bad.send_bytes(struct.pack(">ihhih", 2 + 2 + 4 + 2 + 7, METADATA, 12, 1, 5) + b"\xff" * 7)
    assert bad.closed and bad.responses() == []
    assert h.broker.server.connection_count == 1           # the default connection lives on
    assert h.broker.server.request_pool.used == 0          # the frame's memory was given back
    assert h.request(API_VERSIONS, 3, {}).error_code == ErrorCode.none


def test_a_client_looping_bad_frames_cannot_flood_the_log(h, caplog):
    """Each bad frame closes its connection; only the first 20 closes a minute are logged, then one line that
    counts the rest (a garbage loop wrote ~110 bytes of log per frame, without bound)."""
    frame = struct.pack(">ihhih", 2 + 2 + 4 + 2 + 7, METADATA, 12, 1, 5) + b"\xff" * 7
    with caplog.at_level("WARNING", logger="broker.server"):
        for _ in range(50):
            h.connect().send_bytes(frame)
        h.advance(60_000)
        h.connect().send_bytes(frame)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("closing connection")]
    assert len(lines) == 21 and lines[-1].endswith("(30 such closes not logged before this one)")
    assert h.request(API_VERSIONS, 3, {}).error_code == ErrorCode.none


def test_oversized_frame_is_refused_before_it_is_read(h):
    bad = h.connect()
    bad.send_bytes(struct.pack(">i", 200 * 1024 * 1024))
    assert bad.closed and h.broker.server.request_pool.used == 0


def test_unsupported_version_closes_and_a_pending_result_says_so(h):
    bad = h.connect()
    pending = bad.send(PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": []})
    assert pending.done()
    bad.send_bytes(struct.pack(">ihhih", 10, PRODUCE, 2, 2, -1))  # v2 is advertised for old clients, not served
    assert bad.closed
    with pytest.raises(ConnectionClosed):
        bad.send(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                "include_topic_authorized_operations": False}).result()


def test_api_versions_too_new_is_answered_with_a_v0_error_body(h):
    c = h.connect()
    c.send_bytes(struct.pack(">ihhih", 10, API_VERSIONS, 99, 77, -1))
    [frame] = c.responses()
    corr, error, count = struct.unpack_from(">ihi", frame, 4)
    assert (corr, error) == (77, ErrorCode.unsupported_version) and not c.closed
    assert len(frame) == 4 + 10 + 6 * count


def test_handlers_woken_together_send_before_either_request_is_recorded(tmp_path, monkeypatch):
    """Request metrics are recorded on the loop turn after the answer is sent, so the second of two fetches woken by
    one produce is not answered behind the first one's bookkeeping (one event loop sends them in turn)."""
    from broker.metrics.core import BrokerMetrics

    events: list[str] = []
    record = BrokerMetrics.request_done
    monkeypatch.setattr(BrokerMetrics, "request_done",
                        lambda self, s, timing: (events.append(f"recorded {timing.api_key}"), record(self, s, timing)))
    with Harness(tmp_path / "logs", hdr_log_dir=str(tmp_path / "hdr")) as h:
        assert h.broker.metrics is not None
        assert create(h, "two").error_code == ErrorCode.none
        consumers = [h.connect(), h.connect()]
        pending = [c.send(FETCH, 12, fetch_body("two", 0, max_wait_ms=30_000)) for c in consumers]
        for i, c in enumerate(consumers):
            previous = c._conn.on_write
            c._conn.on_write = lambda i=i, previous=previous: (events.append(f"sent {i}"), previous())
        events.clear()
        assert produce(h, "two", b"new", acks=1).error_code == ErrorCode.none
        assert all(p.done() for p in pending)
        fetch_events = [e for e in events if e in ("sent 0", "sent 1", f"recorded {FETCH}")]
        assert fetch_events[:2] in (["sent 0", "sent 1"], ["sent 1", "sent 0"]), events


def test_a_fetch_answered_inside_the_append_is_recorded_once_and_its_connection_goes_on(tmp_path, monkeypatch):
    """A parked Fetch completed inside the produce's append (Kafka's DelayedFetch) is written before the Produce
    handler returns, recorded once with its purgatory time, and the connection then serves its next request."""
    from broker.metrics.core import BrokerMetrics

    recorded = []
    record = BrokerMetrics.request_done
    monkeypatch.setattr(BrokerMetrics, "request_done",
                        lambda self, s, timing: (recorded.append((timing.api_key, timing.remote_s,
                                                                  timing.t1 <= timing.t2 <= timing.t3 <= timing.t4)),
                                                 record(self, s, timing)))
    with Harness(tmp_path / "logs", hdr_log_dir=str(tmp_path / "hdr")) as h:
        assert create(h, "early").error_code == ErrorCode.none
        consumer = h.connect()
        pending = consumer.send(FETCH, 12, fetch_body("early", 0, max_wait_ms=30_000))
        written: list[str] = []
        previous = consumer._conn.on_write
        consumer._conn.on_write = lambda: (written.append("fetch answer"), previous())
        recorded.clear()
        assert produce(h, "early", b"new", acks=1).error_code == ErrorCode.none
        assert written == ["fetch answer"]
        assert values(pending.result().responses[0].partitions[0].records) == [(0, b"new")]
        fetches = [r for r in recorded if r[0] == FETCH]
        assert len(fetches) == 1 and fetches[0][1] > 0 and fetches[0][2]
        again = consumer.send(FETCH, 12, fetch_body("early", 1))
        assert again.result().responses[0].partitions[0].high_watermark == 1
        assert len([r for r in recorded if r[0] == FETCH]) == 2


def test_clients_cannot_append_to_the_internal_topics(h):
    """Kafka's ReplicaManager refuses appends to __consumer_offsets and __transaction_state from every client but
    AdminUtils' `__admin_client`: otherwise a client could forge offset commits or transaction states (the
    coordinators load them) past the group ACLs."""
    h.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]})   # FindCoordinator makes __consumer_offsets
    batch = build_batch([Record(timestamp=1, key=b"\x00\x01forged", value=b"garbage")])
    body = {"transactional_id": None, "acks": -1, "timeout": 5000, "topic_data": [
        {"name": "__consumer_offsets", "partition_data": [{"index": 0, "records": batch}]}]}
    refused = h.request(PRODUCE, 9, body).responses[0].partition_responses[0]
    assert refused.error_code == ErrorCode.invalid_topic_exception
    assert refused.error_message == "Cannot append to internal topic __consumer_offsets"
    assert h.broker.replicas.leader_log("__consumer_offsets", 0).log_end_offset == 0
    admin = h.request(PRODUCE, 9, body, client_id="__admin_client").responses[0].partition_responses[0]
    assert (admin.error_code, admin.base_offset) == (ErrorCode.none, 0)
    # nor delete their records (ReplicaManager.deleteRecordsOnLocalLog), which would drop committed offsets
    deleted = h.request(DELETE_RECORDS, 2, {"timeout": 5000, "topics": [
        {"name": "__consumer_offsets", "partitions": [{"partition_index": 0, "offset": -1}]}]})
    assert deleted.topics[0].partitions[0].error_code == ErrorCode.invalid_topic_exception
    assert h.broker.replicas.leader_log("__consumer_offsets", 0).log_start_offset == 0


def test_a_refused_append_to_an_internal_topic_is_no_failed_produce():
    """Kafka refuses it before ReplicaManager.appendToLocalLog's try block: counted in TotalProduceRequestsPerSec,
    not in FailedProduceRequestsPerSec."""
    topics = TopicMetrics(Registry(ManualClock()))
    topics.produce_failed("__consumer_offsets", ErrorCode.invalid_topic_exception, 100)
    for stats in (topics.all_topics, topics.topic("__consumer_offsets")):
        assert (stats.total_produce.count, stats.failed_produce.count) == (1, 0)
