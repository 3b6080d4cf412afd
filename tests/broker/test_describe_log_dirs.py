"""DescribeLogDirs (35) through the in-process harness: each log dir with its partitions' sizes and offset lags,
the volume's bytes (v4), a topic filter, and an offline dir listed with KAFKA_STORAGE_ERROR and no partitions, as
Kafka's ReplicaManager.describeLogDirs answers (what `kafka-log-dirs.sh --describe` prints)."""

from __future__ import annotations

import errno
import os

from broker.errors import ErrorCode
from tests.broker.harness import Harness
from tests.broker.test_inproc_handlers import create, produce

DESCRIBE_LOG_DIRS = 35


def _describe(h: Harness, topics: list[tuple[str, list[int]]] | None, version: int = 4):
    body = {"topics": None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics]}
    return h.request(DESCRIBE_LOG_DIRS, version, body)


def test_each_log_dir_with_its_partitions(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    with Harness(tmp_path / "unused", log_dirs=f"{a},{b}") as h:
        assert create(h, "t", partitions=2).error_code == ErrorCode.none
        assert produce(h, "t", b"x" * 100, b"y" * 100, partition=0).error_code == ErrorCode.none
        logs = h.broker.logs
        where = {p: str(logs.log_dir_of(logs.get("t", p))) for p in range(2)}
        resp = _describe(h, None)
        assert resp.error_code == ErrorCode.none
        assert [r.log_dir for r in resp.results] == [os.path.abspath(a), os.path.abspath(b)]
        seen = {}
        for r in resp.results:
            assert r.error_code == ErrorCode.none and r.total_bytes > 0 and 0 <= r.usable_bytes <= r.total_bytes
            for t in r.topics:
                for p in t.partitions:
                    seen[(t.name, p.partition_index)] = (r.log_dir, p.partition_size, p.offset_lag, p.is_future_key)
        assert seen[("t", 0)] == (where[0], logs.get("t", 0).size_bytes, 0, False)
        assert seen[("t", 0)][1] > 200 and seen[("t", 1)] == (where[1], 0, 0, False)
        assert ("__consumer_offsets", 0) in seen   # every partition when no topic is named

        only = _describe(h, [("t", [1]), ("missing", [0])])
        assert [(t.name, [p.partition_index for p in t.partitions]) for r in only.results for t in r.topics] == [
            ("t", [1])]
        v1 = _describe(h, [("t", [0])], version=1)
        assert [p.partition_size for r in v1.results for t in r.topics for p in t.partitions] == [seen[("t", 0)][1]]

        offline_dir = logs.log_dirs[0]
        h.broker.log_dir_failures.enabled = True
        h.broker.halt = lambda: None
        h.broker.log_dir_failures.fail(offline_dir, OSError(errno.EIO, "I/O error"))
        h.settle()
        after = {r.log_dir: r for r in _describe(h, None).results}
        down = after[os.path.abspath(offline_dir)]
        assert down.error_code == ErrorCode.kafka_storage_error and down.topics == () and down.total_bytes == -1
        up = after[os.path.abspath(logs.log_dirs[1])]
        assert up.error_code == ErrorCode.none and up.topics
