"""`kafkascope consumer-groups --list --type --state` and `--describe --state` with a KIP-848 group beside a
classic one, against our broker (which serves both protocols)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from kafkascope.cli import main


@pytest.fixture
def run(capsys, shared_broker):
    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["consumer-groups", "--bootstrap-server", shared_broker.bootstrap, *args])
        out, err = capsys.readouterr()
        return code, out, err
    return run


def _consume_one(consumer: Consumer, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            consumer.commit(message=msg, asynchronous=False)
            return
    raise AssertionError("no message consumed")


def test_list_and_describe_show_type_and_state(run, shared_broker, topic_name):
    p = Producer({"bootstrap.servers": shared_broker.bootstrap})
    p.produce(topic_name, b"v")
    assert p.flush(10) == 0
    new = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": f"new-{topic_name}",
                    "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    old = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": f"old-{topic_name}",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        for c in (new, old):
            c.subscribe([topic_name])
            _consume_one(c)
        old.close()   # the classic group is left Empty with its offset
        code, out, _ = run("--list", "--type", "--state")
        rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if line.strip()}
        assert code == 0 and out.splitlines()[1].split() == ["GROUP", "TYPE", "STATE"]
        assert rows[f"new-{topic_name}"] == ["Consumer", "Stable"]
        assert rows[f"old-{topic_name}"] == ["Classic", "Empty"]
        code, out, _ = run("--list", "--type", "consumer")
        assert f"new-{topic_name}" in out and f"old-{topic_name}" not in out
        code, out, _ = run("--describe", "--group", f"new-{topic_name}", "--state")
        header, row = [line for line in out.splitlines() if line.strip()]
        assert header.split()[-3:] == ["STATE", "TYPE", "#MEMBERS"] and row.split()[-3:] == ["Stable", "Consumer",
                                                                                               "1"]
        assert "uniform" in row
        assert run("--list", "--type", "share")[0] != 0
    finally:
        new.close()
