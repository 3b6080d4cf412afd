"""Kafka 3.9 MBeans a broker of ours in this process registers, read from its registry by Kafka's object names and
attributes (the Prometheus naming is exporter/naming.py's business, tested there)."""

from __future__ import annotations

import asyncio
import time

from broker.log.records import Record, build_batch
from broker.metrics.clients import DEPRECATED_UP_TO
from common.polling import wait_until_async
from kafkascope.local.wire import WireClient
from tests.broker.inproc import inproc_broker, metric, names
from tests.e2e.helpers import create_topic

METADATA, API_VERSIONS = 3, 18


def answered(port: int, **body: str) -> WireClient:
    """A connection whose ApiVersions (v3, with `body`'s client software fields if any) was answered."""
    c = WireClient(port)
    c.call(API_VERSIONS, 3, {"client_software_name": body.get("name", ""),
                             "client_software_version": body.get("version", "")})
    return c


async def test_acceptor_blocked_percent_times_the_wait_for_a_connection_slot(tmp_path):
    """At max.connections the acceptor holds the next connection until one closes (Kafka's
    waitForConnectionSlot) and marks the wait in nanoseconds; never blocked, it reads 0."""
    async with inproc_broker(tmp_path, **{"max.connections": 2}) as (b, port):
        blocked = metric(b, "kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT")
        assert blocked.count == 0

        def clients() -> None:
            a1, a2 = answered(port), answered(port)
            a3 = WireClient(port, timeout_s=0.5)
            a3.send(API_VERSIONS, 3, {"client_software_name": "", "client_software_version": ""})
            try:
                a3.recv(API_VERSIONS, 3)
                raise AssertionError("a third connection was served at max.connections=2")
            except TimeoutError:
                pass  # held, not refused: the answer comes once a slot frees
            a1.close()
            a3.sock.settimeout(10)
            assert a3.recv(API_VERSIONS, 3).error_code == 0
            for c in (a2, a3):
                c.close()

        await asyncio.to_thread(clients)
        assert blocked.count >= 0.5e9  # ns: at least the half second the third client waited
        assert 0 < blocked.mean_rate <= 1.0  # the meter's rate unit is ns: a share of time


def connections(b, name: str, version: str):
    return metric(b, "kafka.server", "socket-server-metrics", "connections", clientSoftwareName=name,
                  clientSoftwareVersion=version, listener="PLAINTEXT", networkProcessor="0")


async def test_connections_per_client_software_and_deprecated_requests(tmp_path, monkeypatch):
    """KIP-511: every connection counts as unknown/unknown until a valid ApiVersions v3+ names it; KIP-724:
    requests of versions Kafka 3.9 deprecates are marked per request, version and client software. None of the
    versions 3.9 deprecates is still decodable (kio has Kafka 4's schemas, KIP-896 removed them), so the marking
    is shown with Metadata v1 entered in the table for the test."""
    async with inproc_broker(tmp_path) as (b, port):
        def clients() -> list[WireClient]:
            k1, k2 = answered(port, name="kcat", version="1.7.0"), answered(port, name="kcat", version="1.7.0")
            old = WireClient(port)
            old.call(API_VERSIONS, 2, {})                          # no software fields before v3
            bad = answered(port, name="bad name!", version="1")     # invalid: not registered
            k1.call(METADATA, 1, {"topics": []})                   # not deprecated in 3.9 (no Metadata version is)
            k1.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False})
            return [k1, k2, old, bad]

        conns = await asyncio.to_thread(clients)
        assert connections(b, "kcat", "1.7.0").read() == 2
        assert connections(b, "unknown", "unknown").read() == 2   # the v2 one and the invalid one
        assert connections(b, "bad name!", "1") is None
        assert names(b, "kafka.network", "RequestMetrics", "DeprecatedRequestsPerSec") == []
        monkeypatch.setitem(DEPRECATED_UP_TO, METADATA, 1)
        await asyncio.to_thread(lambda: conns[0].call(METADATA, 1, {"topics": []}))
        deprecated = names(b, "kafka.network", "RequestMetrics", "DeprecatedRequestsPerSec")
        assert [dict(n.tags) for n in deprecated] == [{"request": "Metadata", "version": "1",
                                                        "clientSoftwareName": "kcat", "clientSoftwareVersion": "1.7.0"}]
        assert b.metrics.registry.get(deprecated[0]).count == 1
        await asyncio.to_thread(lambda: [c.close() for c in conns[:3]])
        await wait_until_async(lambda: connections(b, "unknown", "unknown").read() == 1, 10, what="closes counted")
        assert connections(b, "kcat", "1.7.0").read() == 0      # the gauge stays, at 0 (Kafka's IntGaugeSuite)
        conns[3].close()


