"""A failed write takes its log dir offline in a cluster (Kafka's LogDirFailureChannel, KIP-112): its replicas answer
KAFKA_STORAGE_ERROR until a restart, OfflineLogDirectoryCount and OfflineReplicaCount count them, and with every log
dir offline the broker halts so the controller moves its leaderships. A standalone broker keeps its dirs online."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.controller.state import PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.log import segment
from broker.log.dir_failure import LogDirFailureChannel
from broker.log.manager import LogManager
from broker.log.records import Record, build_batch
from broker.metadata import TopicInfo
from broker.purgatory import Purgatory
from broker.replication.replica_manager import ProducePartitionStatus, ReplicaManager
from common.clock import ManualClock
from exporter.registry import MetricName
from tests.broker.harness import Harness
from tests.broker.test_replica_manager import FakeFetchers, FakeStore


def _batch(value: bytes = b"v") -> bytes:
    return build_batch([Record(timestamp=1, key=b"k", value=value)])


class _FullDisk:
    """os.write in segment.py refuses (ENOSPC) while on, for the files under `root` only."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.on = False
        real = os.write

        def write(fd: int, data: bytes) -> int:
            if self.on and os.readlink(f"/proc/self/fd/{fd}").startswith(str(root)):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(fd, data)

        monkeypatch.setattr(segment.os, "write", write)


def _logs(tmp_path: Path, enabled: bool = True) -> tuple[LogManager, LogDirFailureChannel, list[Path], list[Path]]:
    dirs = [tmp_path / "a", tmp_path / "b"]
    failures = LogDirFailureChannel(enabled)
    heard: list[Path] = []
    failures.listeners.append(heard.append)
    config = BrokerConfig()
    logs = LogManager(dirs, ManualClock(), lambda t: config.log_config(), failures=failures)
    logs.load_all()
    return logs, failures, dirs, heard


def test_a_failed_write_takes_only_its_log_dir_offline(tmp_path, monkeypatch):
    logs, failures, (a, b), heard = _logs(tmp_path)
    in_a, in_b = logs.get_or_create("t", 0), logs.get_or_create("t", 1)
    assert (logs.log_dir_of(in_a), logs.log_dir_of(in_b)) == (a, b)
    disk = _FullDisk(monkeypatch, a)
    disk.on = True
    for _ in range(2):
        with pytest.raises(KafkaError) as refused:
            in_a.append_as_leader(_batch(), 0)
        assert refused.value.code == ErrorCode.kafka_storage_error
    assert failures.offline_dirs == {a} and heard == [a]   # told once, however many writes fail
    assert logs.offline(in_a) and not logs.offline(in_b)
    in_b.append_as_leader(_batch(), 0)
    assert in_b.log_end_offset == 1
    # A new partition goes to an online dir even where the offline one holds fewer partitions.
    assert logs.log_dir_of(logs.get_or_create("t", 2)) == b
    assert logs.log_dir_of(logs.get_or_create("t", 3)) == b
    failures.fail(b, OSError(errno.EIO, "I/O error"))
    assert failures.all_offline([a, b])
    with pytest.raises(KafkaError) as nowhere:
        logs.get_or_create("t", 4)
    assert nowhere.value.code == ErrorCode.kafka_storage_error
    logs.close()


def test_a_standalone_broker_keeps_its_log_dir_online(tmp_path, monkeypatch):
    """No replica to fail over to: the write is refused and the next one, once there is room, is taken."""
    logs, failures, (a, _), heard = _logs(tmp_path, enabled=False)
    plog = logs.get_or_create("t", 0)
    disk = _FullDisk(monkeypatch, a)
    disk.on = True
    with pytest.raises(KafkaError):
        plog.append_as_leader(_batch(), 0)
    disk.on = False
    plog.append_as_leader(_batch(), 0)
    assert plog.log_end_offset == 1 and not failures.offline_dirs and heard == [] and not logs.offline(plog)
    logs.close()


