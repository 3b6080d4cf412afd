"""Kafka's own tools (Apache Kafka 3.9.2 jars, run by main class) against both backends: each must work against
our broker as it does against Kafka.  The console tools are the Java client, the fifth real client of the suite
(with confluent-kafka, kafka-python, aiokafka and kcat)."""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest

from tests.e2e.helpers import batches, create_topic, topic_error, wait_until
from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios.clients import CODEC_ID, CODECS, consume, norm_headers, produce

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "kafka.tools.ConsoleProducer"              # still in core (kafka_2.13) in 3.9
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS = "kafka.admin.ConfigCommand"                        # core in 3.9
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
E2E_LATENCY = "org.apache.kafka.tools.EndToEndLatency"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
BROKER_API_VERSIONS = "kafka.admin.BrokerApiVersionsCommand"      # core in 3.9


@pytest.fixture(scope="session")
def kafka_tool():
    apache_kafka_or_skip()
    from kafkascope.local.apache_kafka import tool_command

    def run(main_class: str, *args: str, stdin: str | None = None, timeout: float = 120,
            check: bool = True) -> subprocess.CompletedProcess:
        res = subprocess.run(tool_command(main_class, *args), input=stdin, capture_output=True, text=True,
                             timeout=timeout)
        if check:
            assert res.returncode == 0, f"{main_class} {' '.join(args)} -> {res.returncode}\n{res.stdout}\n{res.stderr}"
        return res

    return run


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_kafka_topics(backend, kafka_tool):
    t = f"kt-{uuid.uuid4().hex[:8]}"
    bs = ["--bootstrap-server", backend.bootstrap]
    out = kafka_tool(TOPICS, *bs, "--create", "--topic", t, "--partitions", "3", "--replication-factor", "1",
                     "--config", "retention.ms=3600000").stdout
    assert f"Created topic {t}." in out
    assert t in kafka_tool(TOPICS, *bs, "--list").stdout.split()
    desc = kafka_tool(TOPICS, *bs, "--describe", "--topic", t).stdout
    assert re.search(rf"Topic: {t}\s+TopicId: \S+\s+PartitionCount: 3\s+ReplicationFactor: 1\s+Configs: .*"
                     r"retention\.ms=3600000", desc), desc
    parts = re.findall(rf"Topic: {t}\s+Partition: (\d)\s+Leader: (\d+)\s+Replicas: (\d+)\s+Isr: (\d+)", desc)
    assert sorted(p[0] for p in parts) == ["0", "1", "2"] and all(p[1] == p[2] == p[3] for p in parts), desc
    # an existing topic is an error, as is describing a missing one
    dup = kafka_tool(TOPICS, *bs, "--create", "--topic", t, "--partitions", "1", check=False)
    assert dup.returncode != 0 and "already exists" in dup.stdout + dup.stderr
    kafka_tool(TOPICS, *bs, "--alter", "--topic", t, "--partitions", "4")
    assert "PartitionCount: 4" in kafka_tool(TOPICS, *bs, "--describe", "--topic", t).stdout
    kafka_tool(TOPICS, *bs, "--delete", "--topic", t)
    wait_until(lambda: topic_error(backend.port, t) == 3, 30, what="topic deleted")
    assert t not in kafka_tool(TOPICS, *bs, "--list").stdout.split()


@pytest.mark.parametrize("codec", [pytest.param(c, marks=() if c == "zstd" else pytest.mark.slow)
                                   for c in CODECS])
def test_console_producer_consumer_java_client(backend, kafka_tool, topic_name, codec):
    """Keys, headers and a codec through the Java producer; read back by the Java consumer and by librdkafka."""
    create_topic(backend.port, topic_name)
    lines = [(f"h1:a{i},h2:b", f"key-{i}", f"value-{i}-" + "abcdefgh" * 20) for i in range(30)]
    kafka_tool(CONSOLE_PRODUCER, "--bootstrap-server", backend.bootstrap, "--topic", topic_name,
               "--compression-codec", codec, "--property", "parse.key=true", "--property", "parse.headers=true",
               "--property", "key.separator=:", "--sync" if codec == "none" else "--batch-size=200",
               stdin="".join(f"{h}\t{k}:{v}\n" for h, k, v in lines))
    assert {h.compression for h, _ in batches(backend.port, topic_name)} == {CODEC_ID[codec]}
    out = kafka_tool(CONSOLE_CONSUMER, "--bootstrap-server", backend.bootstrap, "--topic", topic_name,
                     "--from-beginning", "--max-messages", str(len(lines)), "--timeout-ms", "30000",
                     "--property", "print.key=true", "--property", "print.headers=true",
                     "--property", "print.offset=true").stdout
    got = [line.split("\t") for line in out.splitlines() if line.startswith("Offset:")]
    assert [(o, h, k, v) for o, h, k, v in got] == [(f"Offset:{i}", h, k, v) for i, (h, k, v) in enumerate(lines)]
    py = consume("confluent", backend.bootstrap, topic_name, len(lines))
    assert [(k, v, norm_headers(h)) for _, _, k, v, h, _, _ in py] == [
        (k.encode(), v.encode(), [("h1", f"a{i}".encode()), ("h2", b"b")]) for i, (_, k, v) in enumerate(lines)]


