"""A broker with more partitions than it may open files restarts after kill -9 and serves, even a write to
every partition (issue 14: with ~20,000 partitions it died at start on `[Errno 24] Too many open files`)."""

from __future__ import annotations

import resource

import pytest
from kio.schema.errors import ErrorCode

from broker.log.records import Record, build_batch
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import PRODUCE, create_topic, list_offset, records

SOFT, HARD = 256, 1024  # the broker raises its soft limit to the hard one; both below the partition count
PARTITIONS = 2_000
WRITTEN = (0, 999, PARTITIONS - 1)


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, HARD))


def _produce(port: int, topic: str, partition: int, value: bytes) -> int:
    batch = build_batch([Record(timestamp=1, key=None, value=value)])
    with WireClient(port) as w:
        resp = w.call(PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    p = resp.responses[0].partition_responses[0]
    assert p.error_code == ErrorCode.none, p
    return p.base_offset


def _produce_everywhere(port: int, topic: str, partitions: int) -> list[int]:
    """One Produce request with a record for every partition; their error codes."""
    batch = build_batch([Record(timestamp=1, key=None, value=b"everywhere")])
    with WireClient(port, timeout_s=60) as w:
        resp = w.call(PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": p, "records": batch} for p in range(partitions)]}]})
    return [p.error_code for p in sorted(resp.responses[0].partition_responses, key=lambda p: p.index)]


def test_restarts_after_kill9_with_more_partitions_than_file_descriptors(tmp_path):
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < HARD:
        pytest.skip(f"the hard open-file limit is below {HARD}")
    b = BrokerProcess(tmp_path, offsets_topic_num_partitions=1)
    b.preexec_fn = _low_file_limit
    try:
        b.start()
        create_topic(b.port, "many", PARTITIONS)
        for p in WRITTEN:
            assert _produce(b.port, "many", p, b"before-%d" % p) == 0
        b.kill()
        b.start(timeout_s=60)
        assert b.log_path.read_text().count(f"raised open-file limit from {SOFT} to {HARD}") == 2
        for p in WRITTEN:
            assert [r.value for r in records(b.port, "many", p)] == [b"before-%d" % p]
            assert _produce(b.port, "many", p, b"after") == 1
        assert _produce(b.port, "many", 1234, b"first") == 0
        assert list_offset(b.port, "many", PARTITIONS - 1) == 2
        # Writing to every partition needs more .log files than the limit: the least recently used are closed.
        assert _produce_everywhere(b.port, "many", PARTITIONS) == [ErrorCode.none] * PARTITIONS
        assert [r.value for r in records(b.port, "many", 999)] == [b"before-999", b"after", b"everywhere"]
        assert [r.value for r in records(b.port, "many", 1)] == [b"everywhere"]
    finally:
        b.stop()
