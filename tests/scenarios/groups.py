"""Consumer groups through the clients: a group of three rebalancing when a member leaves, commit and resume,
and a commit below the log start resetting to earliest."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from tests.e2e.helpers import create_topic, wait_until
from tests.scenarios import Broker
from tests.scenarios.clients import KCAT, SESSION_MS, group_consume, new_group, produce

ROOT = Path(__file__).resolve().parents[2]


class Member:
    """A group member in its own process; tracks the latest assignment it reported."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str) -> None:
        self.client = client
        if client == "kcat":   # kcat's balanced consumer reports its rebalances on stderr
            self.proc = subprocess.Popen([KCAT, "-b", bootstrap, "-G", group, "-X", f"session.timeout.ms={SESSION_MS}",
                                          "-X", "heartbeat.interval.ms=300", topic], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        else:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.group_member", client, bootstrap, topic,
                                          group, str(SESSION_MS)], cwd=ROOT, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assignment: list[int] | None = None
        self.closed = False
        self.reader = threading.Thread(target=self._read_kcat if client == "kcat" else self._read, daemon=True)
        self.reader.start()

    def _read_kcat(self) -> None:
        # "% Group g rebalanced (memberid m): assigned: t [0], t [1]"  /  "...: revoked: t [0], t [1]"
        for line in self.proc.stderr:
            if " rebalanced " in line and "assigned:" in line:
                self.assignment = sorted(int(x.split("]")[0]) for x in line.split("assigned:")[1].split("[")[1:])
            elif " rebalanced " in line and "revoked:" in line:
                self.assignment = []
        self.closed = self.proc.poll() == 0

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if line == "closed":
                self.closed = True
            elif line.startswith("{"):
                self.assignment = json.loads(line)["assignment"]

    def close(self) -> None:
        if self.client == "kcat":
            self.proc.terminate()   # kcat leaves the group and exits cleanly on SIGTERM
            assert self.proc.wait(30) == 0
            return
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        assert self.proc.wait(30) == 0, self.proc.stderr.read()
        self.reader.join(5)
        assert self.closed

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _owns_all(members: list[Member], n_partitions: int) -> bool | list:
    parts = [m.assignment for m in members]
    if any(not p for p in parts):
        return False
    flat = [x for p in parts for x in p]
    return sorted(flat) == list(range(n_partitions))   # every partition, each owned exactly once


def _why(members: list[Member]) -> str:
    return "; ".join(f"pid {m.proc.pid} rc={m.proc.poll()} assignment={m.assignment}" for m in members)


def group_of_three_rebalances(broker: Broker, topic: str, client: str, how: str) -> None:
    """Three members share the partitions; when one leaves (`how`: close or kill -9) two own them all."""
    n = 6
    create_topic(broker.port, topic, partitions=n)
    group = new_group()
    members = [Member(client, broker.bootstrap, topic, group) for _ in range(3)]
    try:
        try:
            wait_until(lambda: _owns_all(members, n), 60, what="3 members sharing all partitions")
        except AssertionError as e:
            raise AssertionError(f"{e}: {_why(members)}; broker log:\n{broker.log_tail(30)}") from None
        leaving, survivors = members[0], members[1:]
        leaving.close() if how == "close" else leaving.kill()
        # survivors only own all 6 partitions (2 each before) once the group rebalanced without the leaver
        try:
            wait_until(lambda: _owns_all(survivors, n), 60 if how == "close" else SESSION_MS / 1000 + 60,
                       what=f"2 survivors owning all partitions after {how}")
        except AssertionError as e:
            raise AssertionError(f"{e}: {_why(members)}; broker log:\n{broker.log_tail(30)}") from None
        for m in survivors:
            assert m.proc.poll() is None
    finally:
        for m in members:
            m.cleanup()


def commit_restart_resume(broker: Broker, topic: str, client: str) -> None:
    """A consumer commits, a new one in the group resumes exactly there, a third finds nothing."""
    create_topic(broker.port, topic)
    recs = [(None, f"r{i}".encode(), []) for i in range(20)]
    produce("confluent", broker.bootstrap, topic, recs, partition=0)
    group = new_group()
    got, committed = group_consume(client, broker.bootstrap, topic, group, want=10, commit_at=10)
    assert got[:10] == [(i, f"r{i}".encode()) for i in range(10)]
    assert committed == 10
    # a new consumer in the same group resumes exactly at the commit: no re-delivery, no loss
    got2, committed2 = group_consume(client, broker.bootstrap, topic, group, want=10,
                                      commit_at=20)
    assert got2 == [(i, f"r{i}".encode()) for i in range(10, 20)]
    assert committed2 == 20
    # and a third consumer finds nothing left
    got3, committed3 = group_consume(client, broker.bootstrap, topic, group, want=1, commit_at=None,
                                      timeout_s=4)
    assert got3 == [] and committed3 == 20


def commit_restart_resume_kcat(broker: Broker, topic: str) -> None:
    """kcat's balanced consumer (-G) commits what it consumed on exit; the next run resumes after it."""
    create_topic(broker.port, topic)
    produce("confluent", broker.bootstrap, topic, [(None, f"r{i}".encode(), []) for i in range(20)],
            partition=0)
    group = new_group()

    def run(count: int) -> list[str]:
        out = subprocess.run([KCAT, "-b", broker.bootstrap, "-G", group, "-c", str(count), "-f", "%o|%s\n",
                              "-X", "auto.offset.reset=earliest", "-X", f"session.timeout.ms={SESSION_MS}",
                              topic], check=True, timeout=60, capture_output=True)
        return out.stdout.decode().split()

    assert run(10) == [f"{i}|r{i}" for i in range(10)]
    assert run(10) == [f"{i}|r{i}" for i in range(10, 20)]
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 20
    finally:
        c.close()


def committed_offset_below_log_start_resets_to_earliest(broker: Broker, topic: str, client: str) -> None:
    """After DeleteRecords moves the log start past a group's commit, the consumer resets (earliest)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    create_topic(broker.port, topic)
    produce("confluent", broker.bootstrap, topic, [(None, f"r{i}".encode(), []) for i in range(10)],
            partition=0)
    group = new_group()
    group_consume(client, broker.bootstrap, topic, group, want=2, commit_at=2)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    tp = TopicPartition(topic, 0, 6)
    assert a.delete_records([tp])[tp].result(15).low_watermark == 6
    got, _ = group_consume(client, broker.bootstrap, topic, group, want=4, commit_at=None)
    assert got == [(i, f"r{i}".encode()) for i in range(6, 10)]
