import struct

from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from broker.protocol.codec import build, encode_response, ms, parse_request, response_class


def _body(api_key: int, version: int, frame: bytes):
    cls = response_class(api_key, version)
    _hdr, n = entity_reader(cls.__header_schema__)(frame, 4)
    body, m = entity_reader(cls)(frame, 4 + n)
    assert 4 + n + m == len(frame)
    return body


def test_one_dict_builds_every_produce_version():
    data = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": ErrorCode.none, "base_offset": 42, "log_append_time": -1,
         "log_start_offset": 3, "error_message": None}]}], "throttle_time": 0}
    for v in range(3, 11):
        body = _body(0, v, encode_response(0, v, 1, data))
        p = body.responses[0].partition_responses[0]
        assert p.base_offset == 42
        if v >= 5:
            assert p.log_start_offset == 3


def test_timestamps_and_durations_convert_from_milliseconds():
    cls = response_class(0, 9)
    resp = build(cls, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 0, "log_append_time": 1_700_000_000_123}]}],
        "throttle_time": 7})
    assert ms(resp.throttle_time) == 7
    assert ms(resp.responses[0].partition_responses[0].log_append_time) == 1_700_000_000_123


def test_parse_request_ignores_trailing_bytes_like_kafka():
    # The exact Metadata v12 "all topics" request librdkafka 2.16 sends: three stale placeholder bytes follow
    # the body. Kafka ignores them; rejecting them broke AdminClient.list_topics().
    frame = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    header, body = parse_request(frame)
    assert header.correlation_id == 3 and header.client_id == "rdkafka"
    assert body.topics is None and body.allow_auto_topic_creation is False
    assert struct.unpack_from(">h", frame)[0] == 3
