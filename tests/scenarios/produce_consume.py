"""Records through the clients: round trips per codec and client, cross-client reads, keyed partitioning,
idempotent producers, positions inside a compressed batch, and batches bigger than the fetch limit."""

from __future__ import annotations

import asyncio
import subprocess
import time

from tests.e2e.helpers import batches, create_topic, wait_until
from tests.scenarios import Broker
from tests.scenarios.clients import (
    CODEC_ID,
    KCAT,
    PAD,
    PY_CLIENTS,
    RECORDS,
    consume,
    new_group,
    norm_headers,
    produce,
)


def roundtrip_keys_nullkeys_headers(broker: Broker, topic: str, client: str, codec: str) -> None:
    """Keys, null and empty keys, binary values and headers round-trip through one client with `codec`."""
    create_topic(broker.port, topic)
    produce(client, broker.bootstrap, topic, RECORDS, codec, partition=0)
    got = consume(client, broker.bootstrap, topic, len(RECORDS))
    assert [r[1] for r in got] == list(range(len(RECORDS)))
    assert [(k, v, norm_headers(h)) for _, _, k, v, h, _, _ in got] == RECORDS
    # the codec really was used on the wire, and the broker stored the batch as the producer sent it
    codecs = {h.compression for h, _ in batches(broker.port, topic)}
    assert codecs == {CODEC_ID[codec]}


def roundtrip_kcat(broker: Broker, topic: str, codec: str) -> None:
    """kcat's records (keys, headers, `codec`) round-trip; kafka-python reads them back."""
    create_topic(broker.port, topic)
    # kcat reads "key:value" lines; a line without the delimiter has a null key. -H applies to every record.
    lines = [(f"key-{i}" if i % 3 else None, f"value-{i}-" + "abcdefgh" * 30) for i in range(30)]
    data = "".join((f"{k}:{v}" if k is not None else v) + "\n" for k, v in lines)
    subprocess.run([KCAT, "-P", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-K:",
                    "-H", "h1=one", "-H", "h2=two", "-X", f"compression.codec={codec}"],
                   input=data.encode(), check=True, timeout=60, capture_output=True)
    out = subprocess.run([KCAT, "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o",
                          "beginning", "-e", "-Z", "-f", "%o|%K|%k|%s|%h\n"],
                         check=True, timeout=60, capture_output=True).stdout.decode()
    rows = [line.split("|") for line in out.splitlines() if line]
    assert [int(r[0]) for r in rows] == list(range(len(lines)))
    assert [(None if r[1] == "-1" else r[2], r[3]) for r in rows] == lines
    assert {r[4] for r in rows} == {"h1=one,h2=two"}
    codecs = {h.compression for h, _ in batches(broker.port, topic)}
    assert codecs == {CODEC_ID[codec]}
    # and the Python clients read kcat's records (and its codec) back identically
    got = consume("kafka-python", broker.bootstrap, topic, len(lines))
    assert [(k, v) for _, _, k, v, *_ in got] == [(None if k is None else k.encode(), v.encode())
                                                  for k, v in lines]
    assert {tuple(norm_headers(r[4])) for r in got} == {(("h1", b"one"), ("h2", b"two"))}


def cross_client_readback(broker: Broker, topic: str, producer: str, consumer: str) -> None:
    """Each Python producer's records are read identically by every consumer (zstd, the newest codec)."""
    create_topic(broker.port, topic)
    recs = RECORDS[:8]
    produce(producer, broker.bootstrap, topic, recs, "zstd", partition=0)
    if consumer == "kcat":
        out = subprocess.run([KCAT, "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o",
                              "beginning", "-e", "-c", str(len(recs)), "-f", "%K|%S\n"],
                             check=True, timeout=60, capture_output=True).stdout.decode()
        assert out.split() == [f"{-1 if k is None else len(k)}|{len(v)}" for k, v, _ in recs]
        return
    got = consume(consumer, broker.bootstrap, topic, len(recs))
    assert [(k, v, norm_headers(h)) for _, _, k, v, h, _, _ in got] == recs


def keyed_partitioning_agrees_across_clients(broker: Broker, topic: str) -> None:
    """Every client (murmur2 partitioner) sends a key to the same partition."""
    n_parts = 8
    create_topic(broker.port, topic, partitions=n_parts)
    keys = [f"user-{i}".encode() for i in range(24)]
    bs = broker.bootstrap
    for client in PY_CLIENTS:
        extra = {"partitioner": "murmur2_random"} if client == "confluent" else {}
        produce(client, bs, topic, [(k, client.encode(), []) for k in keys], **extra)
    data = "".join(f"{k.decode()}:kcat\n" for k in keys)
    subprocess.run([KCAT, "-P", "-b", bs, "-t", topic, "-K:", "-X", "partitioner=murmur2_random"],
                   input=data.encode(), check=True, timeout=60, capture_output=True)
    got = consume("kafka-python", bs, topic, 4 * len(keys), partitions=range(n_parts))
    assert len(got) == 4 * len(keys)
    where: dict[bytes, dict[str, int]] = {}
    for part, _off, k, v, *_ in got:
        where.setdefault(k, {})[v.decode()] = part
    assert set(where) == set(keys)
    for k, by_client in where.items():
        assert set(by_client) == {*PY_CLIENTS, "kcat"}, k
        assert len(set(by_client.values())) == 1, (k, by_client)
    assert len({next(iter(v.values())) for v in where.values()}) > 1   # keys really spread over partitions


