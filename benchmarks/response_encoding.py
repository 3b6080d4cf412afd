"""Produce and Fetch response encoding: the broker's hand-written encoders against kio's generic writer.

    python -m benchmarks.response_encoding [--partitions 1,30] [--number 500]

For each response shape (Produce v9 and Fetch v12 with --partitions partitions; one partition of a Fetch carries a
1 KiB batch, the rest are empty, as in a long-poll answered by one append), the best of 5 timings of --number
encodings, in µs per response, for both encoders in the same run; ratio = kio / ours. Both produce the same bytes
(tests/broker/test_produce_encoder.py, test_fetch_encoder.py). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import timeit

from benchmarks._common import emit_json, fmt, ratio
from broker.log.records import Record, build_batch
from broker.protocol.codec import encode_with_kio
from broker.protocol.fetch_encoder import encode_fetch_response
from broker.protocol.produce_encoder import encode_produce_response


def produce_body(partitions: int) -> dict:
    return {"throttle_time": 0, "responses": [{"name": "orders", "partition_responses": [
        {"index": i, "error_code": 0, "base_offset": 1000 * i, "log_append_time": -1, "log_start_offset": 0}
        for i in range(partitions)]}]}


def fetch_body(partitions: int) -> dict:
    batch = build_batch([Record(timestamp=1, value=b"v" * 1024)])
    return {"throttle_time": 0, "error_code": 0, "session_id": 0, "responses": [{"topic": "orders", "partitions": [
        {"partition_index": i, "error_code": 0, "high_watermark": 10, "last_stable_offset": 10,
         "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
         "records": batch if i == 0 else None} for i in range(partitions)]}]}


def per_call_us(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", default="1,30")
    ap.add_argument("--number", type=int, default=500)
    args = ap.parse_args()
    cases = {}
    for n in (int(x) for x in args.partitions.split(",")):
        for api, key, version, body, ours in (("produce", 0, 9, produce_body(n), encode_produce_response),
                                              ("fetch", 1, 12, fetch_body(n), encode_fetch_response)):
            ours_us = per_call_us(lambda ours=ours, body=body, version=version: ours(version, 7, body), args.number)
            kio_us = per_call_us(lambda body=body, key=key, version=version: encode_with_kio(key, version, 7, body),
                                 args.number)
            name = f"{api} v{version}, {n} partition{'s' if n > 1 else ''}"
            cases[name] = {"ours_us": round(ours_us, 1), "kio_us": round(kio_us, 1), "ratio": ratio(kio_us, ours_us)}
            print(f"{name}: ours {fmt(ours_us)} µs, kio {fmt(kio_us)} µs, kio/ours {fmt(cases[name]['ratio'])}")
    emit_json("response_encoding", {"cases": cases})


if __name__ == "__main__":
    main()