def test_kafka_consumer_groups(backend, kafka_tool, topic_name):
    create_topic(backend.port, topic_name, partitions=2)
    for partition in (0, 1):  # explicit partitions: librdkafka's sticky partitioner may fill only one
        produce("confluent", backend.bootstrap, topic_name, [(None, f"v{i}".encode(), []) for i in range(10)],
                partition=partition)
    group = f"kg-{uuid.uuid4().hex[:8]}"
    bs = ["--bootstrap-server", backend.bootstrap]
    kafka_tool(CONSOLE_CONSUMER, *bs, "--topic", topic_name, "--group", group, "--from-beginning",
               "--max-messages", "20", "--timeout-ms", "30000")      # commits what it read on exit

    def describe() -> dict[int, tuple[str, str, str]]:
        out = kafka_tool(CONSUMER_GROUPS, *bs, "--describe", "--group", group).stdout
        return {int(r[2]): (r[3], r[4], r[5]) for r in _rows(out) if r[0] == group and r[1] == topic_name}

    d = wait_until(lambda: (x := describe()) and all(c == e for c, e, _ in x.values()) and x, 30,
                   what="committed offsets at the log end")
    assert sorted(d) == [0, 1] and sum(int(e) for _, e, _ in d.values()) == 20
    assert all(lag == "0" for *_, lag in d.values())
    assert group in kafka_tool(CONSUMER_GROUPS, *bs, "--list").stdout.split()
    dry = kafka_tool(CONSUMER_GROUPS, *bs, "--reset-offsets", "--group", group, "--topic", topic_name,
                     "--to-offset", "1", "--dry-run").stdout
    # 3.9's reset-offsets table has no line breaks between rows: read it as GROUP TOPIC PARTITION NEW-OFFSET tokens
    tokens = dry.split()
    tokens = tokens[tokens.index("NEW-OFFSET") + 1:]
    assert sorted(tokens[i + 2:i + 4] for i in range(0, len(tokens), 4)) == [["0", "1"], ["1", "1"]], dry
    assert describe() == d                                                    # a dry run changes nothing
    kafka_tool(CONSUMER_GROUPS, *bs, "--reset-offsets", "--group", group, "--topic", topic_name,
               "--to-earliest", "--execute")
    after = describe()
    assert {p: (c, lag) for p, (c, _, lag) in after.items()} == {p: ("0", e) for p, (_, e, _) in d.items()}
    kafka_tool(CONSUMER_GROUPS, *bs, "--delete", "--group", group)
    assert group not in kafka_tool(CONSUMER_GROUPS, *bs, "--list").stdout.split()


def test_kafka_configs(backend, kafka_tool, topic_name):
    create_topic(backend.port, topic_name)
    bs = ["--bootstrap-server", backend.bootstrap]
    topic = ["--entity-type", "topics", "--entity-name", topic_name]
    out = kafka_tool(CONFIGS, *bs, *topic, "--alter", "--add-config", "retention.ms=12345,cleanup.policy=compact")
    assert f"Completed updating config for topic {topic_name}." in out.stdout
    desc = kafka_tool(CONFIGS, *bs, *topic, "--describe").stdout
    assert "retention.ms=12345 sensitive=false" in desc and "cleanup.policy=compact sensitive=false" in desc, desc
    kafka_tool(CONFIGS, *bs, *topic, "--alter", "--delete-config", "retention.ms")
    desc = kafka_tool(CONFIGS, *bs, *topic, "--describe").stdout
    assert "retention.ms=" not in desc and "cleanup.policy=compact" in desc, desc
    bad = kafka_tool(CONFIGS, *bs, *topic, "--alter", "--add-config", "no.such.config=1", check=False)
    assert bad.returncode != 0
    broker = kafka_tool(CONFIGS, *bs, "--entity-type", "brokers", "--entity-name", "0", "--describe", "--all").stdout
    assert re.search(r"^\s+num\.partitions=\d+ sensitive=false", broker, re.M), broker[:2000]