def idempotent_producer(broker: Broker, topic: str, client: str) -> None:
    """Two idempotent producer sessions: every batch has a producer id, sequences are gap-free."""
    create_topic(broker.port, topic, partitions=2)
    extra = {"confluent": {"enable.idempotence": True}, "kafka-python": {},   # kafka-python: on by default
             "aiokafka": {"enable_idempotence": True}}[client]
    recs = [(f"k{i % 5}".encode(), f"v{i}".encode(), []) for i in range(200)]
    produce(client, broker.bootstrap, topic, recs, **extra)
    produce(client, broker.bootstrap, topic, recs[:50], **extra)   # a second producer session
    got = consume(client, broker.bootstrap, topic, 250, partitions=(0, 1))
    values = [r[3] for r in got]
    assert sorted(values) == sorted([v for _, v, _ in recs] + [v for _, v, _ in recs[:50]])
    # every stored batch carries a producer id, and sequences per (producer, partition) are gap-free
    for p in (0, 1):
        hs = [h for h, _ in batches(broker.port, topic, p)]
        assert hs and all(h.producer_id >= 0 and h.producer_epoch >= 0 for h in hs)
        by_pid: dict[int, list] = {}
        for h in hs:
            by_pid.setdefault(h.producer_id, []).append(h)
        assert len(by_pid) == 2   # two producer sessions, two producer ids
        for seq in by_pid.values():
            assert seq[0].base_sequence == 0
            for a, b in zip(seq, seq[1:], strict=False):
                assert b.base_sequence == a.base_sequence + a.last_offset_delta + 1


def acks_all_with_min_isr_above_the_replication_factor(broker: Broker, topic: str) -> None:
    """min.insync.replicas=2 on a topic of one replica: Kafka caps it at the replication factor
    (Partition.effectiveMinIsr), so an acks=all write is taken, not refused with NOT_ENOUGH_REPLICAS."""
    from broker.log.records import Record, build_batch
    from kafkascope.local.wire import WireClient

    create_topic(broker.port, topic, partitions=1, min_insync_replicas="2")
    batch = build_batch([Record(timestamp=int(time.time() * 1000), value=b"v")])

    def produce_once() -> tuple[int] | None:   # None while the new partition's leader is not ready (retriable)
        with WireClient(broker.port) as w:
            resp = w.call(0, 9, {"transactional_id": None, "acks": -1, "timeout": 5000, "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        code = resp.responses[0].partition_responses[0].error_code
        return None if code in (3, 5, 6) else (int(code),)   # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NLOF

    assert wait_until(produce_once, 15, what="a produce the new partition answers") == (0,)   # not 19


def seek_into_middle_of_compressed_batch(broker: Broker, topic: str, client: str) -> None:
    """A consumer positioned inside a compressed batch gets the records from there on."""
    create_topic(broker.port, topic)
    recs = [(None, f"m{i}".encode() + PAD, []) for i in range(10)]
    # One batch whatever the machine's load: a linger far longer than the produce loop, and flush() sends at once
    # (librdkafka ignores linger.ms on flush since 1.5). With 50 ms, a slow CI loop split the records in two.
    produce("confluent", broker.bootstrap, topic, recs, "lz4", partition=0, **{"linger.ms": 60_000})
    assert len(batches(broker.port, topic)) == 1
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    if client == "confluent":
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": new_group()})
        c.assign([TopicPartition(topic, 0, 6)])
        while len(got) < 4 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
        c.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(bootstrap_servers=broker.bootstrap)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 6)
        while len(got) < 4 and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                got.extend((m.offset, m.value) for m in msgs)
        c.close()
    else:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
            await c.start()
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 6)
            while len(got) < 4 and time.monotonic() < deadline:
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    got.extend((m.offset, m.value) for m in msgs)
            await c.stop()
        asyncio.run(asyncio.wait_for(run(), 60))
    assert got == [(i, recs[i][1]) for i in range(6, 10)]


def batch_larger_than_partition_fetch_limit_is_still_delivered(broker: Broker, topic: str, client: str) -> None:
    """KIP-74: the first batch comes back even when it exceeds max.partition.fetch.bytes."""
    import os
    create_topic(broker.port, topic)
    big = [(b"big", os.urandom(200_000), []), (b"small", b"s", []), (b"big2", os.urandom(300_000), [])]
    produce("kafka-python", broker.bootstrap, topic, big, partition=0)
    conf = {"confluent": {"max.partition.fetch.bytes": 1024, "fetch.max.bytes": 1024, "message.max.bytes": 1000},
            "kafka-python": {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 1024},
            "aiokafka": {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 1024}}[client]
    got = consume(client, broker.bootstrap, topic, 3, **conf)
    assert [(k, v) for _, _, k, v, *_ in got] == [(k, v) for k, v, _ in big]
