"""Consumer groups on the new rebalance protocol (KIP-848, `group.protocol=consumer`) through confluent-kafka 2.16:
a group of three splits the partitions, a member leaves and one joins incrementally (the others never lose what
they keep: no stop-the-world), a kill -9'd member's partitions move after the broker-side session timeout,
commits read back through the admin client, OffsetDelete and DeleteGroups on such a group, and a full group
(`group.consumer.max.size`) refusing a newcomer.

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
import uuid
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, wait_until
from tests.scenarios import Broker

ROOT = Path(__file__).resolve().parents[2]
SESSION_MS = 4000
PARTITIONS = 6
MAX_SIZE = 3   # group.consumer.max.size: no other scenario has more than three members at once
# Kafka's minimums are 45 s (session) and 5 s (heartbeat); lowered on both brokers so a kill is noticed in seconds.
BROKER_PROPS = {"group.consumer.session.timeout.ms": SESSION_MS,
                "group.consumer.min.session.timeout.ms": 1000,
                "group.consumer.heartbeat.interval.ms": 500,
                "group.consumer.min.heartbeat.interval.ms": 100,
                "group.consumer.max.size": MAX_SIZE,
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


def _offsets(admin: AdminClient, group: str, tps: list[TopicPartition]) -> dict[tuple[str, int], int]:
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in fut.result(10).topic_partitions}


def _offset_delete(port: int, group: str, partitions: list[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
    """OffsetDelete v0 on the raw wire (confluent-kafka has no binding for it): (error, per-partition errors)."""
    topics: dict[str, list[int]] = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    with WireClient(port) as w:
        r = w.call(47, 0, {"group_id": group, "topics": [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in topics.items()]})
    return r.error_code, {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def _delete_group_error(admin: AdminClient, group: str) -> int:
    try:
        admin.delete_consumer_groups([group])[group].result(10)
    except KafkaException as e:
        return e.args[0].code()
    return KafkaError.NO_ERROR


def offsets_and_group_deleted(broker: Broker, topic: str, group: str) -> None:
    """OffsetDelete on a consumer group with a member subscribed to `topic`: `topic`'s offsets stay
    (GROUP_SUBSCRIBED_TO_TOPIC), those of a topic it does not subscribe to go (committed before the member joined,
    into the then classic group it converts). DeleteGroups: NON_EMPTY_GROUP while the member is in, then the group
    and its offsets go."""
    other = topic + "-other"
    create_topic(broker.port, topic, 2)
    create_topic(broker.port, other, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        p.produce(topic, value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def committed_by_admin() -> bool:    # a fresh Kafka answers COORDINATOR_LOAD_IN_PROGRESS per partition first
        done = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            group, [TopicPartition(other, 0, 3)])])[group].result(10)
        return all(tp.error is None for tp in done.topic_partitions)

    wait_until(committed_by_admin, 30, what="the admin's commit to the not yet existing group")
    wanted = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(other, 0)]
    m = Member(broker.bootstrap, topic, group)
    try:
        wait_until(lambda: m.committed == {0: 2, 1: 2}, 60, what="the member committed all it read")
        got = _offsets(admin, group, wanted)
        assert got == {(topic, 0): 2, (topic, 1): 2, (other, 0): 3}, got
        error, answered = _offset_delete(broker.port, group, [(topic, 0), (other, 0)])
        assert (error, answered) == (0, {(topic, 0): KafkaError.GROUP_SUBSCRIBED_TO_TOPIC, (other, 0): 0})
        assert _offsets(admin, group, wanted) == {(topic, 0): 2, (topic, 1): 2, (other, 0): -1001}
        assert _delete_group_error(admin, group) == KafkaError.NON_EMPTY_GROUP
    finally:
        m.close()
    assert _delete_group_error(admin, group) == KafkaError.NO_ERROR
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    assert set(_offsets(admin, group, wanted).values()) == {-1001}


def _heartbeat(port: int, group: str, member_id: str, epoch: int, topic: str) -> tuple[int, int]:
    """One raw ConsumerGroupHeartbeat v1 (a join carries the full subscription): (error code, member epoch)."""
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": None, "rack_id": None,
            "rebalance_timeout": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": None}
    if epoch == 0:
        body.update(rebalance_timeout=30_000, subscribed_topic_names=[topic], topic_partitions=[])
    with WireClient(port) as w:
        r = w.call(68, 1, body)
    return r.error_code, r.member_epoch


def full_group_refuses_a_newcomer(broker: Broker, topic: str, group: str) -> None:
    """group.consumer.max.size = MAX_SIZE: once MAX_SIZE members are in, a new member id gets
    GROUP_MAX_SIZE_REACHED while the members heartbeat on; after one leaves the newcomer gets in."""
    create_topic(broker.port, topic, 1)
    with WireClient(broker.port) as w:   # Kafka creates __consumer_offsets on the first FindCoordinator
        w.call(10, 4, {"key_type": 0, "coordinator_keys": [group]})
    ids = [str(uuid.uuid4()) for _ in range(MAX_SIZE + 1)]
    epochs: dict[str, int] = {}

    def joined(member_id: str) -> bool:
        error, epoch = _heartbeat(broker.port, group, member_id, 0, topic)
        epochs[member_id] = epoch
        return error == 0     # retried only while the coordinator loads (COORDINATOR_NOT_AVAILABLE, ...)

    for member_id in ids[:MAX_SIZE]:
        wait_until(lambda mid=member_id: joined(mid), 30, what=f"member {member_id} joined")
    newcomer = ids[MAX_SIZE]
    assert _heartbeat(broker.port, group, newcomer, 0, topic)[0] == KafkaError.GROUP_MAX_SIZE_REACHED
    first = ids[0]
    assert _heartbeat(broker.port, group, first, epochs[first], topic)[0] == 0
    assert _heartbeat(broker.port, group, first, -1, topic)[0] == 0
    assert _heartbeat(broker.port, group, newcomer, 0, topic)[0] == 0
    for member_id in ids[1:]:
        _heartbeat(broker.port, group, member_id, -1, topic)
