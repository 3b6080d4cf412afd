"""Unmodified Kafka clients (confluent-kafka, kafka-python, aiokafka, kcat) against the real broker subprocess."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.e2e.helpers import batches, create_topic, list_offset, topic_error, topic_id, wait_until

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CLIENTS = ["confluent", "kafka-python", "aiokafka", "kcat"]
PY_CLIENTS = ["confluent", "kafka-python", "aiokafka"]
KCAT = "kcat"

# Values are long and repetitive so that every codec really shrinks them (librdkafka sends a batch
# uncompressed when compression does not help).
PAD = b"-abcdefgh" * 40

# (key, value, headers): keys, a null key, empty key, binary bytes, repeated and empty header values.
RECORDS: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]] = [
    (b"k1", b"v1" + PAD, [("h1", b"a")]),
    (None, b"null-key" + PAD, [("h2", b"b"), ("h2", b"c")]),
    (b"k2", b"\x00\x01\xff binary" + PAD, []),
    (b"", b"empty-key" + PAD, [("e", b"")]),
    (b"k\xc3\xa9", "unicodé".encode() + PAD, [("x-trace", b"\x00\xfe")]),
] + [(f"key-{i}".encode(), f"value-{i}".encode() + PAD, [("n", str(i).encode())]) for i in range(20)]


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


# ---------------------------------------------------------------- per-client produce / consume

def produce(client: str, bootstrap: str, topic: str, recs, codec: str = "none", partition: int | None = None,
            **extra) -> None:
    if client == "confluent":
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 50, **extra})
        errors = []
        for k, v, h in recs:
            kw = {} if partition is None else {"partition": partition}
            p.produce(topic, key=k, value=v, headers=h or None,
                      on_delivery=lambda err, msg: err and errors.append(err), **kw)
        assert p.flush(30) == 0
        assert not errors, errors
    elif client == "kafka-python":
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                          linger_ms=50, **extra)
        futs = [p.send(topic, key=k, value=v, headers=h, partition=partition) for k, v, h in recs]
        for f in futs:
            f.get(timeout=30)
        p.close(timeout=10)
    elif client == "aiokafka":
        from aiokafka import AIOKafkaProducer

        async def run():
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                                 linger_ms=50, **extra)
            await p.start()
            try:
                futs = [await p.send(topic, key=k, value=v, headers=h, partition=partition) for k, v, h in recs]
                await asyncio.gather(*futs)
            finally:
                await p.stop()
        asyncio.run(asyncio.wait_for(run(), 60))
    else:
        raise ValueError(client)


def consume(client: str, bootstrap: str, topic: str, n: int, partitions=(0,), timeout_s: float = 30.0,
            **conf):
    """Read `n` records from the beginning of `partitions` (no group offsets): (partition, offset, key, value,
    headers, timestamp, timestamp_type)."""
    out = []
    deadline = time.monotonic() + timeout_s
    if client == "confluent":
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": _group(), "enable.auto.commit": False, **conf})
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        try:
            while len(out) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                assert m.error() is None, m.error()
                ts_type, ts = m.timestamp()
                out.append((m.partition(), m.offset(), m.key(), m.value(), list(m.headers() or []), ts, ts_type))
        finally:
            c.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                          auto_offset_reset="earliest", **conf)
        c.assign([TopicPartition(topic, p) for p in partitions])
        try:
            while len(out) < n and time.monotonic() < deadline:
                for _tp, msgs in c.poll(timeout_ms=500).items():
                    for m in msgs:
                        out.append((m.partition, m.offset, m.key, m.value, list(m.headers), m.timestamp,
                                    m.timestamp_type))
        finally:
            c.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", **conf)
            await c.start()
            try:
                c.assign([TopicPartition(topic, p) for p in partitions])
                while len(out) < n and time.monotonic() < deadline:
                    for _tp, msgs in (await c.getmany(timeout_ms=500)).items():
                        for m in msgs:
                            out.append((m.partition, m.offset, m.key, m.value, list(m.headers), m.timestamp,
                                        m.timestamp_type))
            finally:
                await c.stop()
        asyncio.run(asyncio.wait_for(run(), timeout_s + 30))
    else:
        raise ValueError(client)
    out.sort(key=lambda r: (r[0], r[1]))
    return out


def _norm_headers(h):
    return [(k, bytes(v) if v is not None else None) for k, v in h]


# ---------------------------------------------------------------- 1. produce + consume round trip per codec

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PY_CLIENTS)
def test_roundtrip_keys_nullkeys_headers(shared_broker, topic_name, client, codec):
    create_topic(shared_broker.port, topic_name)
    produce(client, shared_broker.bootstrap, topic_name, RECORDS, codec, partition=0)
    got = consume(client, shared_broker.bootstrap, topic_name, len(RECORDS))
    assert [r[1] for r in got] == list(range(len(RECORDS)))
    assert [(k, v, _norm_headers(h)) for _, _, k, v, h, _, _ in got] == RECORDS
    # the codec really was used on the wire, and the broker stored the batch as the producer sent it
    codecs = {h.compression for h, _ in batches(shared_broker.port, topic_name)}
    assert codecs == {CODEC_ID[codec]}


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_kcat(shared_broker, topic_name, codec):
    create_topic(shared_broker.port, topic_name)
    # kcat reads "key:value" lines; a line without the delimiter has a null key. -H applies to every record.
    lines = [(f"key-{i}" if i % 3 else None, f"value-{i}-" + "abcdefgh" * 30) for i in range(30)]
    data = "".join((f"{k}:{v}" if k is not None else v) + "\n" for k, v in lines)
    subprocess.run([KCAT, "-P", "-b", shared_broker.bootstrap, "-t", topic_name, "-p", "0", "-K:",
                    "-H", "h1=one", "-H", "h2=two", "-X", f"compression.codec={codec}"],
                   input=data.encode(), check=True, timeout=60, capture_output=True)
    out = subprocess.run([KCAT, "-C", "-b", shared_broker.bootstrap, "-t", topic_name, "-p", "0", "-o",
                          "beginning", "-e", "-Z", "-f", "%o|%K|%k|%s|%h\n"],
                         check=True, timeout=60, capture_output=True).stdout.decode()
    rows = [line.split("|") for line in out.splitlines() if line]
    assert [int(r[0]) for r in rows] == list(range(len(lines)))
    assert [(None if r[1] == "-1" else r[2], r[3]) for r in rows] == lines
    assert {r[4] for r in rows} == {"h1=one,h2=two"}
    codecs = {h.compression for h, _ in batches(shared_broker.port, topic_name)}
    assert codecs == {CODEC_ID[codec]}
    # and the Python clients read kcat's records (and its codec) back identically
    got = consume("kafka-python", shared_broker.bootstrap, topic_name, len(lines))
    assert [(k, v) for _, _, k, v, *_ in got] == [(None if k is None else k.encode(), v.encode())
                                                  for k, v in lines]
    assert {tuple(_norm_headers(r[4])) for r in got} == {(("h1", b"one"), ("h2", b"two"))}


@pytest.mark.parametrize("consumer", CLIENTS)
@pytest.mark.parametrize("producer", PY_CLIENTS)
def test_cross_client_readback(shared_broker, topic_name, producer, consumer):
    """Each Python producer's records are read identically by every consumer (zstd, the newest codec)."""
    create_topic(shared_broker.port, topic_name)
    recs = RECORDS[:8]
    produce(producer, shared_broker.bootstrap, topic_name, recs, "zstd", partition=0)
    if consumer == "kcat":
        out = subprocess.run([KCAT, "-C", "-b", shared_broker.bootstrap, "-t", topic_name, "-p", "0", "-o",
                              "beginning", "-e", "-c", str(len(recs)), "-f", "%K|%S\n"],
                             check=True, timeout=60, capture_output=True).stdout.decode()
        assert out.split() == [f"{-1 if k is None else len(k)}|{len(v)}" for k, v, _ in recs]
        return
    got = consume(consumer, shared_broker.bootstrap, topic_name, len(recs))
    assert [(k, v, _norm_headers(h)) for _, _, k, v, h, _, _ in got] == recs


