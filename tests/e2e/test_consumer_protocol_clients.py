"""confluent-kafka 2.16 consumers with group.protocol=consumer (KIP-848) against our broker process: a group of three
splits the partitions, a member leaves and one joins without the others losing theirs, a killed member's
partitions move after the (short, broker-side) session timeout, commits land and read back; the admin client
describes and lists the group by its type, offsets and the group are deleted, a full group refuses a newcomer.
The first four scenarios are shared with Apache Kafka 4.1
(tests/scenarios/consumer_protocol.py, tests/interop/test_consumer_protocol_kafka4.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, wait_until
from tests.scenarios import consumer_protocol
from tests.scenarios.consumer_protocol import BROKER_PROPS, ROOT, Member, never_lost, split


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path, **BROKER_PROPS)
    with b:
        yield b


def test_group_splits_leaves_joins_and_survives_a_kill(broker):
    consumer_protocol.splits_leaves_joins_and_survives_a_kill(broker, "t", "g")


def test_commits_and_committed_offsets(broker):
    # a fresh broker: the group is the only one listed
    assert consumer_protocol.commits_read_back(broker, "c", "cg") == [("cg", "CONSUMER")]


def test_offsets_and_group_deleted(broker):
    consumer_protocol.offsets_and_group_deleted(broker, "d", "dg")


def test_full_group_refuses_a_newcomer(broker):
    consumer_protocol.full_group_refuses_a_newcomer(broker, "f", "fg")


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
