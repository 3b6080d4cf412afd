"""kafka-reassign-partitions.sh --throttle on a three-broker cluster of ours, as an operator moves a partition: the
tool sets the replication throttles (broker rates, topic replica lists), the new replica catches up no faster than
the rate allows, and --verify clears every throttle once the move is done."""

from __future__ import annotations

import json
import subprocess
import time

from common.polling import wait_until
from tests.interop.conftest import apache_kafka_or_skip

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
RATE = 200_000           # bytes/s
RECORDS, SIZE = 2000, 1000
LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"


def _tool(*args: str) -> str:
    from kafkascope.local.apache_kafka import tool_command

    res = subprocess.run(tool_command(REASSIGN, *args), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{args}\n{res.stdout}\n{res.stderr[-2000:]}"
    return res.stdout


def _configs(admin, resource) -> dict[str, str]:
    return {k: e.value for k, e in admin.describe_configs([resource])[resource].result(30).items()
            if not e.is_default}


def test_a_throttled_reassignment_moves_at_the_rate_and_verify_clears_the_throttles(cluster_factory, tmp_path):
    apache_kafka_or_skip()
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

    c = cluster_factory(3)
    source, target, _ = c.broker_ids
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("moved", num_partitions=1, replica_assignment=[[source]])])["moved"].result(30)
    producer = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 20})
    for i in range(RECORDS):
        producer.produce("moved", value=bytes([i % 256]) * SIZE)
    assert producer.flush(60) == 0

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moved", "partition": 0, "replicas": [source, target], "log_dirs": ["any", "any"]}]}))
    bs = ["--bootstrap-server", c.bootstrap, "--reassignment-json-file", str(plan)]
    started = time.monotonic()
    out = _tool(*bs, "--execute", "--throttle", str(RATE))
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in out, out
    assert "Successfully started partition reassignment for moved-0" in out, out

    for broker in c.broker_ids:   # the tool throttles the brokers the move involves
        res = ConfigResource(ResourceType.BROKER, str(broker))
        assert {k: v for k, v in _configs(admin, res).items() if "throttled" in k} == (
            {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)} if broker in (source, target) else {})
    topic = _configs(admin, ConfigResource(ResourceType.TOPIC, "moved"))
    assert topic["leader.replication.throttled.replicas"] == f"0:{source}"
    assert topic["follower.replication.throttled.replicas"] == f"0:{target}"

    done = wait_until(lambda: (o := _tool(*bs, "--verify")) and "is completed" in o and o, 120,
                      interval_s=0.5, what="the throttled reassignment completed")
    elapsed = time.monotonic() - started
    # 2 MB at 200 KB/s, after a first fetch of up to replica.fetch.max.bytes (1 MiB) under the rate: at least 5 s.
    # Unthrottled the same move takes well under one.
    assert elapsed >= 4.0, elapsed
    assert "Clearing broker-level throttles on brokers" in done and "Clearing topic-level throttles on topic moved" \
        in done, done
    for broker in c.broker_ids:
        res = ConfigResource(ResourceType.BROKER, str(broker))
        assert not any("throttled" in k for k in _configs(admin, res))
    assert not any("throttled" in k for k in _configs(admin, ConfigResource(ResourceType.TOPIC, "moved")))
