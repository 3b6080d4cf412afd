"""Each of the four clients keeps working across a leader change: produce, lose the leader (kill -9 or
SIGTERM), produce more with the same client, read everything back with it; nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from kafkascope.local.cluster import wait_for
from tests.replication.helpers import create_topic, metadata, topic_name
from tests.scenarios.clients import consume

SESSION_MS = 6000
PROPS = {"min.insync.replicas": 2, "zookeeper.session.timeout.ms": SESSION_MS}
N = 40
# kill -9 (the controller waits for the ZooKeeper session to expire) or SIGTERM (controlled shutdown)
HOW = {"confluent": "kill", "kafka-python": "stop", "aiokafka": "kill", "kcat": "stop"}


def _lose_leader(c, topic, how) -> int:
    old = metadata(c, [topic]).part(topic, 0).leader
    getattr(c.broker(old), how)()
    return old


def _wait_new_leader(c, topic, old) -> None:
    wait_for(lambda: metadata(c, [topic], exclude=(old,)).part(topic, 0).leader not in (old, -1),
             SESSION_MS / 1000 + 15, what="a new leader")


def _values(prefix: str, n: int = N) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _run_confluent(c, topic, how):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})
    errors = []

    def send(values):
        for v in values:
            p.produce(topic, value=v, partition=0, on_delivery=lambda err, msg: err and errors.append(err))
        assert p.flush(60) == 0
    send(_values("before"))
    old = _lose_leader(c, topic, how)
    send(_values("after"))   # sent while the partition fails over
    assert not errors, errors
    return old


def _run_kafka_python(c, topic, how):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                      retry_backoff_ms=100)
    try:
        for f in [p.send(topic, value=v, partition=0) for v in _values("before")]:
            f.get(timeout=30)
        old = _lose_leader(c, topic, how)
        for f in [p.send(topic, value=v, partition=0) for v in _values("after")]:
            f.get(timeout=60)
    finally:
        p.close(timeout=10)
    return old


def _run_aiokafka(c, topic, how):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=c.bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                             request_timeout_ms=40000)
        await p.start()
        try:
            await asyncio.gather(*[await p.send(topic, value=v, partition=0) for v in _values("before")])
            old = await asyncio.to_thread(_lose_leader, c, topic, how)
            await asyncio.gather(*[await p.send(topic, value=v, partition=0) for v in _values("after")])
            return old
        finally:
            await p.stop()
    return asyncio.run(asyncio.wait_for(run(), 90))


def _kcat_produce(bootstrap, topic, values):
    proc = subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-X", "acks=all",
                           "-X", "enable.idempotence=true", "-X", "topic.metadata.refresh.interval.ms=1000"],
                          input=b"".join(v + b"\n" for v in values), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()


def _run_kcat(c, topic, how):
    _kcat_produce(c.bootstrap, topic, _values("before"))
    old = _lose_leader(c, topic, how)
    _kcat_produce(c.bootstrap, topic, _values("after"))
    return old


def _read_back(client, c, topic) -> list[bytes]:
    if client == "kcat":
        proc = subprocess.run(["kcat", "-C", "-b", c.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
                               "-q", "-f", "%s\n"], capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()
        return proc.stdout.splitlines()
    return [r[3] for r in consume(client, c.bootstrap, topic, 2 * N, timeout_s=45)]


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka", "kcat"])
def test_client_keeps_working_across_a_leader_change(cluster_factory, client):
    c = cluster_factory(brokers=3, **PROPS)
    topic = topic_name(client.replace("-", ""))
    create_topic(c, topic, 1)
    run = {"confluent": _run_confluent, "kafka-python": _run_kafka_python, "aiokafka": _run_aiokafka,
           "kcat": _run_kcat}[client]
    old = run(c, topic, HOW[client])
    _wait_new_leader(c, topic, old)
    # every acknowledged record, once, in order (idempotent producers: retries across the failover
    # must not duplicate)
    assert _read_back(client, c, topic) == _values("before") + _values("after")
