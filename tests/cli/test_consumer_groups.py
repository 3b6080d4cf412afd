"""`kafkascope consumer-groups`: describe with lag, reset-offsets plan/execute/refusal, delete."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from common.polling import wait_until

COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
           "CONSUMER-ID", "HOST", "CLIENT-ID"]


def _produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), f"k{i}".encode(), partition=0)
    assert p.flush(30) == 0


def _consume_and_commit(consumer: Consumer, n: int, timeout_s: float = 30) -> None:
    """Read n records and commit them synchronously; leaves the consumer in the group."""
    got, deadline = 0, time.monotonic() + timeout_s
    while got < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    assert got == n, f"consumed {got} of {n}"
    consumer.commit(asynchronous=False)


@pytest.fixture
def group_with_lag(bootstrap, cli, topic_name):
    """A group that committed 3 of 5 records on topic_name partition 0, still active."""
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    _produce(bootstrap, topic_name, 5)
    group = f"g-{topic_name}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "cli-test",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "max.poll.interval.ms": 60000, "session.timeout.ms": 10000})
    consumer.subscribe([topic_name])
    _consume_and_commit(consumer, 5)
    consumer.commit(offsets=[TopicPartition(topic_name, 0, 3)], asynchronous=False)
    yield group, consumer
    try:
        consumer.close()
    except RuntimeError:  # the test closed it already
        pass


def test_describe_columns_and_lag(cli, topic_name, group_with_lag):
    group, consumer = group_with_lag
    code, out, _ = cli("consumer-groups", "--describe", "--group", group)
    assert code == 0
    lines = [line for line in out.splitlines() if line]
    assert lines[0].split() == COLUMNS
    row = lines[1].split()
    assert row[:6] == [group, topic_name, "0", "3", "5", "2"]
    assert row[6].startswith("cli-test") and row[8] == "cli-test"
    assert row[7] == "/127.0.0.1"   # as kafka-consumer-groups.sh prints it: Java's InetAddress.toString()
    # Columns are aligned: every value starts where its header does.
    starts = [lines[0].index(c) for c in COLUMNS]
    assert [lines[1].index(v, s) for v, s in zip(row, starts, strict=True)] == starts

    code, out, _ = cli("consumer-groups", "--list")
    assert code == 0 and group in out.splitlines()


def test_reset_refused_while_active_then_dry_run_and_execute(cli, topic_name, group_with_lag):
    group, consumer = group_with_lag
    code, out, err = cli("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic_name,
                         "--to-earliest", "--execute")
    assert code == 1 and out == ""
    assert err == (f"kafkascope consumer-groups: error: Assignments can only be reset if the group "
                   f"'{group}' is inactive, but the current state is Stable.\n")
    consumer.close()

    def plan(*args: str) -> list[list[str]]:
        code, out, err = cli("consumer-groups", "--reset-offsets", "--group", group, *args)
        assert code == 0, err
        lines = [line.split() for line in out.splitlines() if line]
        assert lines[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
        return lines[1:]

    def current_offset() -> str:
        out = cli("consumer-groups", "--describe", "--group", group)[1]
        return next(line.split()[3] for line in out.splitlines() if line.split()[:2] == [group, topic_name])

    # The group is Empty once the consumer has left; awaited, since leaving is asynchronous.
    wait_until(lambda: "has no active members" in cli("consumer-groups", "--describe", "--group", group)[1], 20, 0.2,
               "the group becoming empty")

    assert plan("--topic", topic_name, "--to-earliest", "--dry-run") == [[group, topic_name, "0", "0"]]
    assert current_offset() == "3"  # a dry run changes nothing
    assert plan("--topic", f"{topic_name}:0", "--to-offset", "99", "--dry-run") == [[group, topic_name, "0", "5"]]
    assert plan("--all-topics", "--shift-by", "-2", "--execute") == [[group, topic_name, "0", "1"]]
    assert current_offset() == "1"
    assert plan("--topic", topic_name, "--to-datetime", "2000-01-01T00:00:00.000", "--execute") == [
        [group, topic_name, "0", "0"]]
    assert plan("--topic", topic_name, "--to-latest", "--execute") == [[group, topic_name, "0", "5"]]
    assert current_offset() == "5"

    code, out, _ = cli("consumer-groups", "--delete", "--group", group)
    assert (code, out) == (0, f"Deletion of requested consumer groups ('{group}') was successful.\n")
    code, _, err = cli("consumer-groups", "--describe", "--group", group)
    assert code == 1 and err.endswith(f"Consumer group '{group}' does not exist.\n")
