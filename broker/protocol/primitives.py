"""Kafka wire primitives for the hand-written response encoders (classic and flexible/compact forms)."""

from __future__ import annotations

import struct

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
NO_TAGS = b"\0"   # an empty tagged-field section (flexible versions)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(s: str, flexible: bool) -> bytes:
    raw = s.encode()
    return (uvarint(len(raw) + 1) if flexible else I16.pack(len(raw))) + raw


def nullable_string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\0" if flexible else I16.pack(-1)
    return string(s, flexible)


def array_len(n: int | None, flexible: bool) -> bytes:
    """An array's length prefix; None is the null array."""
    if flexible:
        return uvarint(0 if n is None else n + 1)
    return I32.pack(-1 if n is None else n)


def frame(correlation_id: int, flexible_header: bool) -> list[bytes]:
    """The start of a response frame: a size placeholder (parts[0], set by `seal`) and the response header."""
    return [b"", I32.pack(correlation_id) + (NO_TAGS if flexible_header else b"")]


def seal(parts: list) -> list:
    """Fill in the size prefix of a frame begun with `frame`."""
    parts[0] = I32.pack(sum(len(x) for x in parts))
    return parts