# ---------------------------------------------------------------- 2. a 3-member group rebalances on close and on kill -9

ROOT = Path(__file__).resolve().parents[2]
SESSION_MS = 6000


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


@pytest.mark.parametrize("how", ["close", "kill"])
@pytest.mark.parametrize("client", CLIENTS)
def test_group_of_three_rebalances(shared_broker, topic_name, client, how):
    n = 6
    create_topic(shared_broker.port, topic_name, partitions=n)
    group = _group()
    members = [Member(client, shared_broker.bootstrap, topic_name, group) for _ in range(3)]
    try:
        try:
            wait_until(lambda: _owns_all(members, n), 60, what="3 members sharing all partitions")
        except AssertionError as e:
            raise AssertionError(f"{e}: {_why(members)}; broker log:\n{shared_broker.log_tail(30)}") from None
        leaving, survivors = members[0], members[1:]
        leaving.close() if how == "close" else leaving.kill()
        # survivors only own all 6 partitions (2 each before) once the group rebalanced without the leaver
        try:
            wait_until(lambda: _owns_all(survivors, n), 60 if how == "close" else SESSION_MS / 1000 + 60,
                       what=f"2 survivors owning all partitions after {how}")
        except AssertionError as e:
            raise AssertionError(f"{e}: {_why(members)}; broker log:\n{shared_broker.log_tail(30)}") from None
        for m in survivors:
            assert m.proc.poll() is None
    finally:
        for m in members:
            m.cleanup()


