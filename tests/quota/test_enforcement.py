"""Client quotas on the request path, in a whole in-process broker on a manual clock: the throttle time in the
answer, the muted connection, the empty fetch over quota, and no record lost."""

import pytest

from broker.errors import ErrorCode
from broker.quota.entity import DEFAULT, QuotaEntity
from tests.broker.harness import Harness, encode_request
from tests.broker.test_inproc_handlers import CREATE_TOPICS, PRODUCE, create, fetch_body, produce, values

WINDOW_MS = 10_000   # what Kafka's Rate takes as the window of a new sensor: (quota.window.num - 1) seconds


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path) as harness:
        yield harness


def _produce_body(topic: str, value: bytes) -> dict:
    from broker.log.records import Record, build_batch

    return {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch([Record(timestamp=1, value=value)])}]}]}


def _ms(throttle) -> int:
    """kio reads throttle_time_ms as a timedelta."""
    return round(throttle.total_seconds() * 1000)


def _kafka_throttle(observed: float, bound: float, window_ms: float = WINDOW_MS) -> int:
    return round((observed - bound) / bound * window_ms)


def test_without_quotas_nothing_is_recorded_or_throttled(h):
    create(h, "t")
    assert produce(h, "t", b"x" * 50_000).error_code == ErrorCode.none
    assert not h.broker.quotas.enabled
    assert all(list(m.sensors()) == [] for m in h.broker.quotas.managers.all())


def test_a_produce_over_its_quota_is_answered_then_the_connection_is_muted(h):
    create(h, "t")
    h.broker.quotas.apply(QuotaEntity(client_id="harness"), {"producer_byte_rate": 1000.0})
    body = _produce_body("t", b"x" * 20_000)
    size = len(encode_request(PRODUCE, 9, 1, body, "harness")) - 4     # the request as the broker reads it
    first = h.request(PRODUCE, 9, body)
    expected = _kafka_throttle(size / (WINDOW_MS / 1000), 1000.0)
    assert _ms(first.throttle_time) == expected > 0
    assert first.responses[0].partition_responses[0].error_code == ErrorCode.none   # appended all the same
    second = h.send(PRODUCE, 9, _produce_body("t", b"y"))
    h.advance(expected - 1)
    assert not second.done()            # the broker reads nothing from the muted connection
    other = h.connect().request(PRODUCE, 9, _produce_body("t", b"z"), client_id="another")
    assert _ms(other.throttle_time) == 0     # another client is not held back
    h.advance(1)
    assert second.done()
    again = _ms(second.result().throttle_time)
    assert again > 0    # still over: the rate falls only once the window grows past 10 s
    fetched = h.connect().request(1, 12, fetch_body("t", 0), client_id="reader").responses[0].partitions[0]
    assert [v[:1] for _, v in values(fetched.records)] == [b"x", b"z", b"y"]
    produce_manager = h.broker.quotas.managers.produce
    (sensors,) = [s for s in produce_manager.sensors() if s.tags == ("", "harness")]
    assert sensors.throttle.avg == (expected + again) / 2     # throttle-time: the average of the throttles
    assert produce_manager.queue_size == 1     # the second throttle's mute
    h.advance(again)
    assert produce_manager.queue_size == 0


def test_a_fetch_over_its_quota_answers_nothing_and_the_records_come_later(h):
    create(h, "t")
    for i in range(3):
        produce(h, "t", bytes([65 + i]) * 4000)
    h.broker.quotas.apply(QuotaEntity(user=DEFAULT, client_id=DEFAULT), {"consumer_byte_rate": 1000.0})

    def fetch(offset: int):
        body = fetch_body("t", offset)
        body["topics"][0]["partitions"][0]["partition_max_bytes"] = 4500    # one batch per fetch
        return h.request(1, 12, body)

    got = []
    for offset in (0, 1):
        resp = fetch(offset)
        assert _ms(resp.throttle_time) == 0
        got += values(resp.responses[0].partitions[0].records)
    third = fetch(2)
    assert _ms(third.throttle_time) > 0 and third.responses == ()     # over the quota: nothing, and not counted
    h.advance(30_000)
    got += values(fetch(2).responses[0].partitions[0].records)
    assert [(o, v[:1]) for o, v in got] == [(0, b"A"), (1, b"B"), (2, b"C")]


