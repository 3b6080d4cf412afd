"""Hand-written ProduceResponse (v3–v10) encoder.

Produce is the broker's hottest request; kio's generic writer (build the dataclasses, then serialise them field by
field) took 40–60 µs for a one-partition response and 0.5 ms for thirty partitions. This writes the same bytes with
struct; `tests/broker/test_produce_encoder.py` checks that they are byte-identical to kio's for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from broker.protocol.primitives import frame, seal
from common.wire import I32, I64, NO_TAGS, array_len, nullable_string, string

_PARTITION_HEAD = struct.Struct(">ihqq")   # index, error_code, base_offset, log_append_time
FLEXIBLE_FROM = 9
MIN_VERSION, MAX_VERSION = 3, 10


def encode_produce_response(api_version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """The complete response frame (size prefix, header, body) for Produce `api_version`."""
    flexible = api_version >= FLEXIBLE_FROM
    parts = frame(correlation_id, flexible)
    topics = body["responses"]
    parts.append(array_len(len(topics), flexible))
    for t in topics:
        parts.append(string(t["name"], flexible))
        partitions = t["partition_responses"]
        parts.append(array_len(len(partitions), flexible))
        for p in partitions:
            parts.append(_PARTITION_HEAD.pack(p["index"], int(p["error_code"]), p.get("base_offset", -1),
                                              p.get("log_append_time", -1)))
            if api_version >= 5:
                parts.append(I64.pack(p.get("log_start_offset", -1)))
            if api_version >= 8:
                record_errors = p.get("record_errors") or ()
                parts.append(array_len(len(record_errors), flexible))
                for e in record_errors:
                    parts.append(I32.pack(e["batch_index"]))
                    parts.append(nullable_string(e.get("batch_index_error_message"), flexible))
                    if flexible:
                        parts.append(NO_TAGS)
                parts.append(nullable_string(p.get("error_message"), flexible))
            if flexible:
                parts.append(NO_TAGS)   # current_leader (v10, tag 0) at its default
        if flexible:
            parts.append(NO_TAGS)
    parts.append(I32.pack(body.get("throttle_time", 0)))
    if flexible:
        parts.append(NO_TAGS)           # node_endpoints (v10, tag 0) empty
    return b"".join(seal(parts))