async def test_produce_message_conversions_count_recompressed_records(tmp_path):
    """A batch rebuilt to the topic's compression.type counts its records as conversions (Kafka's LogValidator
    counts a non-in-place rebuild so), per topic from the first one and for all topics from the start."""
    async with inproc_broker(tmp_path) as (b, port):
        def conversions(**topic: str):
            return metric(b, "kafka.server", "BrokerTopicMetrics", "ProduceMessageConversionsPerSec", **topic)

        assert conversions().count == 0
        assert metric(b, "kafka.server", "BrokerTopicMetrics", "FetchMessageConversionsPerSec").count == 0

        def produce_both() -> None:
            create_topic(port, "gz", **{"compression.type": "gzip"})
            create_topic(port, "as-sent")
            batch = build_batch([Record(timestamp=1, value=b"v") for _ in range(4)])   # uncompressed
            for topic in ("gz", "as-sent"):
                with WireClient(port) as w:
                    resp = w.call(0, 9, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
                        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
                assert resp.responses[0].partition_responses[0].error_code == 0

        await asyncio.to_thread(produce_both)
        assert conversions(topic="gz").count == 4
        assert conversions().count == 4
        assert conversions(topic="as-sent") is None   # never converted: no per-topic meter, as Kafka


async def test_group_metadata_manager_counts_offsets_and_groups(tmp_path):
    async with inproc_broker(tmp_path) as (b, port):
        def gauge(name: str) -> float:
            return metric(b, "kafka.coordinator.group", "GroupMetadataManager", name).value

        assert gauge("NumOffsets") == gauge("NumGroups") == 0

        def commit(group: str, partitions: int) -> None:
            with WireClient(port) as w:
                w.call(8, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                              "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                                  {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1,
                                   "committed_metadata": ""} for p in range(partitions)]}]})

        await asyncio.to_thread(lambda: (create_topic(port, "t", 3), commit("g1", 3), commit("g2", 2)))
        assert gauge("NumOffsets") == 5
        assert gauge("NumGroups") == gauge("NumGroupsEmpty") == 2


async def test_request_metrics_are_registered_for_every_advertised_api_at_start(tmp_path):
    """As Kafka's RequestChannel.Metrics: each API's histograms exist before its first request (so a dashboard's
    rate over a request type never seen reads 0, not "no data"), and FetchConsumer/FetchFollower too; the
    RequestsPerSec{version} and ErrorsPerSec{error} meters come on first use, as Kafka's."""
    from broker.metrics import API_NAMES
    from broker.protocol.handlers.api_versions import advertised
    from broker.protocol.routes import handler_table

    async with inproc_broker(tmp_path) as (b, _port):
        expected = {API_NAMES[a["api_key"]] for a in advertised(handler_table())} | {"FetchConsumer", "FetchFollower"}
        for timer in ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs", "ResponseQueueTimeMs",
                      "ResponseSendTimeMs", "TotalTimeMs"):
            registered = {dict(n.tags)["request"] for n in names(b, "kafka.network", "RequestMetrics", timer)}
            assert registered == expected, timer
            t = metric(b, "kafka.network", "RequestMetrics", timer, request="DescribeCluster")
            assert t.count == 0 and t.quantiles() == (0.0,) * 6
        assert names(b, "kafka.network", "RequestMetrics", "ErrorsPerSec") == []
        assert names(b, "kafka.network", "RequestMetrics", "RequestsPerSec") == []


async def test_request_and_zookeeper_latencies_are_histograms_without_rates(tmp_path):
    """Kafka's RequestMetrics *TimeMs and ZooKeeperRequestLatencyMs are Yammer Histograms: Count, Min..StdDev and
    percentiles, no MeanRate/OneMinuteRate (a rule file exporting every attribute must not invent them)."""
    from exporter.mbeans import mbeans

    async with inproc_broker(tmp_path) as (b, _port):
        attrs: dict[tuple, set[str]] = {}
        for domain, props, attr, _value in mbeans(b.metrics.registry):
            attrs.setdefault((domain, props), set()).add(attr)
        totals = [a for (d, p), a in attrs.items()
                  if d == "kafka.network" and ("name", "TotalTimeMs") in p and ("request", "Produce") in p]
        assert totals and "99thPercentile" in totals[0] and "StdDev" in totals[0]
        assert not {"MeanRate", "OneMinuteRate"} & totals[0]


async def test_idle_connections_are_closed_after_connections_max_idle_ms(tmp_path):
    """connections.max.idle.ms (Kafka's default 10 minutes): a connection without requests for that long is closed
    and counted as closed; one that keeps sending is not."""
    async with inproc_broker(tmp_path, **{"connections.max.idle.ms": 300}) as (b, port):
        closed = metric(b, "kafka.server", "socket-server-metrics", "connection-close-total",
                        listener="PLAINTEXT", networkProcessor="0")
        before = closed.read()

        def clients() -> None:
            idle, busy = answered(port), answered(port)
            idle.sock.settimeout(0.05)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                busy.call(API_VERSIONS, 3, {"client_software_name": "", "client_software_version": ""})
                try:
                    if idle.sock.recv(1) == b"":
                        break          # closed by the broker
                except TimeoutError:
                    continue
            else:
                raise AssertionError("an idle connection outlived connections.max.idle.ms by 10 s")
            busy.call(API_VERSIONS, 3, {"client_software_name": "", "client_software_version": ""})   # still open
            busy.close()

        await asyncio.to_thread(clients)
        assert closed.read() >= before + 1


async def test_producer_id_count_and_its_expiration_at_run_time(tmp_path):
    """ReplicaManager ProducerIdCount (KIP-847) counts the idempotent producers held; lowering
    producer.id.expiration.ms at run time forgets the idle ones at the next check."""
    from confluent_kafka import Producer

    from kafkascope.local.process import free_port

    port = free_port()
    async with inproc_broker(tmp_path, **{"listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                          "producer.id.expiration.check.interval.ms": 100}) as (b, _):
        count = metric(b, "kafka.server", "ReplicaManager", "ProducerIdCount")
        assert count.fn() == 0

        def produce() -> None:
            p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True})
            for i in range(3):
                p.produce("idem", f"v{i}".encode())
            assert p.flush(30) == 0

        await asyncio.to_thread(produce)
        assert count.fn() == 1
        b.metadata.broker_configs().set("0", {"producer.id.expiration.ms": "1"})   # as an alter stores it
        await wait_until_async(lambda: count.fn() == 0, 10, what="the idle producer id expired")
