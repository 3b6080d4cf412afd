"""kafka.server:type=group-coordinator-metrics (Kafka 4's GroupCoordinatorMetrics) on a broker of ours in this
process, read as MBeans: groups per protocol, consumer groups per state, the consumer-group rebalance meter."""

from __future__ import annotations

import asyncio

from kafkascope.local.wire import WireClient
from tests.broker.inproc import inproc_broker, metric
from tests.e2e.helpers import create_topic

GCM = ("kafka.server", "group-coordinator-metrics")
HEARTBEAT, OFFSET_COMMIT = 68, 8


def join(port: int, member: str) -> int:
    with WireClient(port) as w:
        resp = w.call(HEARTBEAT, 1, {"group_id": "g", "member_id": member, "member_epoch": 0,
                                     "instance_id": None, "rack_id": None, "rebalance_timeout": 30_000,
                                     "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
                                     "server_assignor": None, "topic_partitions": []})
        assert resp.error_code == 0
        return resp.member_epoch


def commit_classic(port: int) -> None:
    with WireClient(port) as w:
        resp = w.call(OFFSET_COMMIT, 8, {"group_id": "classic", "generation_id_or_member_epoch": -1,
                                         "member_id": "", "group_instance_id": None, "retention_time": -1,
                                         "topics": [{"name": "t", "partitions": [
                                             {"partition_index": 0, "committed_offset": 1,
                                              "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        assert resp.topics[0].partitions[0].error_code == 0


def value(b, name, **tags):
    m = metric(b, *GCM, name, **tags)
    assert m is not None, (name, tags)
    return m.read()


async def test_group_counts_and_rebalances(tmp_path):
    async with inproc_broker(tmp_path) as (b, port):
        def traffic() -> None:
            create_topic(port, "t", 2)
            commit_classic(port)
            join(port, "A")
            join(port, "B")
        await asyncio.to_thread(traffic)
        assert value(b, "group-count", protocol="classic") == 1
        assert value(b, "group-count", protocol="consumer") == 1
        # B waits for A to revoke: the group is reconciling.
        assert value(b, "consumer-group-count", state="reconciling") == 1
        assert value(b, "consumer-group-count", state="stable") == 0
        assert value(b, "consumer-group-rebalance-count") == 2    # one target assignment per join
        assert value(b, "consumer-group-rebalance-rate") > 0


async def test_named_like_kafka_4_with_the_kraft_rules(tmp_path):
    """With Strimzi's rules plus kafkascope's KRaft additions (what Kafka 4.1 nodes get), the beans become the series
    the dashboards query: kafka_server_groupcoordinatormetrics_*; Strimzi's rules alone name none of them, as on
    Kafka."""
    import urllib.request

    from kafkascope.local.apache_kafka import write_jmx_rules
    from kafkascope.local.process import free_port

    rules = write_jmx_rules(tmp_path / "rules.yaml", kraft=True)
    mport = free_port()
    async with inproc_broker(tmp_path / "b", **{"prometheus.listener": f"127.0.0.1:{mport}",
                                                "prometheus.naming": f"rules:{rules}"}) as (_b, port):
        def scrape() -> str:
            create_topic(port, "t", 2)
            join(port, "A")
            return urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        text = await asyncio.to_thread(scrape)
    lines = {line.split(" ")[0] for line in text.splitlines() if line.startswith("kafka_server_groupcoordinator")}
    assert 'kafka_server_groupcoordinatormetrics_group_count{protocol="consumer"}' in lines
    assert 'kafka_server_groupcoordinatormetrics_consumer_group_count{state="stable"}' in lines
    assert "kafka_server_groupcoordinatormetrics_consumer_group_rebalance_rate" in lines
