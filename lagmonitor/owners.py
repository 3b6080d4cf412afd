"""Owners of consumer-protocol groups (KIP-848) from ConsumerGroupDescribe.

Their `__consumer_offsets` records name assigned topics by id only (ConsumerGroupCurrentMemberAssignmentValue), so
the collector asks the group coordinator instead: confluent-kafka's AdminClient.describe_consumer_groups sends
ConsumerGroupDescribe (API 69, KIP-848), falls back to DescribeGroups for a classic group, and says which in `type`.
Classic groups keep Burrow's way (their GroupMetadata records).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import ConsumerGroupType, KafkaException

Owners = list[tuple[str, str, tuple[tuple[str, int], ...]]]   # (client id, client host, assigned partitions)


def owners(description: Any) -> Owners | None:
    """A ConsumerGroupDescription → LagStorage.set_owners' input; None unless it is a consumer-protocol group."""
    if description.type != ConsumerGroupType.CONSUMER:
        return None
    out = []
    for m in description.members:
        assigned = m.assignment.topic_partitions if m.assignment is not None else []
        out.append((m.client_id, m.host, tuple(sorted((tp.topic, tp.partition) for tp in assigned))))
    return out


def describe(admin: Any, groups: Iterable[str], timeout_s: float = 10.0) -> tuple[dict[str, Owners], dict[str, str]]:
    """Describe `groups` with one request per coordinator; ({group: owners} for consumer-protocol groups,
    {group: error} for those that failed, e.g. GROUP_ID_NOT_FOUND after a deletion)."""
    found: dict[str, Owners] = {}
    failed: dict[str, str] = {}
    names = sorted(groups)
    if not names:
        return found, failed
    for group, fut in admin.describe_consumer_groups(names, request_timeout=timeout_s).items():
        try:
            got = owners(fut.result())
        except KafkaException as e:   # one group's error; the others still count
            failed[group] = str(e)
            continue
        if got is not None:
            found[group] = got
    return found, failed
