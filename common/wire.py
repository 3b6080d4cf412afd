"""Kafka's wire primitives, written once: big-endian ints, varints, strings and bytes in classic and compact form.

Used by the broker (request validation, response encoders, record batches, snappy, `__consumer_offsets` records)
and by the lag monitor (which decodes `__consumer_offsets` without any broker code). The free functions are the
hot-path forms (no objects, positions passed in and out); `Reader` and `Writer` are the convenient forms for
schema code. Encodings follow Kafka's protocol guide (https://kafka.apache.org/protocol#protocol_types).
"""

from __future__ import annotations

import struct
from typing import Any, TypeVar

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
NO_TAGS = b"\0"   # an empty tagged-field section (flexible versions)
T = TypeVar("T")


class WireError(ValueError):
    """Bytes that do not hold the value being read."""


# ---------------------------------------------------------------- blocking sockets (tools, probes, tests)

def recv_exact(sock: Any, n: int) -> bytes:
    """Exactly `n` bytes from a blocking socket; ConnectionError if the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed by the peer after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: Any) -> bytes:
    """One size-prefixed Kafka frame (without its size) from a blocking socket."""
    return recv_exact(sock, I32.unpack(recv_exact(sock, 4))[0])


# ---------------------------------------------------------------- varints

def uvarint(n: int) -> bytes:
    """Unsigned varint (compact lengths, tagged fields)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_uvarint(b: Any, pos: int, end: int, limit: int = 5) -> tuple[int, int]:
    """(value, next position) of an unsigned varint of at most `limit` bytes inside b[:end]."""
    result = shift = 0
    for _ in range(limit):
        if pos >= end:
            raise WireError(f"varint runs past the frame at {pos}")
        byte = b[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise WireError(f"varint longer than {limit} bytes at {pos}")


def zigzag(n: int) -> int:
    """Signed → unsigned, small magnitudes small (protobuf's zigzag; 64-bit)."""
    return (n << 1) ^ (n >> 63)


def unzigzag(z: int) -> int:
    return (z >> 1) ^ -(z & 1)


def write_varint(out: bytearray, n: int) -> None:
    """Append a signed (zigzag) varint, as record fields use."""
    z = (n << 1) ^ (n >> 63)   # zigzag inline: this runs per record field
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """(value, next position) of a signed (zigzag) varint; IndexError past the buffer, as slicing callers expect."""
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise WireError("varint too long")


# ---------------------------------------------------------------- encoders

def string(s: str, flexible: bool) -> bytes:
    raw = s.encode()
    return (uvarint(len(raw) + 1) if flexible else I16.pack(len(raw))) + raw


def nullable_string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\0" if flexible else I16.pack(-1)
    return string(s, flexible)


def bytes_field(v: bytes, flexible: bool) -> bytes:
    """A non-null bytes field: compact (uvarint length + 1) or int32 length."""
    return (uvarint(len(v) + 1) if flexible else I32.pack(len(v))) + bytes(v)


def array_len(n: int | None, flexible: bool) -> bytes:
    """An array's length prefix; None is the null array."""
    if flexible:
        return uvarint(0 if n is None else n + 1)
    return I32.pack(-1 if n is None else n)


class Writer:
    """Builds one message field by field; `flexible` picks compact strings, bytes and arrays plus tag sections."""

    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(I16.pack(v))

    def int32(self, v: int) -> None:
        self.parts.append(I32.pack(v))

    def int64(self, v: int) -> None:
        self.parts.append(I64.pack(v))

    def string(self, v: str | None) -> None:
        self.parts.append(nullable_string(v, self.flexible))

    def bytes_(self, v: bytes) -> None:
        self.parts.append(bytes_field(v, self.flexible))

    def array_len(self, n: int) -> None:
        self.parts.append(array_len(n, self.flexible))

    def tags(self) -> None:
        if self.flexible:
            self.parts.append(NO_TAGS)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


# ---------------------------------------------------------------- reader

class Reader:
    """Reads one message field by field, raising `error` (a WireError by default) on truncated or bad bytes.

    `flexible` may be set after the version field is read: strings, bytes and arrays then read compact lengths.
    """

    def __init__(self, buf: bytes | memoryview, pos: int = 0, flexible: bool = False,
                 error: type[Exception] = WireError) -> None:
        self.buf = buf
        self.pos = pos
        self.flexible = flexible
        self.error = error

    def _advance(self, n: int) -> int:
        """Claim the next n bytes; returns where they start."""
        pos = self.pos
        if n < 0 or pos + n > len(self.buf):
            raise self.error(f"record truncated at byte {pos}")
        self.pos = pos + n
        return pos

    def take(self, n: int) -> bytes | memoryview:
        pos = self._advance(n)
        return self.buf[pos:pos + n]

    def int16(self) -> int:
        v: int = I16.unpack_from(self.buf, self._advance(2))[0]
        return v

    def int32(self) -> int:
        v: int = I32.unpack_from(self.buf, self._advance(4))[0]
        return v

    def int64(self) -> int:
        v: int = I64.unpack_from(self.buf, self._advance(8))[0]
        return v

    def uvarint(self) -> int:
        try:
            v, self.pos = read_uvarint(self.buf, self.pos, len(self.buf))
        except WireError as e:
            raise self.error(str(e)) from None
        return v

    def nullable_string(self, errors: str = "strict") -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        return None if n < 0 else str(self.take(n), "utf-8", errors)

    def string(self) -> str:
        return self._required(self.nullable_string(), "string")

    def lenient_string(self) -> str:
        """A string as Burrow reads `__consumer_offsets`: null is "", bad UTF-8 is replaced rather than fatal."""
        n = self.uvarint() - 1 if self.flexible else self.int16()
        return "" if n < 0 else str(self.take(n), "utf-8", "replace")

    def nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1 if self.flexible else self.int32()
        return None if n < 0 else bytes(self.take(n))

    def bytes_(self) -> bytes:
        return self._required(self.nullable_bytes(), "bytes field")

    def _required(self, v: T | None, what: str) -> T:
        if v is None:
            raise self.error(f"null in a non-nullable {what}")
        return v

    def array_len(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            raise self.error("null array")
        return n

    def skip_tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()             # tag
                self.take(self.uvarint())  # size + data: unknown tags are skipped, as the spec requires

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise self.error(f"{len(self.buf) - self.pos} trailing bytes")
