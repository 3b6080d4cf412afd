"""`kafkascope up --bootstrap-servers` against Apache Kafka 3.9 (ZooKeeper mode, one broker with the jmx_exporter
agent): the same checks as tests/dashboards/test_up_watch.py against our broker, and the same through a
SASL_PLAINTEXT listener with --command-config (every client must use it: nothing answers without). Slow."""

from __future__ import annotations

import pytest

from kafkascope.local import process as proc
from kafkascope.local.launcher import ClusterLauncher
from tests.dashboards.test_up_watch import (
    TOPIC,
    assert_nothing_created_without_consent,
    groups,
    run_up,
    topics,
    up_watching,
)
from tests.interop.conftest import apache_kafka_or_skip

pytestmark = pytest.mark.slow
USER, PASSWORD = "watcher", "w-s3cret"
JAAS = (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{USER}" '
        f'password="{PASSWORD}" user_{USER}="{PASSWORD}";')
JAAS_CLIENT = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{USER}" password="{PASSWORD}";'


class KafkaWithSasl(ClusterLauncher):
    """Apache Kafka with a second listener, SASL_PLAINTEXT (PLAIN), on `sasl_port`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, impl="apache-kafka", **kwargs)
        self.sasl_port = proc.free_port()

    def _broker_config(self, broker_id, port, rack, zk_connect):
        props = super()._broker_config(broker_id, port, rack, zk_connect)
        listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        props.update({"listeners": listeners, "advertised.listeners": listeners,
                      "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
                      "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
        return props


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    apache_kafka_or_skip()
    launcher = KafkaWithSasl(tmp_path_factory.mktemp("watched-kafka"), brokers=1,
                             broker_props={"offsets.topic.num.partitions": 5, "group.initial.rebalance.delay.ms": 0})
    try:
        launcher.start_all(timeout_s=180)
        yield launcher
    finally:
        launcher.shutdown()


def _jmx_and_lag_connected() -> tuple[str, ...]:
    # the lag monitor's metadata poller saw the broker: its clients got through the listener
    return 'count({job="kafka-broker"}) > 50', 'kafka_brokers{job="lag-monitor"} > 0'


@pytest.mark.timeout(240)
def test_up_against_apache_kafka(kafka, tmp_path):
    bootstrap = kafka.bootstrap
    assert_nothing_created_without_consent(bootstrap, tmp_path / "refused")
    r = run_up(["--bootstrap-servers", bootstrap, "--dry-run", "--create-probe-topic"])
    assert "no prometheus.listener" in r.stdout and "--scrape" in r.stdout, r.stdout  # Kafka has no such config
    jmx = kafka.metrics_url(kafka.broker_ids[0])
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=PLAINTEXT\n")
    ready_s, out = up_watching(bootstrap, tmp_path / "state", jmx, _jmx_and_lag_connected(), props)
    print(f"\nup --bootstrap-servers (Apache Kafka 3.9): all parts ready in {ready_s:.1f} s")
    assert jmx in out
    assert kafka.state_of(str(kafka.broker_ids[0])) == "running" and TOPIC in topics(bootstrap)
    assert {g for g in groups(bootstrap) if g} <= {f"xmonitor-theirs-{TOPIC}", f"xmonitor-theirs-{TOPIC}-offset-commit"}


@pytest.mark.timeout(240)
def test_up_through_sasl_with_command_config(kafka, tmp_path):
    sasl = f"127.0.0.1:{kafka.sasl_port}"
    r = run_up(["--bootstrap-servers", sasl, "--dry-run", "--create-probe-topic"])
    assert r.returncode == 1 and f"cannot reach {sasl}" in r.stderr, r.stderr   # the listener needs the props
    props = tmp_path / "client.properties"
    props.write_text(f"# as for kafka-topics.sh --command-config (Java names)\nsecurity.protocol=SASL_PLAINTEXT\n"
                     f"sasl.mechanism=PLAIN\nsasl.jaas.config={JAAS_CLIENT}\n")
    topic = "sasl-probe"
    ready_s, out = up_watching(sasl, tmp_path / "state", kafka.metrics_url(kafka.broker_ids[0]),
                               _jmx_and_lag_connected(), props,
                               ("--probe-topic", topic, "--no", "slo-report", "--no", "streamlit"), topic=topic)
    print(f"\nup --bootstrap-servers over SASL_PLAINTEXT (Apache Kafka 3.9): ready in {ready_s:.1f} s")
    assert topic in topics(kafka.bootstrap)   # xmonitor created it through the SASL listener
    assert oct((tmp_path / "state" / "client.properties").stat().st_mode & 0o777) == "0o600"
