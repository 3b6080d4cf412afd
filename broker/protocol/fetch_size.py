"""The size Kafka gives a Fetch response holding some of its partitions (FetchResponse.sizeOf: 4 + the message's
size at the request's version), which the leader's replication throttle counts (KafkaApis.sizeOfThrottledPartitions).

Computed from the fields of FetchResponse v4–12 rather than by encoding: it is taken on every follower Fetch.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.wire import uvarint

FLEXIBLE = 12   # the first flexible version (compact lengths, tagged fields)


def _length(n: int, flexible: bool) -> int:
    """An array's, string's or bytes' length prefix."""
    return len(uvarint(n + 1)) if flexible else 4


def _partition_size(entry: dict, version: int, flexible: bool) -> int:
    size = 4 + 2 + 8 + 8                     # index, error, high watermark, last stable offset (v4+)
    if version >= 5:
        size += 8                            # log start offset
    aborted = entry.get("aborted_transactions")
    size += 1 if flexible and aborted is None else (4 if aborted is None else _length(len(aborted), flexible))
    if aborted:
        size += len(aborted) * (16 + (1 if flexible else 0))
    if version >= 11:
        size += 4                            # preferred read replica
    records = entry.get("records")
    # A file region counts as Kafka's slice of the same read would (FileRegion.slice_length).
    n = (getattr(records, "slice_length", None) or len(records)) if records is not None else 0
    size += (_length(n, flexible) if records is not None else (1 if flexible else 4)) + n
    return size + (1 if flexible else 0)     # tagged fields


def fetch_response_size(version: int, topics: Iterable[tuple[str, list[dict]]]) -> int:
    """FetchResponse.sizeOf(version, these (topic, partition entries)) for v4–12."""
    flexible = version >= FLEXIBLE
    topics = list(topics)
    size = 4 + (6 if version >= 7 else 0)    # throttle time; error code and session id (v7+)
    size += _length(len(topics), flexible)
    for name, partitions in topics:
        encoded = len(name.encode("utf-8"))
        size += (len(uvarint(encoded + 1)) if flexible else 2) + encoded
        size += _length(len(partitions), flexible)
        size += sum(_partition_size(p, version, flexible) for p in partitions)
        size += 1 if flexible else 0         # the topic's tagged fields
    return 4 + size + (1 if flexible else 0)
