"""Issues 15 and 18 end to end: the same secured cluster, ours, Apache Kafka 3.9's (ZooKeeper mode) and Apache Kafka
4.1's (KRaft), configured by the same security kit (`cluster up --security sasl_ssl`: SASL_SSL only, PLAIN +
SCRAM-SHA-512, super user admin), and the same bodies run against all three.

Each backend is three brokers shared by the module; Apache Kafka's are in the slow suite (three JVMs each), as in
test_monitors.py. The only client listener is SASL_SSL, so replication goes over it too. What the KRaft cluster
does differently, by design of Kafka 4 (kafkascope/local/kraft_security.py):
- StandardAuthorizer (ACLs in the metadata log) instead of AclAuthorizer (ACLs in ZooKeeper), same decisions;
- the CONTROLLER listener is SASL_SSL with PLAIN (Kafka takes no SCRAM there); the brokers' requests to the
  controllers go over it;
- the admin's SCRAM credential is formatted into storage (kafka-storage --add-scram, KIP-900): there is no
  ZooKeeper path for AlterUserScramCredentials before the cluster runs;
- AlterUserScramCredentials sent to any broker is forwarded to the active controller (KIP-590), so no NOT_CONTROLLER.
A body that passes on one backend and fails on another is a difference to fix or to state here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkascope.local.apache_kafka import DEFAULT_VERSION
from kafkascope.local.cluster import Cluster, wait_for
from tests.interop.conftest import BACKENDS, KRAFT, apache_kafka_or_skip
from tests.interop.test_kafka_tools import CONSOLE_CONSUMER, CONSOLE_PRODUCER, TOPICS, kafka_tool  # noqa: F401
from tests.scenarios.clients import PY_CLIENTS, RECORDS, consume, new_group, produce
from tests.scenarios.command_config import lag_monitor_reports_ok, xmonitor_probes
from tests.scenarios.security import (
    SecuredCluster,
    alter_scram_error,
    client_conf,
    confluent_conf,
    failed_authentications,
    kcat_config,
    port_probe_is_no_failed_authentication,
    sasl_failure,
)

BROKERS = 3
PASSWORD = "user-secret"
# Kafka's own client-visible texts (SaslServerAuthenticator / PlainSaslServer), which ours repeat word for word.
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PLAIN_FAILED = "Authentication failed: Invalid username or password"


@pytest.fixture(scope="module", params=[pytest.param(b, marks=pytest.mark.slow if b != "kafkascope" else ())
                                        for b in [*BACKENDS, KRAFT]])
def secured(request, tmp_path_factory) -> SecuredCluster:
    name = request.param
    if name != "kafkascope":
        apache_kafka_or_skip(DEFAULT_VERSION if name == KRAFT else None)
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed for the security kit")
    # KRAFT: Apache Kafka 4.1, three combined broker+controller nodes (kafkascope/local/kraft.py)
    impl, version = ("apache-kafka", DEFAULT_VERSION) if name == KRAFT else (name, None)
    c = Cluster(tmp_path_factory.mktemp(f"secured-{name}"), brokers=BROKERS, impl=impl, security="sasl_ssl",
                version=version)
    try:
        c.start(180)
        yield SecuredCluster(name, c)
    finally:
        c.shutdown()


def _admin(secured: SecuredCluster) -> AdminClient:
    return AdminClient({**confluent_conf(secured.admin_properties), "bootstrap.servers": secured.bootstrap})


def _topic(secured: SecuredCluster, partitions: int = 1, rf: int = BROKERS, **config: str) -> str:
    name = f"sec-{uuid.uuid4().hex[:8]}"
    admin = _admin(secured)   # kept referenced until the result is in (a collected client cancels its futures)
    admin.create_topics([NewTopic(name, partitions, rf, config=config)])[name].result(30)
    return name


def _errors_of_produce(conf: dict, topic: str, n: int = 3) -> list[KafkaError]:
    p = Producer({**conf, "message.timeout.ms": 15000, "acks": "all"})
    errors: list[KafkaError] = []
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), on_delivery=lambda err, _msg: err and errors.append(err))
    assert p.flush(30) == 0
    return errors


# ---- right credentials, every client ---------------------------------------------------------------------

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_admin_properties_work_for_the_python_clients(secured, client):
    topic = _topic(secured)
    conf = client_conf(client, secured.admin_properties)
    produce(client, secured.bootstrap, topic, RECORDS[:5], **conf)
    got = consume(client, secured.bootstrap, topic, 5, **conf)
    assert [(k, v) for _, _, k, v, *_ in got] == [(k, v) for k, v, _ in RECORDS[:5]]


def test_plain_login_of_the_admin(secured, tmp_path):
    """The admin also logs in with PLAIN (the JAAS user_admin entry), over the same listener."""
    props = secured.properties(tmp_path, "admin", secured.kit.admin_password, "PLAIN")
    topic = _topic(secured)
    assert _errors_of_produce({**confluent_conf(props), "bootstrap.servers": secured.bootstrap}, topic) == []
    got = consume("confluent", secured.bootstrap, topic, 3, **confluent_conf(props))
    assert [r[3] for r in got] == [b"v0", b"v1", b"v2"]


def _kcat_librdkafka() -> tuple[int, ...]:
    """The librdkafka version kcat is built with (`kcat -V`: "... librdkafka 2.0.2 builtin.features=...")."""
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", out)
    assert m, out
    return tuple(int(x) for x in m.groups())


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")
def test_kcat_with_the_admin_login(secured, tmp_path):
    topic = _topic(secured)
    props = secured.admin_properties
    if secured.name == KRAFT and _kcat_librdkafka() < (2, 6, 1):
        # A difference of Kafka 4: its SCRAM server compares the client-final nonce with the combined one exactly
        # (RFC 5802), and librdkafka before 2.6.1 puts its own nonce in front once more (librdkafka#4895), so an
        # old kcat's SCRAM login is refused. Kafka 3.9 and ours accept that nonce (a suffix check, as 3.9 does).
        scram = subprocess.run(["kcat", "-L", "-b", secured.bootstrap, "-F", str(kcat_config(props, tmp_path)),
                                "-m", "10"], capture_output=True, text=True, timeout=60)
        assert scram.returncode != 0 and SCRAM_FAILED.format("SCRAM-SHA-512") in scram.stderr, scram.stderr
        props = secured.properties(tmp_path, "admin", secured.kit.admin_password, "PLAIN")   # this one works
    conf = ["-b", secured.bootstrap, "-F", str(kcat_config(props, tmp_path)), "-t", topic]
    subprocess.run(["kcat", "-P", *conf], input=b"a\nb\nc\n", check=True, timeout=60, capture_output=True)
    out = subprocess.run(["kcat", "-C", *conf, "-o", "beginning", "-e", "-q"], check=True, timeout=60,
                         capture_output=True).stdout
    assert out.split() == [b"a", b"b", b"c"]


def test_kafkas_java_tools_take_client_properties(secured, kafka_tool):  # noqa: F811 - fixture
    """kafka-topics and the console producer/consumer with the kit's client.properties, unchanged."""
    props = str(secured.admin_properties)
    topic = f"java-{uuid.uuid4().hex[:8]}"
    bs = ["--bootstrap-server", secured.bootstrap]
    assert f"Created topic {topic}." in kafka_tool(TOPICS, *bs, "--command-config", props, "--create", "--topic",
                                                   topic, "--partitions", "1", "--replication-factor", "3").stdout
    kafka_tool(CONSOLE_PRODUCER, *bs, "--producer.config", props, "--topic", topic, "--sync",
               stdin="one\ntwo\nthree\n")
    out = kafka_tool(CONSOLE_CONSUMER, *bs, "--consumer.config", props, "--topic", topic, "--from-beginning",
                     "--max-messages", "3", "--timeout-ms", "30000").stdout
    assert out.split() == ["one", "two", "three"]
    described = kafka_tool(TOPICS, *bs, "--command-config", props, "--describe", "--topic", topic).stdout
    assert "ReplicationFactor: 3" in described and "Isr: " in described