# ---------------------------------------------------------------- 3. commit, restart the consumer, resume

def _group_consume(client: str, bootstrap: str, topic: str, group: str, want: int, commit_at: int | None,
                   timeout_s: float = 30.0):
    """Subscribe with `group`, read until `want` records arrived; optionally commit offset `commit_at` (sync).
    Returns (records as (offset, value), committed offset read back)."""
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    common = dict(session_ms=SESSION_MS)
    if client == "confluent":
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": common["session_ms"]})
        c.subscribe([topic])
        try:
            while len(got) < want and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append((m.offset(), m.value()))
            if commit_at is not None:
                c.commit(offsets=[TopicPartition(topic, 0, commit_at)], asynchronous=False)
            committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        finally:
            c.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, session_timeout_ms=common["session_ms"],
                          heartbeat_interval_ms=500)
        tp = TopicPartition(topic, 0)
        try:
            while len(got) < want and time.monotonic() < deadline:
                for msgs in c.poll(timeout_ms=500).values():
                    got.extend((m.offset, m.value) for m in msgs)
            if commit_at is not None:
                c.commit({tp: OffsetAndMetadata(commit_at, "", -1)})
            committed = c.committed(tp)
        finally:
            c.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, session_timeout_ms=common["session_ms"],
                                 heartbeat_interval_ms=500)
            await c.start()
            tp = TopicPartition(topic, 0)
            try:
                while len(got) < want and time.monotonic() < deadline:
                    for msgs in (await c.getmany(timeout_ms=500)).values():
                        got.extend((m.offset, m.value) for m in msgs)
                if commit_at is not None:
                    await c.commit({tp: commit_at})
                return await c.committed(tp)
            finally:
                await c.stop()
        committed = asyncio.run(asyncio.wait_for(run(), timeout_s + 30))
    else:
        raise ValueError(client)
    return got, committed


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_commit_restart_resume(shared_broker, topic_name, client):
    create_topic(shared_broker.port, topic_name)
    recs = [(None, f"r{i}".encode(), []) for i in range(20)]
    produce("confluent", shared_broker.bootstrap, topic_name, recs, partition=0)
    group = _group()
    got, committed = _group_consume(client, shared_broker.bootstrap, topic_name, group, want=10, commit_at=10)
    assert got[:10] == [(i, f"r{i}".encode()) for i in range(10)]
    assert committed == 10
    # a new consumer in the same group resumes exactly at the commit: no re-delivery, no loss
    got2, committed2 = _group_consume(client, shared_broker.bootstrap, topic_name, group, want=10,
                                      commit_at=20)
    assert got2 == [(i, f"r{i}".encode()) for i in range(10, 20)]
    assert committed2 == 20
    # and a third consumer finds nothing left
    got3, committed3 = _group_consume(client, shared_broker.bootstrap, topic_name, group, want=1, commit_at=None,
                                      timeout_s=4)
    assert got3 == [] and committed3 == 20


