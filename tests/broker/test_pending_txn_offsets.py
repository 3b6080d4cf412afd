"""PendingTxnOffsets.has_pending: what OffsetFetch require_stable (KIP-447) answers UNSTABLE_OFFSET_COMMIT for."""

from __future__ import annotations

from broker.coordinator.transaction.broker_io import PendingTxnOffsets


def test_pending_until_the_marker_takes_them():
    p = PendingTxnOffsets()
    assert not p.has_pending("g", "t", 0)
    p.add(7, "g", [("t", 0, 5, -1, None)])
    p.add(8, "h", [("t", 1, 3, -1, None)])
    assert p.has_pending("g", "t", 0)
    assert not p.has_pending("g", "t", 1)  # another group's pending offset
    assert not p.has_pending("other", "t", 0)
    p.take(7)  # the transaction's marker reached the offsets partition
    assert not p.has_pending("g", "t", 0)
    assert p.has_pending("h", "t", 1)