# ---- wrong credentials -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_wrong_password_is_sasl_authentication_failed(secured, mechanism):
    port, ca = secured.ports[0], secured.kit.certs["ca"]
    code, message = sasl_failure(port, ca, mechanism, "admin", "not-the-password")
    expected = PLAIN_FAILED if mechanism == "PLAIN" else SCRAM_FAILED.format(mechanism)
    assert (code, message) == (58, expected)   # SASL_AUTHENTICATION_FAILED
    # an unknown SCRAM user fails the same way (the client cannot tell which was wrong)
    if mechanism != "PLAIN":
        assert sasl_failure(port, ca, mechanism, "nobody", "x") == (58, expected)
    assert sasl_failure(port, ca, mechanism, "admin", secured.kit.admin_password) == (0, None)


def test_port_probe_is_no_failed_authentication(secured):
    url = secured.cluster.launcher.metrics_url(0)
    if url is None:   # the launcher gives only Kafka's brokers a /metrics port (the JMX exporter agent)
        pytest.skip("ours: tests/security_wire/test_port_probe.py runs this body on a broker with /metrics")
    port_probe_is_no_failed_authentication(secured.ports[0], lambda: failed_authentications(url))


def test_wrong_password_in_client_properties_reaches_librdkafka(secured, tmp_path):
    props = secured.properties(tmp_path, "admin", "not-the-password")
    seen: list[KafkaError] = []
    admin = AdminClient({**confluent_conf(props), "bootstrap.servers": secured.bootstrap,
                         "error_cb": seen.append, "log_level": 0})
    with pytest.raises(KafkaException):   # librdkafka reports a transport failure; the cause goes to error_cb
        admin.list_topics(timeout=5)
    # error_cb runs when the client is polled
    wait_for(lambda: admin.poll(0.2) is not None and any(e.code() == KafkaError._AUTHENTICATION for e in seen), 10,
             what="an _AUTHENTICATION error")
    assert any(SCRAM_FAILED.format("SCRAM-SHA-512") in e.str() for e in seen), [e.str() for e in seen]


