import pytest

from broker.errors import ErrorCode
from broker.protocol.codec import encode_response, encode_with_kio
from broker.protocol.produce_encoder import MAX_VERSION, MIN_VERSION, encode_produce_response


def _body() -> dict:
    """Every field the Produce handler sets: a success, a LogAppendTime success, an error with a message, a record
    error (v8+), an empty topic, a non-ASCII name."""
    return {"throttle_time": 7, "responses": [
        {"name": "orders", "partition_responses": [
            {"index": 0, "error_code": ErrorCode.none, "base_offset": 1234, "log_append_time": -1,
             "log_start_offset": 0},
            {"index": 1, "error_code": ErrorCode.none, "base_offset": 5, "log_append_time": 1_764_000_000_123,
             "log_start_offset": 2},
            {"index": 2, "error_code": ErrorCode.not_enough_replicas, "base_offset": -1, "log_append_time": -1,
             "log_start_offset": -1, "error_message": "ISR [1] is smaller than min.insync.replicas 2"},
            {"index": 3, "error_code": ErrorCode.invalid_record, "base_offset": -1, "log_append_time": -1,
             "log_start_offset": -1, "error_message": None,
             "record_errors": [{"batch_index": 4, "batch_index_error_message": "bad"},
                               {"batch_index": 9, "batch_index_error_message": None}]},
        ]},
        {"name": "empty", "partition_responses": []},
        {"name": "zahlungseingänge", "partition_responses": [
            {"index": 7, "error_code": ErrorCode.none, "base_offset": 0, "log_append_time": -1,
             "log_start_offset": 0}]},
    ]}


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_byte_identical_to_kio(version):
    body = _body()
    ours = encode_produce_response(version, 42, body)
    assert ours == encode_with_kio(0, version, 42, body)
    assert encode_response(0, version, 42, body) == ours    # and it is the path responses take