def test_the_request_quota_throttles_by_handler_time(h):
    h.broker.quotas.apply(QuotaEntity(user="ANONYMOUS"), {"request_percentage": 1e-9})
    resp = h.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})
    assert _ms(resp.throttle_time) > 0
    (sensors,) = h.broker.quotas.managers.request.sensors()
    assert sensors.tags == ("ANONYMOUS", "")


def test_controller_mutations_are_held_strictly_from_kip_599s_versions(h):
    """controller_mutation_rate 1/s: a bucket of 11 partitions. The topic that empties it goes through; the next
    is refused with the time the bucket needs to refill to zero, and the connection is muted for it."""
    h.broker.quotas.apply(QuotaEntity(client_id="harness"), {"controller_mutation_rate": 1.0})
    assert create(h, "ten", 10).error_code == ErrorCode.none
    assert create(h, "five", 5).error_code == ErrorCode.none           # 1 token left: taken to -4
    refused = h.request(CREATE_TOPICS, 7, _create_body("one", 1))
    assert refused.topics[0].error_code == ErrorCode.throttling_quota_exceeded
    assert refused.topics[0].error_message is None     # Kafka leaves out the error's generic message
    assert _ms(refused.throttle_time) == 4000                          # 4 tokens at 1/s
    assert h.broker.metadata.topic("one") is None
    h.advance(4000)
    assert h.request(CREATE_TOPICS, 7, _create_body("one", 1)).topics[0].error_code == ErrorCode.none


def test_older_versions_are_held_permissively(h):
    h.broker.quotas.apply(QuotaEntity(client_id="harness"), {"controller_mutation_rate": 1.0})
    resp = h.request(CREATE_TOPICS, 5, _create_body("twenty", 20))     # v5: before KIP-599's strict mode
    assert resp.topics[0].error_code == ErrorCode.none
    assert _ms(resp.throttle_time) == 9000                             # 20 taken from 11
    (sensors,) = h.broker.quotas.managers.controller_mutation.sensors()
    assert h.broker.quotas.managers.controller_mutation.tokens(sensors) == -9


def _create_body(name: str, partitions: int) -> dict:
    return {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout": 5000, "validate_only": False}


def test_added_and_deleted_partitions_take_from_the_same_bucket(h):
    h.broker.quotas.apply(QuotaEntity(client_id="harness"), {"controller_mutation_rate": 1.0})
    assert create(h, "t", 4).error_code == ErrorCode.none                 # 11 - 4 = 7 left
    grown = h.request(37, 3, {"topics": [{"name": "t", "count": 12, "assignments": None}], "timeout": 5000,
                              "validate_only": False})                      # 8 more: 7 - 8 = -1
    assert grown.results[0].error_code == ErrorCode.none and _ms(grown.throttle_time) == 0
    refused = h.request(20, 6, {"topics": [{"name": "t", "topic_id": None}], "timeout": 5000})
    assert refused.responses[0].error_code == ErrorCode.throttling_quota_exceeded
    assert _ms(refused.throttle_time) == 1000
    assert h.broker.metadata.topic("t").partitions == 12                   # not deleted


def test_a_fetch_counts_its_response_as_kafka_sends_it(h):
    """Kafka counts a consumer Fetch by its response size (FetchContext.getResponseSize), the records as its slice
    of the read: up to the partition's byte limit, with the partial batch it sends at the end."""
    from broker.protocol.fetch_size import fetch_response_size

    create(h, "t")
    for i in range(2):
        produce(h, "t", bytes([65 + i]) * 4000)
    h.broker.quotas.apply(QuotaEntity(user=DEFAULT, client_id=DEFAULT), {"consumer_byte_rate": 1e9})
    body = fetch_body("t", 0)
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = 6000
    got = h.request(1, 12, body).responses[0].partitions[0]
    assert 4000 < len(got.records) < 6000                  # whole batches only: the first
    (sensors,) = h.broker.quotas.managers.fetch.sensors()
    assert sensors.rate.total == fetch_response_size(12, [("t", [{"records": b"x" * 6000}])])