def test_alter_user_scram_credentials_away_from_the_controller(secured):
    """A difference, on purpose kept visible: where a broker that is not the controller takes a SCRAM change."""
    admin = _admin(secured)
    controller = admin.describe_cluster().result(10).controller.id
    other = next(b for b in secured.cluster.brokers if b.broker_id != controller)
    code = alter_scram_error(other.port, secured.kit.client_security(), f"u{uuid.uuid4().hex[:8]}", PASSWORD)
    if secured.name == "apache-kafka":
        # Kafka 3.9 in ZooKeeper mode handles it only on the active controller (KafkaApis answers NOT_CONTROLLER);
        # its AdminClient and librdkafka send it there, so `kafkascope configs` and the kit work on both.
        assert code == 41
    else:
        # ours write /config/users/<user> in ZooKeeper from whichever broker gets the request (docs/listeners.md);
        # a Kafka 4 broker forwards it to the active controller (KIP-590), and describe_cluster's "controller" is
        # any broker there (KRaft hides the controllers from clients), so `other` is just another broker
        assert code == 0


# ---- a user without ACLs, then with them -----------------------------------------------------------------

def test_user_without_acls_is_refused_and_sees_no_topics(secured, tmp_path):
    topic = _topic(secured)
    user = secured.add_user(PASSWORD)
    conf = {**confluent_conf(secured.properties(tmp_path, user, PASSWORD)), "bootstrap.servers": secured.bootstrap}
    assert AdminClient(conf).list_topics(timeout=10).topics == {}   # not even __consumer_offsets
    errors = _errors_of_produce(conf, topic)
    assert {e.code() for e in errors} == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert _group_errors(conf, topic) >= {KafkaError.GROUP_AUTHORIZATION_FAILED}


def _group_errors(conf: dict, topic: str) -> set[int]:
    """The error codes a subscribing consumer gets within a few seconds."""
    c = Consumer({**conf, "group.id": new_group(), "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    codes: set[int] = set()
    try:
        wait_for(lambda: _poll_error(c, codes) and KafkaError.GROUP_AUTHORIZATION_FAILED in codes, 20,
                 what="GROUP_AUTHORIZATION_FAILED")
    finally:
        c.close()
    return codes


def _poll_error(c: Consumer, codes: set[int]) -> bool:
    m = c.poll(0.5)
    if m is not None and m.error() is not None:
        codes.add(m.error().code())
    return True


def test_kafkascope_acls_add_lets_the_user_work(secured, tmp_path):
    topic, group = _topic(secured), new_group()
    user = secured.add_user(PASSWORD)
    props = secured.properties(tmp_path, user, PASSWORD)
    assert secured.cli("acls", "--add", "--allow-principal", f"User:{user}", "--producer", "--topic", topic) == 0
    assert secured.cli("acls", "--add", "--allow-principal", f"User:{user}", "--consumer", "--topic", topic,
                       "--group", group) == 0
    conf = {**confluent_conf(props), "bootstrap.servers": secured.bootstrap}
    # every broker applies the ACLs from ZooKeeper's change notifications (KRaft: from the metadata log); until
    # then a produce may be refused
    wait_for(lambda: _errors_of_produce(conf, topic, 1) == [], 30, 0.5, what=f"{user} allowed to produce")
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        m = wait_for(lambda: _message(c), 30, what="a record through the group")
        assert m.value() == b"v0"
        c.commit(m, asynchronous=False)
    finally:
        c.close()
    # and only that topic is visible to them
    assert set(AdminClient(conf).list_topics(timeout=10).topics) == {topic}


def _message(c: Consumer):
    m = c.poll(0.5)
    if m is None:
        return None
    assert m.error() is None, m.error()
    return m


# ---- replication over the SASL_SSL inter-broker listener -------------------------------------------------

def test_replication_over_the_sasl_ssl_inter_broker_listener(secured):
    topic = _topic(secured, partitions=3, **{"min.insync.replicas": "3"})
    conf = {**confluent_conf(secured.admin_properties), "bootstrap.servers": secured.bootstrap}
    assert _errors_of_produce(conf, topic, 30) == []   # acks=all with min.insync.replicas=3: every follower fetched
    md = _admin(secured).list_topics(topic, timeout=10).topics[topic]
    assert {p.id: sorted(p.isrs) for p in md.partitions.values()} == {i: [0, 1, 2] for i in range(3)}
    got = consume("confluent", secured.bootstrap, topic, 30, partitions=(0, 1, 2),
                  **confluent_conf(secured.admin_properties))
    assert sorted(r[3] for r in got) == sorted(f"v{i}".encode() for i in range(30))


# ---- the monitors with the kit's client.properties (--command-config) -------------------------------------

def test_xmonitor_with_the_admin_properties(secured, tmp_path):
    xmonitor_probes(secured.bootstrap, secured.admin_properties, tmp_path)


def test_lag_monitor_with_the_admin_properties(secured):
    lag_monitor_reports_ok(secured.bootstrap, secured.admin_properties)