# ---------------------------------------------------------------- 4. admin APIs

def _wait_assigned_confluent(bootstrap: str, topic: str, group: str):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": SESSION_MS})
    c.subscribe([topic])
    wait_until(lambda: c.poll(0.2) is not None or c.assignment(), 30, interval_s=0, what="assignment")
    return c


def test_admin_confluent(shared_broker):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ResourceType,
    )
    bs = shared_broker.bootstrap
    a = AdminClient({"bootstrap.servers": bs})
    t = f"adm-{uuid.uuid4().hex[:8]}"

    a.create_topics([NewTopic(t, num_partitions=2, replication_factor=1,
                              config={"retention.ms": "3600000"})])[t].result(15)
    md = a.list_topics(t, timeout=10)
    assert t in md.topics and len(md.topics[t].partitions) == 2
    # duplicate create is an error
    with pytest.raises(Exception, match="(?i)exist"):
        a.create_topics([NewTopic(t, num_partitions=1, replication_factor=1)])[t].result(15)

    a.create_partitions([NewPartitions(t, 4)])[t].result(15)
    wait_until(lambda: len(a.list_topics(t, timeout=10).topics[t].partitions) == 4, 15, what="4 partitions")

    res = ConfigResource(ResourceType.TOPIC, t)
    cfg = a.describe_configs([res])[res].result(15)
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["cleanup.policy"].value == "delete" and cfg["cleanup.policy"].is_default

    # AlterConfigs replaces the whole set: retention.ms reverts to its default
    fut = a.alter_configs([ConfigResource(ResourceType.TOPIC, t, set_config={"segment.ms": "7200000"})])
    for f in fut.values():
        f.result(15)
    cfg = a.describe_configs([res])[res].result(15)
    assert cfg["segment.ms"].value == "7200000"
    assert cfg["retention.ms"].is_default
    # IncrementalAlterConfigs changes only what it names
    inc = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", "1800000", incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([inc]).values():
        f.result(15)
    cfg = a.describe_configs([res])[res].result(15)
    assert cfg["retention.ms"].value == "1800000" and cfg["segment.ms"].value == "7200000"
    inc = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("segment.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    for f in a.incremental_alter_configs([inc]).values():
        f.result(15)
    cfg = a.describe_configs([res])[res].result(15)
    assert cfg["segment.ms"].is_default and cfg["retention.ms"].value == "1800000"
    # broker resource
    bres = ConfigResource(ResourceType.BROKER, "0")
    bcfg = a.describe_configs([bres])[bres].result(15)
    assert "log.retention.check.interval.ms" in bcfg or "num.partitions" in bcfg

    # records for list_offsets / delete_records
    from confluent_kafka import Producer
    prod = Producer({"bootstrap.servers": bs})
    now = int(time.time() * 1000)
    for i in range(10):   # the largest timestamp is at offset 7
        prod.produce(t, value=f"v{i}".encode(), partition=0, timestamp=now + (100 if i == 7 else i))
    assert prod.flush(15) == 0
    tp = TopicPartition(t, 0)
    offs = {name: a.list_offsets({tp: spec})[tp].result(15).offset
            for name, spec in [("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()),
                               ("max", OffsetSpec.max_timestamp())]}
    assert offs == {"earliest": 0, "latest": 10, "max": 7}
    deleted = a.delete_records([TopicPartition(t, 0, 4)])[TopicPartition(t, 0, 4)].result(15)
    assert deleted.low_watermark == 4
    assert a.list_offsets({tp: OffsetSpec.earliest()})[tp].result(15).offset == 4

    # groups: one live member
    group = _group()
    c = _wait_assigned_confluent(bs, t, group)
    try:
        listed = a.list_consumer_groups().result(15)
        assert group in {g.group_id for g in listed.valid}
        desc = a.describe_consumer_groups([group])[group].result(15)
        assert desc.group_id == group and len(desc.members) == 1
        assert str(desc.state).upper().endswith("STABLE")
        assert {p.partition for p in desc.members[0].assignment.topic_partitions} == {0, 1, 2, 3}
        # a non-empty group cannot be deleted
        with pytest.raises(Exception, match="(?i)non.?empty|not empty"):
            a.delete_consumer_groups([group])[group].result(15)
    finally:
        c.close()
    a.delete_consumer_groups([group])[group].result(15)
    assert group not in {g.group_id for g in a.list_consumer_groups().result(15).valid}

    cl = a.describe_cluster().result(15)
    assert [n.port for n in cl.nodes] == [shared_broker.port]
    assert cl.controller.id == cl.nodes[0].id

    a.delete_topics([t])[t].result(15)
    wait_until(lambda: topic_error(shared_broker.port, t) == 3, 15, what="topic gone")


def test_confluent_list_all_topics(shared_broker, topic_name):
    """librdkafka 2.16's all-topics Metadata v12 carries 3 stale bytes after the body; Kafka ignores them."""
    from confluent_kafka.admin import AdminClient
    create_topic(shared_broker.port, topic_name)
    a = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    assert topic_name in a.list_topics(timeout=10).topics


def test_admin_kafka_python(shared_broker):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    bs = shared_broker.bootstrap
    a = KafkaAdminClient(bootstrap_servers=bs)
    t = f"adm-{uuid.uuid4().hex[:8]}"
    try:
        a.create_topics({t: {"num_partitions": 2, "replication_factor": 1, "configs": {"retention.ms": "3600000"}}})
        assert t in a.list_topics()
        assert len(a.describe_topics([t])[0]["partitions"]) == 2

        res = ConfigResource(ConfigResourceType.TOPIC, t)
        desc = a.describe_configs([res], config_filter="all")
        cfg = _kp_configs(desc)
        assert cfg["retention.ms"] == "3600000" and cfg["cleanup.policy"] == "delete"
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, configs={"segment.ms": "7200000"})])
        cfg = _kp_configs(a.describe_configs([res], config_filter="all"))
        assert cfg["segment.ms"] == "7200000" and cfg["retention.ms"] == "3600000"   # incremental by default

        a.create_partitions({t: 3})
        wait_until(lambda: len(a.describe_topics([t])[0]["partitions"]) == 3, 15, what="3 partitions")

        produce("kafka-python", bs, t, [(None, f"v{i}".encode(), []) for i in range(10)], partition=0)
        a.delete_records({TopicPartition(t, 0): 6})
        assert list_offset(shared_broker.port, t, 0, -2) == 6

        group = _group()
        c = KafkaConsumer(t, bootstrap_servers=bs, group_id=group, session_timeout_ms=SESSION_MS,
                          heartbeat_interval_ms=500)
        try:
            wait_until(lambda: c.poll(timeout_ms=200) is not None and c.assignment(), 30, interval_s=0)
            listed = a.list_groups()
            assert group in _kp_group_ids(listed)
            desc = a.describe_groups([group])
            d = desc[0] if isinstance(desc, list) else desc[group]
            d = d if isinstance(d, dict) else d._asdict()
            assert d["group_id"] == group and str(d.get("group_state", d.get("state"))).lower().endswith("stable")
            assert len(d["members"]) == 1
        finally:
            c.close()
        result = a.delete_groups([group])
        assert all(_kp_ok(err) for _g, err in _kp_pairs(result)), result
        assert group not in _kp_group_ids(a.list_groups())

        cl = a.describe_cluster()
        assert [b["port"] for b in cl["brokers"]] == [shared_broker.port]

        before = topic_id(shared_broker.port, t)
        a.delete_topics([t])
        # kafka-python's admin keeps the topic in its metadata and refreshes it with auto-creation allowed,
        # so the name may come straight back, as with Kafka: then it is a new topic with a new id.
        wait_until(lambda: topic_id(shared_broker.port, t) != before, 15, what="topic deleted")
    finally:
        a.close()


