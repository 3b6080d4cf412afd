"""Response framing for the hand-written response encoders; the field encoders themselves live in common.wire."""

from __future__ import annotations

from common.wire import I32, NO_TAGS


def frame(correlation_id: int, flexible_header: bool) -> list[bytes]:
    """The start of a response frame: a size placeholder (parts[0], set by `seal`) and the response header."""
    return [b"", I32.pack(correlation_id) + (NO_TAGS if flexible_header else b"")]


def seal(parts: list) -> list:
    """Fill in the size prefix of a frame begun with `frame`."""
    parts[0] = I32.pack(sum(len(x) for x in parts))
    return parts
