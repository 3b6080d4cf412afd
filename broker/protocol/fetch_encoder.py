"""Hand-written FetchResponse (v4–v12) encoder: splices stored batch bytes without copying them.

kio's pure-Python writer copies record bytes through BytesIO several times; Fetch is the hot path, so
this writes the same bytes with struct and one join. `tests/broker/test_fetch_encoder.py` checks that the
output is byte-identical to kio's for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from broker.protocol.primitives import frame, seal
from common.wire import I16, I32, I64, NO_TAGS, array_len, string, uvarint

_PARTITION_HEAD = struct.Struct(">ihqq")      # partition_index, error_code, high_watermark, last_stable_offset
_ABORTED = struct.Struct(">qq")
FLEXIBLE_FROM = 12
MIN_VERSION, MAX_VERSION = 4, 12


def encode_fetch_response(api_version: int, correlation_id: int, body: Mapping[str, Any]) -> list[Any]:
    """The complete response frame (size prefix, header, body) for Fetch `api_version`, as buffers to be
    written in order. `records` may be bytes or a segment FileRegion (sent with sendfile)."""
    flexible = api_version >= FLEXIBLE_FROM
    parts: list[Any] = frame(correlation_id, flexible)
    parts.append(I32.pack(body.get("throttle_time", 0)))
    if api_version >= 7:
        parts.append(I16.pack(int(body.get("error_code", 0))) + I32.pack(body.get("session_id", 0)))
    topics = body["responses"]
    parts.append(array_len(len(topics), flexible))
    for t in topics:
        parts.append(string(t["topic"], flexible))
        partitions = t["partitions"]
        parts.append(array_len(len(partitions), flexible))
        for p in partitions:
            parts.append(_PARTITION_HEAD.pack(p["partition_index"], int(p["error_code"]), p["high_watermark"],
                                              p.get("last_stable_offset", -1)))
            if api_version >= 5:
                parts.append(I64.pack(p.get("log_start_offset", -1)))
            aborted = p.get("aborted_transactions")
            parts.append(array_len(None if aborted is None else len(aborted), flexible))
            for a in aborted or ():
                parts.append(_ABORTED.pack(a["producer_id"], a["first_offset"]))
                if flexible:
                    parts.append(NO_TAGS)
            if api_version >= 11:
                parts.append(I32.pack(p.get("preferred_read_replica", -1)))
            records = p.get("records")
            if records is None:
                parts.append(uvarint(0) if flexible else I32.pack(-1))
            else:
                parts.append(uvarint(len(records) + 1) if flexible else I32.pack(len(records)))
                parts.append(records)
            if flexible:
                parts.append(NO_TAGS)  # partition tagged fields (diverging_epoch etc. at their defaults)
        if flexible:
            parts.append(NO_TAGS)
    if flexible:
        parts.append(NO_TAGS)
    return _coalesce(seal(parts))


def _coalesce(parts: list[Any]) -> list[Any]:
    """Join runs of small buffers so that sendmsg gets few iovecs; large record buffers and file regions
    (anything that is not a bytes-like buffer) stay as they are."""
    out: list[Any] = []
    small: list[bytes | memoryview] = []
    for p in parts:
        if len(p) >= 4096 or not isinstance(p, bytes | memoryview):
            if small:
                out.append(b"".join(small))
                small = []
            out.append(p)
        else:
            small.append(p)
    if small:
        out.append(b"".join(small))
    return out
