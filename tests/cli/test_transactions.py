"""`kafkascope transactions` (kafka-transactions.sh list / describe / describe-producers) and
`console-consumer --isolation-level`, against our broker serving transactions (KIP-98)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkascope.cli.transactions import (
    DESCRIBE_HEADERS,
    LIST_HEADERS,
    PRODUCERS_HEADERS,
    pretty_table,
)
from kafkascope.local.broker_process import BrokerProcess
from tests.e2e.test_transactions import TXN_PROPS


@pytest.fixture(scope="module")
def txn_bootstrap(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("txn-cli"), **TXN_PROPS) as b:
        yield b.bootstrap


@pytest.fixture
def bootstrap(txn_bootstrap):   # the cli fixture (tests/cli/conftest.py) talks to this broker
    return txn_bootstrap


@contextmanager
def opened(bootstrap: str) -> Iterator[tuple[str, str]]:
    """A topic with one committed and one aborted transaction of 2 records each, then one left open (1 record)."""
    topic, tid = f"txn-cli-{uuid.uuid4().hex[:8]}", f"tid-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(30)
    for end, values in ((p.commit_transaction, (b"c1", b"c2")), (p.abort_transaction, (b"a1", b"a2"))):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v)
        p.flush(10)
        end(30)
    p.begin_transaction()
    p.produce(topic, b"open")
    p.flush(10)
    try:
        yield topic, tid
    finally:
        p.abort_transaction(30)


@pytest.fixture
def open_transaction(txn_bootstrap):
    with opened(txn_bootstrap) as made:
        yield made


def table(out: str) -> list[list[str]]:
    """kafka-transactions.sh's table: tab-ended cells, padded."""
    lines = out.splitlines()
    assert all(line.endswith("\t") for line in lines), out
    return [[c.strip() for c in line.split("\t")[:-1]] for line in lines]


def test_pretty_table_is_kafkas():
    assert pretty_table(("A", "Long"), [("xyz", "1"), ("", "22")]) == ["A  \tLong\t", "xyz\t1   \t", "   \t22  \t"]


def test_list_describe_and_describe_producers(cli, open_transaction):
    list_describe_and_describe_producers(cli, *open_transaction, coordinator="0")


def list_describe_and_describe_producers(cli: Callable[..., tuple[int, str, str]], topic: str, tid: str,
                                         coordinator: str) -> None:
    """The three actions on `opened`'s open transaction; `coordinator` is the single broker's id."""
    code, out, err = cli("transactions", "--list")
    assert code == 0, err
    rows = table(out)
    assert rows[0] == list(LIST_HEADERS)
    mine = [r for r in rows[1:] if r[0] == tid]
    assert len(mine) == 1 and mine[0][1] == coordinator and mine[0][3] == "Ongoing" and int(mine[0][2]) >= 0
    code, out, _ = cli("transactions", "list", "--transactional-id-pattern", "no-such-.*")   # Kafka's spelling
    assert code == 0 and table(out) == [list(LIST_HEADERS)]

    code, out, err = cli("transactions", "--describe", "--transactional-id", tid)
    assert code == 0, err
    rows = table(out)
    assert rows[0] == list(DESCRIBE_HEADERS)
    coord, got_tid, pid, epoch, state, timeout, start, duration, parts = rows[1]
    assert (coord, got_tid, state, parts) == (coordinator, tid, "Ongoing", f"{topic}-0")
    assert pid == mine[0][2] and int(epoch) >= 0 and int(timeout) > 0 and int(start) > 0 and int(duration) >= 0

    code, out, err = cli("transactions", "--describe-producers", "--topic", topic, "--partition", "0")
    assert code == 0, err
    rows = table(out)
    assert rows[0] == list(PRODUCERS_HEADERS)
    assert len(rows) == 2 and rows[1][0] == pid
    # the open transaction starts after 2 committed records, their marker, 2 aborted ones and theirs
    assert rows[1][5] == "6" and rows[1][1] == epoch


def test_describe_of_an_unknown_id_and_bad_usage(cli, open_transaction):
    code, out, err = cli("transactions", "--describe", "--transactional-id", "never-used")
    assert code == 1 and out == ""
    assert err.startswith("kafkascope transactions: error: Failed to describe transaction state of "
                          "transactional-id `never-used`: ")
    code, _, err = cli("transactions", "--describe")
    assert code == 2 and "--transactional-id" in err
    code, _, err = cli("transactions", "--describe-producers", "--topic", "nope", "--partition", "0")
    assert code == 1 and "Topic nope not found" in err
    code, _, err = cli("transactions")
    assert code == 2 and "--list" in err


def test_console_consumer_isolation_level(cli, open_transaction):
    topic, _ = open_transaction
    args = ("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "3000")
    code, out, err = cli(*args, "--isolation-level", "read_committed")
    assert (code, out) == (0, "c1\nc2\n"), err
    code, out, err = cli(*args, "--isolation-level", "read_uncommitted")
    assert (code, out) == (0, "c1\nc2\na1\na2\nopen\n"), err
    code, out, err = cli(*args)   # Kafka's default: read_uncommitted
    assert (code, out) == (0, "c1\nc2\na1\na2\nopen\n"), err
    code, _, err = cli(*args, "--isolation-level", "committed")
    assert code == 2 and "invalid choice" in err
