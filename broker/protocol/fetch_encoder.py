"""Hand-written FetchResponse (v4–v12) encoder: splices stored batch bytes without copying them.

kio's pure-Python writer copies record bytes through BytesIO several times; Fetch is the hot path, so
this writes the same bytes with struct and one join. `tests/broker/test_fetch_encoder.py` checks that the
output is byte-identical to kio's for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqq")      # partition_index, error_code, high_watermark, last_stable_offset
_I64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")
FLEXIBLE_FROM = 12
MIN_VERSION, MAX_VERSION = 4, 12


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(s: str, flexible: bool) -> bytes:
    raw = s.encode()
    return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _array_len(n: int | None, flexible: bool) -> bytes:
    if flexible:
        return _uvarint(0 if n is None else n + 1)
    return _I32.pack(-1 if n is None else n)


def encode_fetch_response(api_version: int, correlation_id: int, body: Mapping[str, Any]) -> list[Any]:
    """The complete response frame (size prefix, header, body) for Fetch `api_version`, as buffers to be
    written in order. `records` may be bytes or a segment FileRegion (sent with sendfile)."""
    flexible = api_version >= FLEXIBLE_FROM
    parts: list[Any] = [b"", _I32.pack(correlation_id)]
    if flexible:
        parts.append(b"\0")  # response header v1: no tagged fields
    parts.append(_I32.pack(body.get("throttle_time", 0)))
    if api_version >= 7:
        parts.append(_I16.pack(int(body.get("error_code", 0))) + _I32.pack(body.get("session_id", 0)))
    topics = body["responses"]
    parts.append(_array_len(len(topics), flexible))
    for t in topics:
        parts.append(_string(t["topic"], flexible))
        partitions = t["partitions"]
        parts.append(_array_len(len(partitions), flexible))
        for p in partitions:
            parts.append(_PARTITION_HEAD.pack(p["partition_index"], int(p["error_code"]), p["high_watermark"],
                                              p.get("last_stable_offset", -1)))
            if api_version >= 5:
                parts.append(_I64.pack(p.get("log_start_offset", -1)))
            aborted = p.get("aborted_transactions")
            parts.append(_array_len(None if aborted is None else len(aborted), flexible))
            for a in aborted or ():
                parts.append(_ABORTED.pack(a["producer_id"], a["first_offset"]))
                if flexible:
                    parts.append(b"\0")
            if api_version >= 11:
                parts.append(_I32.pack(p.get("preferred_read_replica", -1)))
            records = p.get("records")
            if records is None:
                parts.append(_uvarint(0) if flexible else _I32.pack(-1))
            else:
                parts.append(_uvarint(len(records) + 1) if flexible else _I32.pack(len(records)))
                parts.append(records)
            if flexible:
                parts.append(b"\0")  # partition tagged fields (diverging_epoch etc. at their defaults)
        if flexible:
            parts.append(b"\0")
    if flexible:
        parts.append(b"\0")
    size = sum(len(x) for x in parts)
    parts[0] = _I32.pack(size)
    return _coalesce(parts)


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
