"""Dynamic broker configs and the throttled-replica topic configs through Kafka 3.9's own kafka-configs.sh: the same
printed lines and the same errors on ours as on Apache Kafka 3.9 in ZooKeeper mode (the expected strings were
recorded from a real 3.9.2 cluster)."""

from __future__ import annotations

import uuid

import pytest

from tests.interop.conftest import KRAFT, apache_kafka_or_skip, config_command

LEADER, FOLLOWER = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
REPLICAS_FORMAT = ("leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
                   "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


@pytest.fixture
def configs(backend):
    if backend.name == KRAFT:
        pytest.skip("pins Kafka 3.9's ZooKeeper mode (KRaft stores broker configs as records)")
    apache_kafka_or_skip()
    return config_command(backend.bootstrap)


def _broker_id(backend) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": backend.bootstrap})   # held: a dropped client fails its futures
    return str(admin.describe_cluster().result(30).nodes[0].id)


def test_throttle_rates_per_broker_and_default(backend, configs):
    b = _broker_id(backend)
    broker, default = ["--entity-type", "brokers", "--entity-name", b], ["--entity-type", "brokers", "--entity-default"]
    try:
        assert configs(*broker, "--describe").stdout == f"Dynamic configs for broker {b} are:\n"
        assert configs(*broker, "--alter", "--add-config", f"{LEADER}=1000000,{FOLLOWER}=2000000").stdout == \
            f"Completed updating config for broker {b}.\n"
        assert configs(*default, "--alter", "--add-config", f"{LEADER}=3000000").stdout == \
            "Completed updating default config for brokers in the cluster.\n"
        assert configs(*broker, "--describe").stdout.splitlines() == [
            f"Dynamic configs for broker {b} are:",
            f"  {FOLLOWER}=2000000 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{FOLLOWER}=2000000}}",
            f"  {LEADER}=1000000 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{LEADER}=1000000, "
            f"DYNAMIC_DEFAULT_BROKER_CONFIG:{LEADER}=3000000}}"]
        assert configs(*default, "--describe").stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            f"  {LEADER}=3000000 sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{LEADER}=3000000}}"]
        configs(*broker, "--alter", "--delete-config", FOLLOWER)
        assert FOLLOWER not in configs(*broker, "--describe").stdout

        for value, message in (("-5", f"Invalid value -5 for configuration {LEADER}: Value must be at least 0"),
                               ("abc", f"Invalid value abc for configuration {LEADER}: Not a number of type LONG")):
            err = configs(*broker, "--alter", "--add-config", f"{LEADER}={value}", ok=False).stderr
            assert f"InvalidRequestException: {message}" in err, err
        err = configs(*broker, "--alter", "--add-config", "num.partitions=3", ok=False).stderr
        assert "InvalidRequestException: Cannot update these configs dynamically: Set(num.partitions)" in err, err
    finally:
        configs(*broker, "--alter", "--delete-config", LEADER)
        configs(*default, "--alter", "--delete-config", LEADER)
    assert configs(*default, "--describe").stdout == "Default configs for brokers in the cluster are:\n"


def test_throttled_replica_lists_on_a_topic(backend, configs):
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"thr-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": backend.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    t = ["--entity-type", "topics", "--entity-name", topic]
    configs(*t, "--alter", "--add-config", "leader.replication.throttled.replicas=[0:1,1:2],"
                                          "follower.replication.throttled.replicas=*")
    assert configs(*t, "--describe").stdout.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  follower.replication.throttled.replicas=* sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:follower.replication.throttled.replicas=*}",
        "  leader.replication.throttled.replicas=0:1,1:2 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:leader.replication.throttled.replicas=0:1,1:2}"]
    for bad, shown in (("0-1", "[0-1]"), ("[*,0:1]", "[*, 0:1]")):
        err = configs(*t, "--alter", "--add-config", f"leader.replication.throttled.replicas={bad}", ok=False).stderr
        assert (f"InvalidConfigurationException: Invalid config value for resource ConfigResource(type=TOPIC, "
                f"name='{topic}'): Invalid value {shown} for configuration leader.replication.throttled.replicas: "
                f"{REPLICAS_FORMAT}") in err, err