def _kp_configs(desc) -> dict[str, str]:
    """kafka-python 3's describe_configs result {"topic": {name: {config: {"value": ...}}}} → {config: value}."""
    return {k: c["value"] for per_type in desc.values() for cfgs in per_type.values() for k, c in cfgs.items()}


def _kp_group_ids(listed) -> set[str]:
    ids = set()
    for g in listed:
        if isinstance(g, dict):
            ids.add(g.get("group_id") or g.get("group"))
        elif isinstance(g, tuple | list):
            ids.add(g[0])
        else:
            ids.add(getattr(g, "group_id", g))
    return ids


def _kp_pairs(result):
    return result.items() if isinstance(result, dict) else result


def _kp_ok(err) -> bool:
    return err is None or err in ("NoError", 0) or getattr(err, "errno", 0) == 0


def test_admin_aiokafka(shared_broker):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    bs = shared_broker.bootstrap
    t = f"adm-{uuid.uuid4().hex[:8]}"

    def configs(resp) -> dict[str, str]:
        return {e[0]: e[1] for r in resp for res in r.resources for e in res[4]}

    async def main():
        a = AIOKafkaAdminClient(bootstrap_servers=bs)
        await a.start()
        try:
            r = await a.create_topics([NewTopic(t, 2, 1, topic_configs={"retention.ms": "3600000"})])
            assert [e[1] for e in r.topic_errors] == [0]
            assert t in await a.list_topics()
            r = await a.create_topics([NewTopic(t, 2, 1)])
            assert [e[1] for e in r.topic_errors] == [36]   # TOPIC_ALREADY_EXISTS

            res = ConfigResource(ConfigResourceType.TOPIC, t)
            cfg = configs(await a.describe_configs([res]))
            assert cfg["retention.ms"] == "3600000" and cfg["cleanup.policy"] == "delete"
            # AlterConfigs (non-incremental) replaces the topic's whole override set
            r = await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, configs={"segment.ms": "7200000"})])
            assert [x[0] for x in r[0].resources] == [0]
            cfg = configs(await a.describe_configs([res]))
            assert cfg["segment.ms"] == "7200000" and cfg["retention.ms"] == str(7 * 24 * 3600 * 1000)

            r = await a.create_partitions({t: NewPartitions(3)})
            assert [e[1] for e in r.topic_errors] == [0]
            assert len((await a.describe_topics([t]))[0]["partitions"]) == 3

            await asyncio.to_thread(produce, "confluent", bs, t, [(None, f"v{i}".encode(), []) for i in range(10)],
                                    partition=0)
            low = await a.delete_records({TopicPartition(t, 0): RecordsToDelete(5)})
            assert low == {TopicPartition(t, 0): 5}

            group = _group()
            c = AIOKafkaConsumer(t, bootstrap_servers=bs, group_id=group, session_timeout_ms=SESSION_MS,
                                 heartbeat_interval_ms=500, auto_offset_reset="earliest", enable_auto_commit=False)
            await c.start()
            try:
                for _ in range(100):
                    await c.getmany(timeout_ms=200)
                    if c.assignment():
                        break
                assert c.assignment()
                await c.commit({TopicPartition(t, 0): 7})
                assert group in {g[0] for g in await a.list_consumer_groups()}
                d = (await a.describe_consumer_groups([group]))[0].groups[0]
                assert d[0] == 0 and d[1] == group and d[2] == "Stable" and len(d[5]) == 1
                offs = await a.list_consumer_group_offsets(group)
                assert offs[TopicPartition(t, 0)].offset == 7
            finally:
                await c.stop()

            cl = await a.describe_cluster()
            assert [b["port"] for b in cl["brokers"]] == [shared_broker.port] and cl["controller_id"] == 0

            r = await a.delete_topics([t])
            assert [e[1] for e in r.topic_error_codes] == [0]
            assert t not in await a.list_topics()
        finally:
            await a.close()
    asyncio.run(asyncio.wait_for(main(), 90))


