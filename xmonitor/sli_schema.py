"""The SLI interval record: what xmonitor writes every interval per partition, and the SLO report reads.

Files: Parquet under `<sli.dir>/date=YYYY-MM-DD/<cluster>-<start>-<uuid>.parquet`, written to a temporary
name and renamed, so a reader never sees a partial file. One row per (cluster, topic, partition, interval).

Latency histograms are HdrHistogram's standard compressed V2 encoding (the raw bytes behind the base64 text
of `HdrHistogram.encode()`), in microseconds, 1 µs .. 1 h, 3 significant digits; merge them with
`decode_hdr(...).add(...)` for exact percentiles over any window.
"""

from __future__ import annotations

import base64

import pyarrow as pa
from hdrh.histogram import HdrHistogram

from common.hdr import LATENCY_US

SLI_SCHEMA = pa.schema([
    pa.field("cluster", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("leader", pa.int32(), nullable=False),               # leader broker id at interval end, -1 unknown
    pa.field("run_id", pa.string(), nullable=False),              # the xmonitor run that produced the row
    pa.field("interval_start", pa.timestamp("ms", tz="UTC"), nullable=False),
    pa.field("interval_end", pa.timestamp("ms", tz="UTC"), nullable=False),
    pa.field("produce_attempts", pa.int64(), nullable=False),
    pa.field("produce_successes", pa.int64(), nullable=False),
    pa.field("produce_errors", pa.map_(pa.string(), pa.int64()), nullable=False),  # Kafka error name -> count
    pa.field("records_consumed", pa.int64(), nullable=False),
    pa.field("records_lost", pa.int64(), nullable=False),
    pa.field("records_duplicated", pa.int64(), nullable=False),
    pa.field("records_out_of_order", pa.int64(), nullable=False),
    pa.field("records_late", pa.int64(), nullable=False),          # end-to-end delay over the consume SLA
    pa.field("produce_latency_hdr", pa.binary(), nullable=False),  # send -> ack, µs
    pa.field("e2e_latency_hdr", pa.binary(), nullable=False),      # send -> consumed, µs
])


def new_histogram() -> HdrHistogram:
    return LATENCY_US.new()


def encode_hdr(histogram: HdrHistogram) -> bytes:
    return base64.b64decode(histogram.encode())


def decode_hdr(data: bytes) -> HdrHistogram:
    return HdrHistogram.decode(base64.b64encode(data))
