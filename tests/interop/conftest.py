"""Interop suite: one test body, three backends (our broker, Apache Kafka 3.9 in ZooKeeper mode, Apache Kafka 4.1 in
KRaft mode: `kraft`, one combined broker+controller node from kafkascope/local/kraft.py, run in the slow suite only).

`backend` is session-scoped per backend (pytest groups the tests by it, so each backend starts once): a
tests.scenarios.Broker like the e2e `shared_broker`/`broker` fixtures (port, bootstrap, props, log_tail, start())
plus its `name`, so the shared scenario bodies of tests/scenarios/ run unchanged against either.  Apache Kafka is started with the cluster launcher
(`--impl apache-kafka`, one broker); its jars are fetched from Maven Central on first use, and the tests skip
with the reason when that is impossible.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkascope.local.broker_process import BrokerProcess

BACKENDS = ["kafkascope", "apache-kafka"]
# Apache Kafka 4.1 (KRaft): each scenario once more on it, in `make test-slow` (another JVM for the whole session).
KRAFT = "kraft"

# Broker settings every backend gets, so the retention / compaction scenarios run in seconds on both.
FAST_PROPS = {
    "log.retention.check.interval.ms": 200,
    "log.cleaner.backoff.ms": 100,
    "offsets.topic.num.partitions": 5,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    # One broker: `__transaction_state` with RF 1 (Kafka's default 3 cannot be placed, on ours as on Kafka), and
    # timed-out transactions aborted within 0.5 s (Kafka's default check is every 10 s).
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


def apache_kafka_or_skip(version: str | None = None) -> Path:
    """Fetch (once) the Apache Kafka jars; skip the test with the reason when they cannot be had."""
    from kafkascope.local import apache_kafka as ak

    version = version or ak.ZK_VERSION
    try:
        if not ak._is_complete(ak._kafka_home(version) / "libs", version) and not ak.maven_central_reachable():
            pytest.skip(f"Apache Kafka {version} is not cached and Maven Central ({ak.MAVEN_CENTRAL}) is unreachable")
        return ak.ensure_kafka(version)
    except ak.ApacheKafkaError as e:
        pytest.skip(f"Apache Kafka {version} unavailable: {e}")


class LauncherBackend:
    """One broker of a ClusterLauncher, shaped like BrokerProcess for the shared scenario bodies."""

    name = "apache-kafka"

    def __init__(self, launcher, broker_id: int = 0) -> None:
        self.launcher = launcher
        self.broker_id = broker_id
        self.port = launcher.broker_port(broker_id)
        self.props = {"log.dirs": str(launcher.data_dir / f"broker-{broker_id}" / "logs"), **FAST_PROPS}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        return self.launcher.metrics_url(self.broker_id)

    def start(self) -> LauncherBackend:  # already running; the e2e bodies call it
        return self

    def log_tail(self, n: int = 60) -> str:
        from kafkascope.local import process as proc

        return proc.log_tail(self.launcher.data_dir / f"broker-{self.broker_id}" / "broker.log", n)


class KRaftBackend(LauncherBackend):
    """The broker of a one-node Apache Kafka 4.1 KRaft cluster (kafkascope.local.kraft.KRaftLauncher)."""

    name = KRAFT


class OursBackend(BrokerProcess):
    name = "kafkascope"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.props['prometheus.listener']}/metrics"

    def start(self, timeout_s: float = 30.0) -> OursBackend:  # started once for the session
        if self.proc is None or self.proc.poll() is not None:
            super().start(timeout_s)
        return self


def config_command(bootstrap: str, main_class: str = "kafka.admin.ConfigCommand"):
    """run(*args, ok=True): Kafka 3.9's kafka-configs.sh against `bootstrap`, its exit status checked."""
    import subprocess

    from kafkascope.local.apache_kafka import tool_command

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        res = subprocess.run(tool_command(main_class, "--bootstrap-server", bootstrap, *args),
                             capture_output=True, text=True, timeout=120)
        assert (res.returncode == 0) == ok, f"{args} -> {res.returncode}\n{res.stdout}\n{res.stderr[-2000:]}"
        return res

    return run


def _wait_metadata(bootstrap: str, timeout_s: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient

    from tests.e2e.helpers import wait_until

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    wait_until(lambda: a.list_topics(timeout=5).brokers, timeout_s, what=f"metadata from {bootstrap}")


@pytest.fixture(scope="session")
def _backend_kafkascope(tmp_path_factory):
    from kafkascope.local.broker_process import free_port

    b = OursBackend(tmp_path_factory.mktemp("interop-kafkascope"),
                    **{**FAST_PROPS, "prometheus.listener": f"127.0.0.1:{free_port()}"})
    b.start()
    yield b
    b.stop()


@pytest.fixture(scope="session")
def _backend_apache_kafka(tmp_path_factory):
    apache_kafka_or_skip()
    from kafkascope.local.launcher import ClusterLauncher

    launcher = ClusterLauncher(tmp_path_factory.mktemp("interop-apache-kafka"), brokers=1, impl="apache-kafka",
                               broker_props=FAST_PROPS)
    try:
        launcher.start_all(timeout_s=120)
        b = LauncherBackend(launcher)
        _wait_metadata(b.bootstrap)
        yield b
    finally:
        launcher.shutdown()


@pytest.fixture(scope="session")
def _backend_kraft(tmp_path_factory):
    from kafkascope.local.apache_kafka import DEFAULT_VERSION
    from kafkascope.local.kraft import KRaftLauncher

    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()  # the JMX exporter agent comes with the 3.9 line
    launcher = KRaftLauncher(tmp_path_factory.mktemp("interop-kraft"), brokers=1, broker_props=FAST_PROPS)
    try:
        launcher.start_all(timeout_s=120)
        b = KRaftBackend(launcher)
        _wait_metadata(b.bootstrap)
        yield b
    finally:
        launcher.shutdown()


@pytest.fixture(scope="session", params=[*BACKENDS, pytest.param(KRAFT, marks=pytest.mark.slow)])
def backend(request):
    """Our broker, Apache Kafka 3.9 (one broker) or Apache Kafka 4.1 KRaft (one node), started once per session
    each."""
    return request.getfixturevalue("_backend_" + request.param.replace("-", "_"))


@pytest.fixture
def backend_name(backend) -> str:
    return backend.name
