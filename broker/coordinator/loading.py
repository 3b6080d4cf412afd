"""Reading a coordinator's partition back (`__consumer_offsets`, `__transaction_state`) when this broker becomes
its leader: a record that does not decode is skipped, counted and logged, never fatal. Kafka's loaders skip
record types they do not know (GroupMetadataManager's UnknownKey, "It could be a left over from an aborted
upgrade"); here a damaged or forged record of a known type is skipped too, so one bad record cannot leave every
other group or transaction of the partition unloaded."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

Apply = Callable[[bytes, "bytes | None"], None]


def apply_readable(records: Iterable[tuple[bytes | None, bytes | None]], apply: Apply, where: str) -> int:
    """`apply(key, value)` for every record in order; a record without a key, or one `apply` finds undecodable
    (ValueError), is skipped. Returns how many were skipped (logged once, with the first reason)."""
    skipped, first = 0, ""
    for key, value in records:
        try:
            if key is None:
                raise ValueError("a record without a key")
            apply(key, value)
        except ValueError as e:
            skipped += 1
            first = first or str(e) or type(e).__name__
    if skipped:
        log.warning("%s: skipped %d unreadable record(s) while loading (first: %s)", where, skipped, first)
    return skipped
