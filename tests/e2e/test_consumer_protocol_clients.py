"""confluent-kafka 2.16 consumers with group.protocol=consumer (KIP-848) against our broker process: a group of three
splits the partitions, a member leaves and one joins without the others losing theirs, a killed member's
partitions move after the (short, broker-side) session timeout, commits land and read back; the admin client
describes and lists the group by its type."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, wait_until

ROOT = Path(__file__).resolve().parents[2]
SESSION_MS = 4000
PARTITIONS = 6


class Member:
    """A consumer-protocol member in its own process; keeps every assignment it reported, in order."""

    def __init__(self, bootstrap: str, topic: str, group: str, instance: str | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.consumer_protocol_member", bootstrap, topic,
                                      group, *([instance] if instance else [])], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
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


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path, **{"group.consumer.session.timeout.ms": SESSION_MS,
                                   "group.consumer.min.session.timeout.ms": 1000,
                                   "group.consumer.heartbeat.interval.ms": 500,
                                   "group.consumer.min.heartbeat.interval.ms": 100,
                                   "group.initial.rebalance.delay.ms": 0})
    with b:
        yield b


def split(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition held by exactly one member, and the members within one partition of each other."""
    held = [m.assignment for m in members]
    union = set().union(*held)
    return (union == set(range(partitions)) and sum(map(len, held)) == partitions
            and max(map(len, held)) - min(map(len, held)) <= 1)


def never_lost(member: Member, since: int, kept: set[int]) -> bool:
    """Incremental: every assignment the member reported from `since` on still holds `kept`."""
    return all(kept <= a for a in member.history[since:])


def test_group_splits_leaves_joins_and_survives_a_kill(broker):
    create_topic(broker.port, "t", PARTITIONS)
    members = [Member(broker.bootstrap, "t", "g") for _ in range(3)]
    a, b, c = members
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
        d = Member(broker.bootstrap, "t", "g")
        members = [a, b, d]
        wait_until(lambda: split(members), 60, what="d took a share")
        for m, (since, before) in marks.items():
            assert m.assignment <= before and never_lost(m, since, m.assignment)

        # b is killed: after the session timeout its partitions go to a and d.
        marks = {m: (len(m.history), set(m.assignment)) for m in (a, d)}
        b.kill()
        wait_until(lambda: split([a, d]), SESSION_MS / 1000 + 30, what="b's partitions moved after its session")
        assert all(never_lost(m, since, kept) for m, (since, kept) in marks.items())
    finally:
        for m in members + [c]:
            if m.proc.poll() is None:
                m.kill()


def test_commits_and_committed_offsets(broker):
    create_topic(broker.port, "c", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce("c", value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    m = Member(broker.bootstrap, "c", "cg")
    try:
        wait_until(lambda: m.committed == {0: 5, 1: 5}, 60, what="the member committed all it read")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
            "cg", [TopicPartition("c", 0), TopicPartition("c", 1)])])["cg"]
        offsets = {tp.partition: tp.offset for tp in fut.result(10).topic_partitions}
        assert offsets == {0: 5, 1: 5}
        described = admin.describe_consumer_groups(["cg"])["cg"].result(10)
        assert described.type.name == "CONSUMER" and described.state.name == "STABLE"
        assert [sorted(tp.partition for tp in x.assignment.topic_partitions) for x in described.members] == [[0, 1]]
        listed = admin.list_consumer_groups().result(10).valid
        assert [(g.group_id, g.type.name) for g in listed] == [("cg", "CONSUMER")]
    finally:
        m.close()


def test_regex_subscription_follows_new_topics(broker):
    """librdkafka 2.16 sends "^r.*" as SubscribedTopicRegex; the broker resolves it, new topics included."""
    create_topic(broker.port, "r1", 1)
    create_topic(broker.port, "other", 1)
    m = Member(broker.bootstrap, "^r.*", "rg")
    try:
        wait_until(lambda: m.topics == {"r1"}, 60, what="r1 assigned through the regex")
        create_topic(broker.port, "r2", 1)
        wait_until(lambda: m.topics == {"r1", "r2"}, 60, what="r2 picked up once created")
    finally:
        m.close()


