"""Consumer groups on the new rebalance protocol (KIP-848, `group.protocol=consumer`) through confluent-kafka 2.16:
a group of three splits the partitions, a member leaves and one joins incrementally (the others never lose what
they keep: no stop-the-world), a kill -9'd member's partitions move after the broker-side session timeout, and
commits read back through the admin client.

Run by tests/e2e/test_consumer_protocol_clients.py (our broker) and tests/interop/test_consumer_protocol_kafka4.py
(Apache Kafka 4.1, single-node KRaft). Under this protocol the session timeout and heartbeat interval are the
broker's (`group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms`), so both brokers get
BROKER_PROPS; `session_ms` is what the broker was given.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.e2e.helpers import create_topic, wait_until
from tests.scenarios import Broker

ROOT = Path(__file__).resolve().parents[2]
SESSION_MS = 4000
PARTITIONS = 6
# Kafka's minimums are 45 s (session) and 5 s (heartbeat); lowered on both brokers so a kill is noticed in seconds.
BROKER_PROPS = {"group.consumer.session.timeout.ms": SESSION_MS,
                "group.consumer.min.session.timeout.ms": 1000,
                "group.consumer.heartbeat.interval.ms": 500,
                "group.consumer.min.heartbeat.interval.ms": 100,
                "group.initial.rebalance.delay.ms": 0}


class Member:
    """A consumer-protocol member in its own process; keeps every assignment it reported, in order."""

    def __init__(self, bootstrap: str, topic: str, group: str, instance: str | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.consumer_protocol_member", bootstrap, topic,
                                      group, *([instance] if instance else [])], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.history: list[set[int]] = []
        self.topics: set[str] = set()
        self.committed: dict[int, int] = {}
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line == "closed":
                self.closed = True
            elif line.startswith("{"):
                event = json.loads(line)
                if "assignment" in event:
                    self.history.append(set(event["assignment"]))
                    self.topics = set(event["topics"])
                else:
                    partition, offset = event["committed"]
                    self.committed[partition] = offset

    @property
    def assignment(self) -> set[int]:
        return self.history[-1] if self.history else set()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def kill_all(members: list[Member]) -> None:
    for m in members:
        if m.proc.poll() is None:
            m.kill()


def split(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition held by exactly one member, and the members within one partition of each other."""
    held = [m.assignment for m in members]
    union = set().union(*held)
    return (union == set(range(partitions)) and sum(map(len, held)) == partitions
            and max(map(len, held)) - min(map(len, held)) <= 1)


def never_lost(member: Member, since: int, kept: set[int]) -> bool:
    """Incremental: every assignment the member reported from `since` on still holds `kept`."""
    return all(kept <= a for a in member.history[since:])


def splits_leaves_joins_and_survives_a_kill(broker: Broker, topic: str, group: str,
                                            session_ms: int = SESSION_MS) -> None:
    """Three members split six partitions; c leaves, d joins, b is kill -9'd: at each step the survivors keep
    what they keep throughout (incremental), and the partitions end evenly split."""
    create_topic(broker.port, topic, PARTITIONS)
    members = [Member(broker.bootstrap, topic, group) for _ in range(3)]
    a, b, c = members
    everyone = list(members)
    try:
        wait_until(lambda: split(members), 60, what="three members split six partitions")
        assert [len(m.assignment) for m in members] == [2, 2, 2]

        # c leaves (epoch -1): a and b take its partitions and never give up their own meanwhile.
        marks = {m: (len(m.history), set(m.assignment)) for m in (a, b)}
        c.close()
        assert c.closed
        wait_until(lambda: split([a, b]), 30, what="c's partitions moved to a and b")
        assert all(never_lost(m, since, kept) for m, (since, kept) in marks.items())

        # d joins: it gets partitions only from what a and b give up; they keep the rest throughout.
        marks = {m: (len(m.history), set(m.assignment)) for m in (a, b)}
        d = Member(broker.bootstrap, topic, group)
        everyone.append(d)
        members = [a, b, d]
        wait_until(lambda: split(members), 60, what="d took a share")
        for m, (since, before) in marks.items():
            assert m.assignment <= before and never_lost(m, since, m.assignment)

        # b is killed: after the session timeout its partitions go to a and d.
        marks = {m: (len(m.history), set(m.assignment)) for m in (a, d)}
        b.kill()
        wait_until(lambda: split([a, d]), session_ms / 1000 + 30, what="b's partitions moved after its session")
        assert all(never_lost(m, since, kept) for m, (since, kept) in marks.items())
    finally:
        kill_all(everyone)


def commits_read_back(broker: Broker, topic: str, group: str) -> list[tuple[str, str]]:
    """One member reads and commits ten records on two partitions; the admin client reads the offsets back and
    describes and lists the group as a CONSUMER group, STABLE, the member holding both partitions. Returns every
    group ListGroups showed meanwhile, (id, type), for a caller that knows what else the broker holds."""
    create_topic(broker.port, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce(topic, value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    m = Member(broker.bootstrap, topic, group)
    try:
        wait_until(lambda: m.committed == {0: 5, 1: 5}, 60, what="the member committed all it read")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])])[group]
        offsets = {tp.partition: tp.offset for tp in fut.result(10).topic_partitions}
        assert offsets == {0: 5, 1: 5}
        described = admin.describe_consumer_groups([group])[group].result(10)
        assert described.type.name == "CONSUMER" and described.state.name == "STABLE"
        assert [sorted(tp.partition for tp in x.assignment.topic_partitions) for x in described.members] == [[0, 1]]
        # ConsumerGroupDescribe (KIP-848): the broker's default assignor, and the target reached
        (member,) = described.members
        assert described.partition_assignor == "uniform" and (member.client_id, member.host) == ("rdkafka",
                                                                                               "/127.0.0.1")
        assert sorted(tp.partition for tp in member.target_assignment.topic_partitions) == [0, 1]
        listed = [(g.group_id, g.type.name) for g in admin.list_consumer_groups().result(10).valid]
        assert [x for x in listed if x[0] == group] == [(group, "CONSUMER")]
        return listed
    finally:
        m.close()
