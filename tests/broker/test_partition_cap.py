"""At most 10,000 new partitions per CreateTopics or CreatePartitions request, as Kafka's controller
(MAX_PARTITIONS_PER_BATCH, POLICY_VIOLATION): a fuzzed request once made 20,000 at a stroke (issue 14)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from broker.protocol.handlers.admin import MAX_PARTITIONS_PER_BATCH, partitions_to_add, partitions_to_create
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, topic_error

CREATE_TOPICS, CREATE_PARTITIONS, METADATA = 19, 37, 3
MESSAGE = "Excessively large number of partitions per request."


@pytest.fixture
def wire(shared_broker):
    with WireClient(shared_broker.port) as c:
        yield c


def _topic(name: str, partitions: int, assignments: int = 0) -> dict:
    return {"name": name, "num_partitions": -1 if assignments else partitions,
            "replication_factor": -1 if assignments else 1,
            "assignments": [{"partition_index": p, "broker_ids": [0]} for p in range(assignments)], "configs": []}


def _create(wire: WireClient, topics: list[dict], validate_only: bool = False):
    return wire.call(CREATE_TOPICS, 7, {"topics": topics, "timeout": 5000, "validate_only": validate_only}).topics


def _add(wire: WireClient, counts: dict[str, int], validate_only: bool = False):
    return wire.call(CREATE_PARTITIONS, 3, {"topics": [{"name": n, "count": c, "assignments": None}
                                                       for n, c in counts.items()],
                                            "timeout": 5000, "validate_only": validate_only}).results


def _partitions(port: int, topic: str) -> int:
    with WireClient(port) as w:
        resp = w.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                     "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
        return len(resp.topics[0].partitions)


def test_counts_partitions_as_kafka_does():
    t = SimpleNamespace
    topics = [t(assignments=[], num_partitions=-1), t(assignments=[1, 2], num_partitions=-1),
              t(assignments=[], num_partitions=7), t(assignments=[], num_partitions=0),
              t(assignments=[], num_partitions=-5)]
    assert partitions_to_create(topics, default_partitions=3) == 3 + 2 + 7
    asked = [t(name="a", count=10), t(name="b", count=2), t(name="unknown", count=99)]
    assert partitions_to_add(asked, {"a": 4, "b": 5}) == 6


def test_create_topics_of_two_billion_partitions_is_refused_at_once(shared_broker, wire, topic_name):
    started = time.monotonic()
    [result] = _create(wire, [_topic(topic_name, 0x7FFFFFFF)])
    assert time.monotonic() - started < 5
    assert (result.error_code, result.error_message) == (ErrorCode.policy_violation, MESSAGE)
    assert topic_error(shared_broker.port, topic_name) == ErrorCode.unknown_topic_or_partition


def test_the_cap_counts_every_topic_of_the_request(shared_broker, wire, topic_name):
    half = MAX_PARTITIONS_PER_BATCH // 2
    results = _create(wire, [_topic(f"{topic_name}-a", half), _topic(f"{topic_name}-b", half),
                             _topic(f"{topic_name}-c", 0, assignments=1)])
    assert [(r.error_code, r.error_message) for r in results] == [(ErrorCode.policy_violation, MESSAGE)] * 3
    assert all(topic_error(shared_broker.port, f"{topic_name}-{s}") == ErrorCode.unknown_topic_or_partition
               for s in "abc")
    # At the cap exactly it is allowed (validated only: 10,000 partitions would weigh on the shared broker).
    results = _create(wire, [_topic(f"{topic_name}-a", half), _topic(f"{topic_name}-b", half)], validate_only=True)
    assert [r.error_code for r in results] == [ErrorCode.none] * 2


def test_create_partitions_beyond_the_cap_is_refused(shared_broker, wire, topic_name):
    create_topic(shared_broker.port, topic_name, 2)
    [result] = _add(wire, {topic_name: 0x7FFFFFFF})
    assert (result.error_code, result.error_message) == (ErrorCode.policy_violation, MESSAGE)
    # Both topics of the request count: 2 + 9,999 new partitions, one over.
    other = f"{topic_name}-other"
    create_topic(shared_broker.port, other, 1)
    results = _add(wire, {topic_name: 4, other: MAX_PARTITIONS_PER_BATCH})
    assert [r.error_code for r in results] == [ErrorCode.policy_violation] * 2
    assert (_partitions(shared_broker.port, topic_name), _partitions(shared_broker.port, other)) == (2, 1)
    results = _add(wire, {topic_name: 3, other: MAX_PARTITIONS_PER_BATCH}, validate_only=True)
    assert [r.error_code for r in results] == [ErrorCode.none] * 2
    [result] = _add(wire, {topic_name: 5})
    assert result.error_code == ErrorCode.none and _partitions(shared_broker.port, topic_name) == 5