def _describe(bootstrap: str, group: str):
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept alive until the answer: a dropped client cancels
    return admin.describe_consumer_groups([group])[group].result(10)


def _epochs(port: int, group: str) -> tuple[int, int, list[int]]:
    """(group epoch, assignment epoch, member epochs) from ConsumerGroupDescribe."""
    with WireClient(port) as w:
        g = w.call(69, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]
        return g.group_epoch, g.assignment_epoch, [m.member_epoch for m in g.members]


def test_group_resumes_after_a_broker_kill(broker):
    """The group's records in __consumer_offsets bring it back: after kill -9 and a restart the member carries on
    with its member id and partitions, the group epoch unchanged, and its commits go on landing."""
    create_topic(broker.port, "k", 2)
    m = Member(broker.bootstrap, "k", "kg")
    try:
        wait_until(lambda: m.assignment == {0, 1}, 60, what="the member holds both partitions")
        before = _describe(broker.bootstrap, "kg")
        epochs = _epochs(broker.port, "kg")
        broker.kill()
        broker.start()
        p = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(4):
            p.produce("k", value=b"%d" % i, partition=i % 2)
        assert p.flush(30) == 0
        wait_until(lambda: m.committed == {0: 2, 1: 2}, 60, what="commits after the restart")
        after = _describe(broker.bootstrap, "kg")
        assert [x.member_id for x in after.members] == [x.member_id for x in before.members]
        assert _epochs(broker.port, "kg") == epochs   # no rejoin, no new target assignment
        assert m.history[-1] == {0, 1} and all(a == {0, 1} for a in m.history[1:])   # never reassigned
    finally:
        m.close()


def test_static_member_comes_back_to_its_partitions(broker):
    """group.instance.id: a closing static member leaves with epoch -2 and keeps its slot for the session timeout;
    the same instance restarted (new member id) gets the same partitions, with no new target assignment."""
    create_topic(broker.port, "s", 4)
    a, b = Member(broker.bootstrap, "s", "sg", "i-a"), Member(broker.bootstrap, "s", "sg", "i-b")
    members = [a, b]
    try:
        wait_until(lambda: split([a, b], 4), 60, what="two static members split four partitions")
        a_parts, b_since, b_parts = set(a.assignment), len(b.history), set(b.assignment)
        group_epoch, assignment_epoch, _ = _epochs(broker.port, "sg")
        a.close()
        a2 = Member(broker.bootstrap, "s", "sg", "i-a")
        members.append(a2)
        wait_until(lambda: a2.assignment == a_parts, 30, what="the instance got its partitions back")
        assert _epochs(broker.port, "sg")[:2] == (group_epoch, assignment_epoch)
        assert never_lost(b, b_since, b_parts)
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.kill()


JAVA_MEMBER = ROOT / "tests" / "e2e" / "java" / "ConsumerProtocolMember.java"


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK")
def test_kafka_4_java_consumer(broker):
    """Kafka 4.1's own KafkaConsumer (jars from Maven Central, the reference peer's) with group.protocol=consumer:
    it is assigned both partitions, reads and commits everything, and leaves the group empty when it closes."""
    from kafkascope.local.apache_kafka import DEFAULT_VERSION, ensure_kafka

    create_topic(broker.port, "j", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(6):
        p.produce("j", value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    libs = ensure_kafka(DEFAULT_VERSION)
    run = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_MEMBER), broker.bootstrap, "j", "jg", "6"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-2:] == ["assignment [0, 1]", "consumed 6"]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "jg", [TopicPartition("j", 0), TopicPartition("j", 1)])])["jg"]
    assert {tp.partition: tp.offset for tp in fut.result(10).topic_partitions} == {0: 3, 1: 3}
    described = admin.describe_consumer_groups(["jg"])["jg"].result(10)
    assert (described.type.name, described.state.name, described.members) == ("CONSUMER", "EMPTY", [])