async def test_replicas_of_an_offline_log_dir_go_offline(tmp_path, monkeypatch):
    """Kafka's ReplicaManager.handleLogDirFailure: the dir's replicas lose their fetchers and leadership, answer
    KAFKA_STORAGE_ERROR (the acks=all write waiting on one too), and ignore new partition states until a restart;
    the other dir's replicas go on."""
    logs, failures, (a, b), _ = _logs(tmp_path)
    config = BrokerConfig(broker_id=1, replica_lag_time_max_ms=1000)
    fetchers, store = FakeFetchers(), FakeStore()
    store.topics["t"] = TopicInfo("t", None, 3)
    rm = ReplicaManager(config, ManualClock(), logs, store, Purgatory(), fetchers)
    roles: list[tuple[str, int, bool]] = []
    rm.role_listeners.append(lambda t, p, leader: roles.append((t, p, leader)))
    rm.on_partition_state("t", 0, PartitionState((1, 2), 1, 0, (1, 2)))   # led here, in dir a
    rm.on_partition_state("t", 1, PartitionState((1, 2), 2, 0, (1, 2)))   # followed, in dir b
    rm.on_partition_state("t", 2, PartitionState((1, 2), 2, 0, (1, 2)))   # followed, in dir a
    assert [logs.log_dir_of(rm.partition("t", p).log) for p in range(3)] == [a, b, a]
    part, result = rm.append("t", 0, _batch(), -1)
    status = ProducePartitionStatus(part, result.last_offset, part.leadership)
    waiting = asyncio.create_task(rm.await_replication([status], rm.clock.monotonic() + 30))
    await asyncio.sleep(0)
    roles.clear()

    assert sorted(rm.on_log_dir_failure(a)) == [("t", 0), ("t", 2)]
    assert await asyncio.wait_for(waiting, 1) is False and status.outcome == ErrorCode.kafka_storage_error
    assert roles == [("t", 0, False)] and set(fetchers.following) == {("t", 1)}
    for p in (0, 2):
        with pytest.raises(KafkaError) as offline:
            rm.partition("t", p)
        assert offline.value.code == ErrorCode.kafka_storage_error
    rm.on_partition_state("t", 2, PartitionState((1, 2), 1, 1, (1, 2)))   # made leader: still offline here
    with pytest.raises(KafkaError):
        rm.leader_partition("t", 2)
    assert rm.partition("t", 1).state.leader == 2 and rm.offline == {("t", 0), ("t", 2)}
    rm.on_partition_state("t", 2, PartitionState((2, 3), 2, 2, (2, 3)))   # reassigned away: forgotten here
    assert rm.offline == {("t", 0)}
    logs.close()


def _gauge(h: Harness, type_: str, name: str, domain: str = "kafka.log") -> float:
    assert h.broker.metrics is not None
    g = h.broker.metrics.registry.get(MetricName.of(domain, type_, name))
    return g.value   # type: ignore[union-attr]


def test_the_broker_halts_once_every_log_dir_is_offline(tmp_path, monkeypatch):
    """Broker wiring, in-process (the channel switched on as in a cluster, the halt recorded): the first dir's
    failure takes its replicas offline and shows in OfflineLogDirectoryCount and OfflineReplicaCount; the last
    dir's failure halts the broker (Kafka's LogManager.handleLogDirFailure)."""
    from tests.broker.test_inproc_handlers import create, produce

    a, b = tmp_path / "a", tmp_path / "b"
    with Harness(tmp_path / "unused", log_dirs=f"{a},{b}", hdr_log_dir=str(tmp_path / "hdr")) as h:
        halted: list[int] = []
        h.broker.log_dir_failures.enabled = True
        h.broker.halt = lambda: halted.append(1)
        assert create(h, "t", partitions=2).error_code == ErrorCode.none
        where = {p: h.broker.logs.log_dir_of(h.broker.logs.get("t", p)) for p in range(2)}
        assert sorted(where.values()) == [a, b]
        first, second = (p for p in range(2) if where[p] == a), (p for p in range(2) if where[p] == b)
        in_a, in_b = next(first), next(second)
        assert _gauge(h, "LogManager", "OfflineLogDirectoryCount") == 0
        disk = _FullDisk(monkeypatch, a)
        disk.on = True
        assert produce(h, "t", b"refused", partition=in_a).error_code == ErrorCode.kafka_storage_error
        h.settle()
        disk.on = False   # room made: the dir stays offline until a restart, as in Kafka
        assert produce(h, "t", b"still refused", partition=in_a).error_code == ErrorCode.kafka_storage_error
        assert produce(h, "t", b"taken", partition=in_b).error_code == ErrorCode.none
        assert _gauge(h, "LogManager", "OfflineLogDirectoryCount") == 1
        in_dir_a = sum(h.broker.logs.log_dir_of(plog) == a for plog in h.broker.logs.logs())
        assert in_dir_a >= 1 and _gauge(h, "ReplicaManager", "OfflineReplicaCount", "kafka.server") == in_dir_a
        assert halted == []
        disk = _FullDisk(monkeypatch, b)
        disk.on = True
        assert produce(h, "t", b"refused", partition=in_b).error_code == ErrorCode.kafka_storage_error
        h.settle()
        assert halted == [1] and _gauge(h, "LogManager", "OfflineLogDirectoryCount") == 2
        disk.on = False


def test_retention_the_cleaner_and_close_leave_an_offline_dir_alone(tmp_path, monkeypatch):
    """Retention and the cleaner work on online dirs only, and a close whose fsync fails on the offline dir does not
    fail the broker's shutdown (Kafka drops an offline dir's logs from its LogManager)."""
    logs, failures, (a, b), _ = _logs(tmp_path)
    in_a, in_b = logs.get_or_create("t", 0), logs.get_or_create("t", 1)
    failures.fail(a, OSError(errno.EIO, "I/O error"))
    assert logs.online_logs() == [in_b]
    checked = []
    monkeypatch.setattr(type(in_a), "apply_retention", lambda self: checked.append(self.partition) or 0)
    logs.run_retention()
    assert checked == [1]
    real_close = type(in_a).close

    def close(self):
        if self is in_a:
            raise OSError(errno.EIO, "I/O error")
        real_close(self)

    monkeypatch.setattr(type(in_a), "close", close)
    logs.close()   # raises nothing
