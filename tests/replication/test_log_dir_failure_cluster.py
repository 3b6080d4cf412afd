"""A partition leader whose only log dir fails (its files can grow no further) halts, as a Kafka broker does
(LogManager.handleLogDirFailure), so the controller moves its leaderships: an idempotent acks=all producer goes on
against the new leaders, and every acknowledged record is read back once, in order. Before, the leader stayed
leader and refused every write with KAFKA_STORAGE_ERROR until an operator stepped in.

The full disk is RLIMIT_FSIZE set on the running broker (`prlimit`): a write past the limit fails with EFBIG, as
one on a full disk fails with ENOSPC, and only that broker's files are affected."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from kafkascope.local.cluster import wait_for
from tests.replication.helpers import (
    ContinuousProducer,
    check_acked_exactly_once_in_order,
    create_topic,
    metadata,
    produce_raw,
    read_partitions,
    topic_name,
)
from tests.replication.test_leader_failover import PARTITIONS, PROPS, SESSION_MS  # the same cluster settings

MARGIN = 256 * 1024   # room left on the "disk": less than the burst below writes to the victim's partition 0
BIG = b"x" * 64 * 1024


def _largest_file(root: Path) -> int:
    sizes = _file_sizes(root)
    return sizes[-1][0] if sizes else 0


def _file_sizes(root: Path) -> list[tuple[int, Path]]:
    """(size, path) of every file under `root`, smallest first."""
    return sorted((p.stat().st_size, p) for p in root.rglob("*") if p.is_file())


def test_a_leader_whose_log_dir_fails_halts_and_its_partitions_move(cluster_factory):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name("dirfail")
    create_topic(c, topic, PARTITIONS, rf=3)
    burst = topic_name("burst")
    create_topic(c, burst, 1, rf=3)
    before = metadata(c, [topic]).part(topic, 0)
    victim = c.broker(before.leader)
    prod = ContinuousProducer(c.bootstrap, topic, PARTITIONS).start()
    try:
        wait_for(lambda: prod.acked_since(300), 20, what="records acked before the disk fills")
        pid = victim.pid
        assert pid is not None
        limit = _largest_file(victim.data_dir) + MARGIN
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, limit))
        filled_at, acked_at = time.monotonic(), prod.acked_count()
        # A burst to another topic, which every broker hosts: the victim's first write past the limit, as
        # leader or as follower, takes its only log dir offline.
        outcomes = []
        for _ in range(2 * MARGIN // len(BIG) + 8):
            if victim.state != "running":
                break
            try:
                m = metadata(c, [burst], exclude=(victim.broker_id,))
                port = m.brokers.get(m.part(burst, 0).leader)
                outcomes.append(produce_raw(port, burst, 0, [BIG], acks=-1)[0] if port else "no leader")
            except (OSError, EOFError, ConnectionError, AssertionError) as e:
                outcomes.append(type(e).__name__)
        wait_for(lambda: victim.state != "running", 30, what="the victim to halt")
        assert "Shutdown broker because all log dirs" in victim.log_tail(300), victim.log_tail(40)
        after = wait_for(lambda: (m := metadata(c, [topic], exclude=(victim.broker_id,)).part(topic, 0)).leader
                         not in (victim.broker_id, -1) and m, SESSION_MS / 1000 + 30,
                         what="a new leader for partition 0")
        moved_s = time.monotonic() - filled_at
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
        wait_for(lambda: prod.acked_since(acked_at + 400), 30, what="acks after the failover")
        print(f"\nburst outcomes {outcomes}; new leader of partition 0 {moved_s:.1f} s after the limit was set")
    finally:
        prod.stop()
    assert not prod.failed, prod.failed[:5]
    read = read_partitions(c.bootstrap, topic, PARTITIONS)
    assert check_acked_exactly_once_in_order(prod.acked, read) == prod.sent


def _dir_of(broker, topic: str, p: int) -> str:
    """Which of the broker's two log dirs holds the partition."""
    found = [d for d in ("logs", "logs-2") if (broker.data_dir / d / f"{topic}-{p}").is_dir()]
    assert len(found) == 1, found
    return found[0]


def test_with_one_of_two_log_dirs_failed_the_broker_stays_and_only_that_dirs_leaderships_move(cluster_factory):
    """JBOD (two log dirs a broker): the failed dir's replicas go offline and the controller moves their leadership
    and takes them out of the ISRs (Kafka: the log dir event, then LeaderAndIsr answered KAFKA_STORAGE_ERROR); the
    broker stays up, its other dir's replicas stay in their ISRs, and after a restart the offline ones come back."""
    c = cluster_factory(brokers=3, log_dirs=2, **PROPS)
    topic = topic_name("jbod")
    create_topic(c, topic, PARTITIONS, rf=3)
    before = metadata(c, [topic]).part(topic, 0)
    victim = c.broker(before.leader)
    failed_dir = _dir_of(victim, topic, 0)
    same = [p for p in range(PARTITIONS) if _dir_of(victim, topic, p) == failed_dir]
    other = [p for p in range(PARTITIONS) if p not in same]
    assert other, "every partition in one dir"
    prod = ContinuousProducer(c.bootstrap, topic, PARTITIONS).start()
    try:
        wait_for(lambda: prod.acked_since(300), 20, what="records acked before the disk fills")
        for _ in range(16):   # partition 0's segment on the victim becomes its largest file by far
            assert produce_raw(victim.port, topic, 0, [BIG], acks=-1)[0] == 0
        segment = max((victim.data_dir / failed_dir / f"{topic}-0").glob("*.log"), key=lambda f: f.stat().st_size)
        limit = segment.stat().st_size + 64 * 1024
        # the segment is the largest file (compared by path: the running producer may still append to it)
        assert _file_sizes(victim.data_dir)[-1][1] == segment
        acked_at = prod.acked_count()
        resource.prlimit(victim.pid, resource.RLIMIT_FSIZE, (limit, limit))
        codes = [produce_raw(victim.port, topic, 0, [BIG], acks=-1)[0] for _ in range(3)]
        assert 56 in codes, codes   # KAFKA_STORAGE_ERROR

        def moved():
            m = metadata(c, [topic])
            return all(m.part(topic, p).leader not in (victim.broker_id, -1)
                       and victim.broker_id not in m.part(topic, p).isr for p in same) and m
        m = wait_for(moved, 30, what="the failed dir's leaderships moved and its replicas out of the ISRs")
        assert victim.state == "running"
        assert all(victim.broker_id in m.part(topic, p).isr for p in other)
        # Metadata lists the replica offline, as Kafka's does (kafka-topics.sh --describe: "Offline: <id>")
        assert all(victim.broker_id in m.part(topic, p).offline for p in same)
        assert not any(victim.broker_id in m.part(topic, p).offline for p in other)
        wait_for(lambda: prod.acked_since(acked_at + 400), 30, what="acks after the leaderships moved")
        assert "Shutdown broker" not in victim.log_tail(300)
        victim.restart()
        wait_for(lambda: all(victim.broker_id in metadata(c, [topic]).part(topic, p).isr for p in same), 60,
                 what="the restarted broker's replicas back in the ISRs")
    finally:
        prod.stop()
    assert not prod.failed, prod.failed[:5]
    read = read_partitions(c.bootstrap, topic, PARTITIONS)
    read = {p: [(o, v) for o, v in got if v != BIG] for p, got in read.items()}
    assert check_acked_exactly_once_in_order(prod.acked, read) == prod.sent