@pytest.mark.slow
def test_kafka_producer_and_consumer_perf(backend, kafka_tool, topic_name):
    create_topic(backend.port, topic_name)
    out = kafka_tool(PRODUCER_PERF, "--topic", topic_name, "--num-records", "50000", "--record-size", "100",
                     "--throughput", "-1", "--producer-props", f"bootstrap.servers={backend.bootstrap}",
                     "acks=all").stdout
    assert re.search(r"^50000 records sent, [\d.]+ records/sec", out, re.M), out
    out = kafka_tool(CONSUMER_PERF, "--bootstrap-server", backend.bootstrap, "--topic", topic_name,
                     "--messages", "50000", "--timeout", "60000").stdout
    header, row = [line for line in out.splitlines() if "," in line][-2:]
    stats = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in row.split(",")], strict=False))
    assert int(stats["data.consumed.in.nMsg"]) == 50000, out


@pytest.mark.slow
def test_kafka_end_to_end_latency(backend, kafka_tool, topic_name):
    create_topic(backend.port, topic_name)
    out = kafka_tool(E2E_LATENCY, backend.bootstrap, topic_name, "500", "all", "100").stdout
    m = re.search(r"Avg latency: ([\d.]+) ms", out)
    assert m and float(m.group(1)) < 1000, out
    assert re.search(r"Percentiles: 50th = \d+, 99th = \d+, 99\.9th = \d+", out), out


def test_kafka_log_dirs(backend, kafka_tool, topic_name):
    """kafka-log-dirs.sh --describe: every broker's log dirs, the topic's partitions in them with their sizes."""
    import json

    create_topic(backend.port, topic_name, partitions=2)
    produce("confluent", backend.bootstrap, topic_name, [(None, b"v" * 500, [])] * 20, partition=0)
    out = kafka_tool(LOG_DIRS, "--bootstrap-server", backend.bootstrap, "--describe", "--topic-list", topic_name).stdout
    assert "Querying brokers for log directories information" in out, out
    report = json.loads(out.strip().splitlines()[-1])
    dirs = [d for b in report["brokers"] for d in b["logDirs"]]
    assert dirs and all(d["error"] is None and d["logDir"].startswith("/") for d in dirs), report
    parts = {p["partition"]: p for d in dirs for p in d["partitions"]}
    assert set(parts) == {f"{topic_name}-0", f"{topic_name}-1"}, report
    assert parts[f"{topic_name}-0"]["size"] > 20 * 500 and parts[f"{topic_name}-1"]["size"] == 0
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in parts.values())


def test_kafka_get_offsets_and_delete_records(backend, kafka_tool, topic_name, tmp_path):
    """kafka-get-offsets.sh (latest and earliest) and kafka-delete-records.sh, the way an operator trims a topic."""
    import json

    create_topic(backend.port, topic_name, partitions=2)
    produce("confluent", backend.bootstrap, topic_name, [(None, f"v{i}".encode(), []) for i in range(10)], partition=0)
    bs = ["--bootstrap-server", backend.bootstrap]

    def offsets(time: str) -> list[str]:
        return sorted(kafka_tool(GET_OFFSETS, *bs, "--topic", topic_name, "--time", time).stdout.split())

    assert offsets("-1") == [f"{topic_name}:0:10", f"{topic_name}:1:0"]
    assert offsets("-2") == [f"{topic_name}:0:0", f"{topic_name}:1:0"]
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic_name, "partition": 0, "offset": 4}]}))
    out = kafka_tool(DELETE_RECORDS, *bs, "--offset-json-file", str(spec)).stdout
    assert re.search(rf"partition: {topic_name}-0\s+low_watermark: 4", out), out
    assert offsets("-2") == [f"{topic_name}:0:4", f"{topic_name}:1:0"]