# ---------------------------------------------------------------- 5. same key → same partition across clients

def test_keyed_partitioning_agrees_across_clients(shared_broker, topic_name):
    n_parts = 8
    create_topic(shared_broker.port, topic_name, partitions=n_parts)
    keys = [f"user-{i}".encode() for i in range(24)]
    bs = shared_broker.bootstrap
    for client in PY_CLIENTS:
        extra = {"partitioner": "murmur2_random"} if client == "confluent" else {}
        produce(client, bs, topic_name, [(k, client.encode(), []) for k in keys], **extra)
    data = "".join(f"{k.decode()}:kcat\n" for k in keys)
    subprocess.run([KCAT, "-P", "-b", bs, "-t", topic_name, "-K:", "-X", "partitioner=murmur2_random"],
                   input=data.encode(), check=True, timeout=60, capture_output=True)
    got = consume("kafka-python", bs, topic_name, 4 * len(keys), partitions=range(n_parts))
    assert len(got) == 4 * len(keys)
    where: dict[bytes, dict[str, int]] = {}
    for part, _off, k, v, *_ in got:
        where.setdefault(k, {})[v.decode()] = part
    assert set(where) == set(keys)
    for k, by_client in where.items():
        assert set(by_client) == {*PY_CLIENTS, "kcat"}, k
        assert len(set(by_client.values())) == 1, (k, by_client)
    assert len({next(iter(v.values())) for v in where.values()}) > 1   # keys really spread over partitions


