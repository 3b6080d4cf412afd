"""The admin APIs through each client's admin client: topics, partitions, configs, offsets, records, groups and
the cluster description."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from tests.e2e.helpers import create_topic, list_offset, topic_error, topic_id, wait_until
from tests.scenarios import Broker
from tests.scenarios.clients import SESSION_MS, new_group, produce


def _wait_assigned_confluent(bootstrap: str, topic: str, group: str):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": SESSION_MS})
    c.subscribe([topic])
    wait_until(lambda: c.poll(0.2) is not None or c.assignment(), 30, interval_s=0, what="assignment")
    return c


def admin_confluent(broker: Broker) -> None:
    """Topics, partitions, configs, offsets, records, groups and the cluster through confluent-kafka's admin."""
    from confluent_kafka.admin import AdminClient
    bs = broker.bootstrap
    a = AdminClient({"bootstrap.servers": bs})
    t = f"adm-{uuid.uuid4().hex[:8]}"
    _confluent_topics_and_configs(a, t)
    _confluent_offsets_and_records(a, bs, t)
    _confluent_groups(a, bs, t)

    cl = a.describe_cluster().result(15)
    assert [n.port for n in cl.nodes] == [broker.port]
    assert cl.controller.id == cl.nodes[0].id

    a.delete_topics([t])[t].result(15)
    wait_until(lambda: topic_error(broker.port, t) == 3, 15, what="topic gone")


def _confluent_topics_and_configs(a, t: str) -> None:
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourceType,
    )
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


def _confluent_offsets_and_records(a, bs: str, t: str) -> None:
    """Records for list_offsets / delete_records."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec
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


def _confluent_groups(a, bs: str, t: str) -> None:
    """Groups: one live member, then none."""
    group = new_group()
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


def internal_topics_refuse_clients(broker: Broker, topic: str) -> None:
    """A client's Produce to, or DeleteRecords on, __consumer_offsets is refused with INVALID_TOPIC_EXCEPTION
    (Kafka's ReplicaManager), and the group's committed offset is still there afterwards."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    bs, group = broker.bootstrap, new_group()
    create_topic(broker.port, topic)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)   # makes __consumer_offsets
    finally:
        c.close()
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": bs, "message.send.max.retries": 0})
    p.produce("__consumer_offsets", key=b"\x00\x01forged", value=b"garbage", partition=0,
              on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(15) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION]
    a = AdminClient({"bootstrap.servers": bs})
    tp = TopicPartition("__consumer_offsets", 0, -1)
    with pytest.raises(KafkaException) as refused:
        a.delete_records([tp])[tp].result(15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        assert c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset == 3
    finally:
        c.close()


def list_all_topics(broker: Broker, topic: str) -> None:
    """librdkafka 2.16's all-topics Metadata v12 carries 3 stale bytes after the body; Kafka ignores them."""
    from confluent_kafka.admin import AdminClient
    create_topic(broker.port, topic)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert topic in a.list_topics(timeout=10).topics


def admin_kafka_python(broker: Broker) -> None:
    """Topics, configs, partitions, records, groups and the cluster through kafka-python's admin."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    bs = broker.bootstrap
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
        assert list_offset(broker.port, t, 0, -2) == 6

        group = new_group()
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
        assert [b["port"] for b in cl["brokers"]] == [broker.port]

        before = topic_id(broker.port, t)
        a.delete_topics([t])
        # kafka-python's admin keeps the topic in its metadata and refreshes it with auto-creation allowed,
        # so the name may come straight back, as with Kafka: then it is a new topic with a new id.
        wait_until(lambda: topic_id(broker.port, t) != before, 15, what="topic deleted")
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


def admin_aiokafka(broker: Broker) -> None:
    """Topics, configs, partitions, records, group offsets and the cluster through aiokafka's admin."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    bs = broker.bootstrap
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

            group = new_group()
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
            assert [b["port"] for b in cl["brokers"]] == [broker.port] and cl["controller_id"] == 0

            r = await a.delete_topics([t])
            assert [e[1] for e in r.topic_error_codes] == [0]
            assert t not in await a.list_topics()
        finally:
            await a.close()
    asyncio.run(asyncio.wait_for(main(), 90))
