import pytest

from broker.log.records import Record, build_batch
from broker.protocol.codec import encode_with_kio
from broker.protocol.fetch_encoder import MAX_VERSION, MIN_VERSION, encode_fetch_response


def _body(records: bytes | None) -> dict:
    return {"throttle_time": 3, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 10, "last_stable_offset": 10,
             "log_start_offset": 2, "aborted_transactions": None, "preferred_read_replica": -1,
             "records": records},
            {"partition_index": 1, "error_code": 1, "high_watermark": -1, "last_stable_offset": -1,
             "log_start_offset": -1, "aborted_transactions": [{"producer_id": 7, "first_offset": 3}],
             "preferred_read_replica": -1, "records": b""},
        ]},
        {"topic": "ünïcode-free", "partitions": []},
    ]}


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
@pytest.mark.parametrize("records", [b"", None, "batch"])
def test_byte_identical_to_kio(version, records):
    if records == "batch":
        records = build_batch([Record(timestamp=5, key=b"k", value=b"v" * 300)] * 3)
    body = _body(records)
    assert b"".join(encode_fetch_response(version, 42, body)) == encode_with_kio(1, version, 42, body)
