"""`kafkascope up --bootstrap-servers` against Apache Kafka 3.9 (ZooKeeper mode, one broker with the jmx_exporter
agent): the same checks as tests/dashboards/test_up_watch.py against our broker. Slow: Kafka's JVM start."""

from __future__ import annotations

import pytest

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


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    apache_kafka_or_skip()
    from kafkascope.cluster.launcher import ClusterLauncher

    launcher = ClusterLauncher(tmp_path_factory.mktemp("watched-kafka"), brokers=1, impl="apache-kafka",
                               broker_props={"offsets.topic.num.partitions": 5,
                                             "group.initial.rebalance.delay.ms": 0})
    try:
        launcher.start_all(timeout_s=180)
        yield launcher
    finally:
        launcher.shutdown()


@pytest.mark.timeout(240)
def test_up_against_apache_kafka(kafka, tmp_path):
    bootstrap = kafka.bootstrap
    assert_nothing_created_without_consent(bootstrap, tmp_path / "refused")
    r = run_up(["--bootstrap-servers", bootstrap, "--dry-run", "--create-probe-topic"])
    assert "no prometheus.listener" in r.stdout and "--scrape" in r.stdout, r.stdout  # Kafka has no such config
    jmx = kafka.metrics_url(kafka.broker_ids[0])
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=PLAINTEXT\n")
    ready_s, out = up_watching(bootstrap, tmp_path / "state", jmx,
                               'count({job="kafka-broker"}) > 50', props)
    print(f"\nup --bootstrap-servers (Apache Kafka 3.9): all parts ready in {ready_s:.1f} s")
    assert jmx in out
    assert kafka.state_of(str(kafka.broker_ids[0])) == "running" and TOPIC in topics(bootstrap)
    assert {g for g in groups(bootstrap) if g} <= {f"xmonitor-theirs-{TOPIC}", f"xmonitor-theirs-{TOPIC}-offset-commit"}
