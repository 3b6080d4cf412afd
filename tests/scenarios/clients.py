"""The clients' produce and consume calls (confluent-kafka, kafka-python, aiokafka), the records and codecs the
scenarios send, and a group consumer that commits: one call per client, the same shape of result for each."""

from __future__ import annotations

import asyncio
import time
import uuid

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CLIENTS = ["confluent", "kafka-python", "aiokafka", "kcat"]
PY_CLIENTS = ["confluent", "kafka-python", "aiokafka"]
KCAT = "kcat"
SESSION_MS = 6000

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


def new_group() -> str:
    """A fresh consumer group id."""
    return f"g-{uuid.uuid4().hex[:10]}"


def norm_headers(h):
    """Headers as (key, bytes) pairs, whatever type the client returned the values in."""
    return [(k, bytes(v) if v is not None else None) for k, v in h]


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
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": new_group(), "enable.auto.commit": False,
                      **conf})
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



def group_consume(client: str, bootstrap: str, topic: str, group: str, want: int, commit_at: int | None,
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