# ---------------------------------------------------------------- 6. idempotent producers

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_idempotent_producer(shared_broker, topic_name, client):
    create_topic(shared_broker.port, topic_name, partitions=2)
    extra = {"confluent": {"enable.idempotence": True}, "kafka-python": {},   # kafka-python: on by default
             "aiokafka": {"enable_idempotence": True}}[client]
    recs = [(f"k{i % 5}".encode(), f"v{i}".encode(), []) for i in range(200)]
    produce(client, shared_broker.bootstrap, topic_name, recs, **extra)
    produce(client, shared_broker.bootstrap, topic_name, recs[:50], **extra)   # a second producer session
    got = consume(client, shared_broker.bootstrap, topic_name, 250, partitions=(0, 1))
    values = [r[3] for r in got]
    assert sorted(values) == sorted([v for _, v, _ in recs] + [v for _, v, _ in recs[:50]])
    # every stored batch carries a producer id, and sequences per (producer, partition) are gap-free
    for p in (0, 1):
        hs = [h for h, _ in batches(shared_broker.port, topic_name, p)]
        assert hs and all(h.producer_id >= 0 and h.producer_epoch >= 0 for h in hs)
        by_pid: dict[int, list] = {}
        for h in hs:
            by_pid.setdefault(h.producer_id, []).append(h)
        assert len(by_pid) == 2   # two producer sessions, two producer ids
        for seq in by_pid.values():
            assert seq[0].base_sequence == 0
            for a, b in zip(seq, seq[1:], strict=False):
                assert b.base_sequence == a.base_sequence + a.last_offset_delta + 1