def test_kafka_leader_election_and_reassign_partitions(backend, kafka_tool, topic_name, tmp_path):
    """kafka-leader-election.sh and kafka-reassign-partitions.sh --execute / --verify (which also clears the
    replication throttles it may have set, on the brokers and the topic)."""
    import json

    create_topic(backend.port, topic_name)
    bs = ["--bootstrap-server", backend.bootstrap]
    out = kafka_tool(LEADER_ELECTION, *bs, "--election-type", "preferred", "--topic", topic_name,
                     "--partition", "0").stdout
    assert f"Valid replica already elected for partitions {topic_name}-0" in out, out
    broker = int(re.search(r"id: (\d+)", kafka_tool(BROKER_API_VERSIONS, *bs).stdout).group(1))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic_name, "partition": 0, "replicas": [broker], "log_dirs": ["any"]}]}))
    out = kafka_tool(REASSIGN, *bs, "--reassignment-json-file", str(plan), "--execute").stdout
    assert f"Successfully started partition reassignment for {topic_name}-0" in out, out
    verify = wait_until(lambda: (o := kafka_tool(REASSIGN, *bs, "--reassignment-json-file", str(plan),
                                                 "--verify").stdout) and "is completed" in o and o, 30,
                        what="the reassignment verified")
    assert f"Reassignment of partition {topic_name}-0 is completed." in verify, verify
    assert "Clearing broker-level throttles" in verify and "Clearing topic-level throttles" in verify, verify


def test_kafka_broker_api_versions(backend, kafka_tool):
    """kafka-broker-api-versions.sh: every API the broker advertises, with the version the 3.9 client uses."""
    out = kafka_tool(BROKER_API_VERSIONS, "--bootstrap-server", backend.bootstrap).stdout
    assert re.search(r"Produce\(0\): \d+ to \d+ \[usable: \d+\]", out), out
    assert re.search(r"DescribeLogDirs\(35\): [01] to 4 \[usable: 4\]", out), out   # Kafka 3.9 keeps v0


def test_kafka_configs_on_groups_with_kafka_4_1s_tool(backend, backend_name):
    """kafka-configs.sh --entity-type groups (KIP-848's dynamic group configs, Kafka 4.1's ConfigCommand): the same
    lines on ours as on Kafka 4.1 (the kraft backend, slow suite). Kafka 3.9 keeps no group configs in ZooKeeper
    mode, so that backend is left out."""
    if backend_name == "apache-kafka":
        pytest.skip("Kafka 3.9 in ZooKeeper mode has no group configs (KRaft only)")
    from kafkascope.local.apache_kafka import tool_command

    def configs(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(tool_command(CONFIGS, "--bootstrap-server", backend.bootstrap, "--entity-type", "groups",
                                           *args, version="4.1.1"), capture_output=True, text=True, timeout=120)

    group = f"cfg-{uuid.uuid4().hex[:8]}"
    g = ["--entity-name", group]
    assert f"The group '{group}' doesn't exist and doesn't have dynamic config." in configs(*g, "--describe").stdout
    everything = configs(*g, "--describe", "--all").stdout
    assert ("consumer.session.timeout.ms=45000 sensitive=false "
            "synonyms={DEFAULT_CONFIG:consumer.session.timeout.ms=45000}") in everything, everything
    assert len(re.findall(r"^\s+\S+=\S+ sensitive=false", everything, re.M)) == 10, everything
    assert f"Completed updating config for group {group}." in configs(
        *g, "--alter", "--add-config", "consumer.session.timeout.ms=50000").stdout
    assert ("consumer.session.timeout.ms=50000 sensitive=false "
            "synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000}") in configs(*g, "--describe").stdout
    low = configs(*g, "--alter", "--add-config", "consumer.session.timeout.ms=1000")
    assert low.returncode != 0 and ("consumer.session.timeout.ms must be greater than or equal to "
                                    "group.consumer.min.session.timeout.ms") in low.stdout + low.stderr
    unknown = configs(*g, "--alter", "--add-config", "no.such=1")
    assert unknown.returncode != 0 and "Unknown group config name: no.such" in unknown.stdout + unknown.stderr
    configs(*g, "--alter", "--delete-config", "consumer.session.timeout.ms")
    # No dynamic config is left. Kafka 4.1 still lists the group then ("Dynamic configs for group G are:" and no
    # line), ours does not ("doesn't exist and doesn't have dynamic config"): the same, told two ways.
    assert "consumer.session.timeout.ms" not in configs(*g, "--describe").stdout