def test_a_log_config_default_set_at_run_time(backend, configs):
    """`--entity-default --add-config log.retention.ms=...` (DynamicLogConfig): the broker lines and a topic's
    --describe --all line show the value and its source alike on both."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"dyn-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": backend.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    default = ["--entity-type", "brokers", "--entity-default"]
    try:
        configs(*default, "--alter", "--add-config", "log.retention.ms=3600000")
        assert configs(*default, "--describe").stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            "  log.retention.ms=3600000 sensitive=false "
            "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000}"]
        lines = configs("--entity-type", "topics", "--entity-name", topic, "--describe", "--all").stdout.splitlines()
        assert "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms="\
               "3600000, DEFAULT_CONFIG:log.retention.hours=168}" in lines, lines
    finally:
        configs(*default, "--alter", "--delete-config", "log.retention.ms")


def test_connection_limits_per_broker_default_and_listener(backend, configs):
    """max.connections, the per-address limits and a listener's own limit, set at run time (values far above
    what the other tests use); the lines and errors recorded from Kafka 3.9.2."""
    b = _broker_id(backend)
    broker, default = ["--entity-type", "brokers", "--entity-name", b], ["--entity-type", "brokers", "--entity-default"]
    own, listener = "max.connections", "listener.name.plaintext.max.connections"
    int_max = "DEFAULT_CONFIG:max.connections=2147483647"
    try:
        configs(*broker, "--alter", "--add-config", f"{own}=9000,max.connections.per.ip=800,"
                                                     "max.connections.per.ip.overrides=[10.9.9.9:3]")
        configs(*default, "--alter", "--add-config", f"{own}=9500")
        configs(*broker, "--alter", "--add-config", f"{listener}=7000")
        assert configs(*broker, "--describe").stdout.splitlines() == [
            f"Dynamic configs for broker {b} are:",
            f"  {listener}=7000 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{listener}=7000, "
            f"DYNAMIC_BROKER_CONFIG:{own}=9000, DYNAMIC_DEFAULT_BROKER_CONFIG:{own}=9500, {int_max}}}",
            f"  {own}=9000 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{own}=9000, "
            f"DYNAMIC_DEFAULT_BROKER_CONFIG:{own}=9500, {int_max}}}",
            "  max.connections.per.ip=800 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:max.connections.per.ip=800, "
            "DEFAULT_CONFIG:max.connections.per.ip=2147483647}",
            "  max.connections.per.ip.overrides=10.9.9.9:3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
            "max.connections.per.ip.overrides=10.9.9.9:3, DEFAULT_CONFIG:max.connections.per.ip.overrides=}"]
        assert configs(*default, "--describe").stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            f"  {own}=9500 sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{own}=9500}}"]
        configs(*broker, "--alter", "--delete-config", "max.connections.per.ip.overrides")
        for config, message in (
                ("max.connections.per.ip=0", "requirement failed: max.connections.per.ip can be set to zero only if "
                                             "max.connections.per.ip.overrides property is set."),
                ("max.connections.per.ip.overrides=[10.9.9.9:x]", 'For input string: "x"'),
                ("max.connections.per.ip.overrides=[bad host name!:3]",
                 "max.connections.per.ip.overrides contains invalid addresses : bad host name!"),
                (f"{own}=-1", f"Invalid value -1 for configuration {own}: Value must be at least 0"),
                (f"{listener}=-1", "Invalid value org.apache.kafka.common.config.ConfigException: Invalid value -1 for "
                                   "configuration max.connections: Value must be at least 0 for configuration Invalid "
                                   "dynamic configuration")):
            err = configs(*broker, "--alter", "--add-config", config, ok=False).stderr
            assert f"InvalidRequestException: {message}" in err, err
    finally:
        configs(*broker, "--alter", "--delete-config", f"{own},{listener},max.connections.per.ip")
        configs(*default, "--alter", "--delete-config", own)


def test_describe_all_lists_kafkas_defaults(backend, configs):
    """`--describe --all` shows keys nobody set with Kafka's defaults, line for line as Kafka 3.9.2 printed them
    (tests/data/kafka/broker-describe-all-3.9.2.txt)."""
    from pathlib import Path

    recorded = {line.split("=", 1)[0].strip(): line for line in (
        Path(__file__).parents[1] / "data" / "kafka" / "broker-describe-all-3.9.2.txt").read_text().splitlines()[1:]}
    keys = ("log.retention.hours", "log.retention.ms", "log.segment.bytes", "message.max.bytes",
            "replica.lag.time.max.ms", "unclean.leader.election.enable", "connections.max.idle.ms",
            "max.connections.per.ip.overrides", "compression.type", "log.cleanup.policy", "ssl.keystore.type",
            "broker.rack", "log.retention.bytes", "log.roll.hours")
    out = {line.split("=", 1)[0].strip(): line for line in configs(
        "--entity-type", "brokers", "--entity-name", _broker_id(backend), "--describe", "--all").stdout.splitlines()}
    assert {k: out.get(k) for k in keys} == {k: recorded[k] for k in keys}