def test_commit_restart_resume_kcat(shared_broker, topic_name):
    """kcat's balanced consumer (-G) commits what it consumed on exit; the next run resumes after it."""
    create_topic(shared_broker.port, topic_name)
    produce("confluent", shared_broker.bootstrap, topic_name, [(None, f"r{i}".encode(), []) for i in range(20)],
            partition=0)
    group = _group()

    def run(count: int) -> list[str]:
        out = subprocess.run([KCAT, "-b", shared_broker.bootstrap, "-G", group, "-c", str(count), "-f", "%o|%s\n",
                              "-X", "auto.offset.reset=earliest", "-X", f"session.timeout.ms={SESSION_MS}",
                              topic_name], check=True, timeout=60, capture_output=True)
        return out.stdout.decode().split()

    assert run(10) == [f"{i}|r{i}" for i in range(10)]
    assert run(10) == [f"{i}|r{i}" for i in range(10, 20)]
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": group})
    try:
        assert c.committed([TopicPartition(topic_name, 0)], timeout=10)[0].offset == 20
    finally:
        c.close()


# ---------------------------------------------------------------- 7. positions inside batches and out of range

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_seek_into_middle_of_compressed_batch(shared_broker, topic_name, client):
    create_topic(shared_broker.port, topic_name)
    recs = [(None, f"m{i}".encode() + PAD, []) for i in range(10)]
    produce("confluent", shared_broker.bootstrap, topic_name, recs, "lz4", partition=0)
    assert len(batches(shared_broker.port, topic_name)) == 1
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    if client == "confluent":
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": _group()})
        c.assign([TopicPartition(topic_name, 0, 6)])
        while len(got) < 4 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
        c.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap)
        tp = TopicPartition(topic_name, 0)
        c.assign([tp])
        c.seek(tp, 6)
        while len(got) < 4 and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                got.extend((m.offset, m.value) for m in msgs)
        c.close()
    else:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(bootstrap_servers=shared_broker.bootstrap)
            await c.start()
            tp = TopicPartition(topic_name, 0)
            c.assign([tp])
            c.seek(tp, 6)
            while len(got) < 4 and time.monotonic() < deadline:
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    got.extend((m.offset, m.value) for m in msgs)
            await c.stop()
        asyncio.run(asyncio.wait_for(run(), 60))
    assert got == [(i, recs[i][1]) for i in range(6, 10)]


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_committed_offset_below_log_start_resets_to_earliest(shared_broker, topic_name, client):
    """After DeleteRecords moves the log start past a group's commit, the consumer resets (earliest)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    create_topic(shared_broker.port, topic_name)
    produce("confluent", shared_broker.bootstrap, topic_name, [(None, f"r{i}".encode(), []) for i in range(10)],
            partition=0)
    group = _group()
    _group_consume(client, shared_broker.bootstrap, topic_name, group, want=2, commit_at=2)
    a = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    tp = TopicPartition(topic_name, 0, 6)
    assert a.delete_records([tp])[tp].result(15).low_watermark == 6
    got, _ = _group_consume(client, shared_broker.bootstrap, topic_name, group, want=4, commit_at=None)
    assert got == [(i, f"r{i}".encode()) for i in range(6, 10)]


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_batch_larger_than_partition_fetch_limit_is_still_delivered(shared_broker, topic_name, client):
    """KIP-74: the first batch comes back even when it exceeds max.partition.fetch.bytes."""
    import os
    create_topic(shared_broker.port, topic_name)
    big = [(b"big", os.urandom(200_000), []), (b"small", b"s", []), (b"big2", os.urandom(300_000), [])]
    produce("kafka-python", shared_broker.bootstrap, topic_name, big, partition=0)
    conf = {"confluent": {"max.partition.fetch.bytes": 1024, "fetch.max.bytes": 1024, "message.max.bytes": 1000},
            "kafka-python": {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 1024},
            "aiokafka": {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 1024}}[client]
    got = consume(client, shared_broker.bootstrap, topic_name, 3, **conf)
    assert [(k, v) for _, _, k, v, *_ in got] == [(k, v) for k, v, _ in big]
