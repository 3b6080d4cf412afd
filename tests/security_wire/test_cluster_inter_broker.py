"""Two brokers whose inter-broker listener is SASL_SSL (PLAIN): the follower replicates through it, clients on
each listener see every broker's endpoint for that listener, and SCRAM users live in ZooKeeper
(`/config/users/<user>`), so a user created through one broker logs in on the other."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from common.polling import wait_until
from kafkascope.local import zookeeper as zkrun
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from kafkascope.local.security import make_certs
from tests.security_wire.conftest import ADMIN, ADMIN_PW, broker_props


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    if not zkrun.available():
        pytest.skip("ZooKeeper (Debian package) or Java not installed")
    zk = zkrun.ZooKeeperServer(tmp_path_factory.mktemp("inter-broker-zk"), tick_time_ms=200).start()
    try:
        yield zk
    finally:
        zk.stop()


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory, zookeeper):
    d = tmp_path_factory.mktemp("inter-broker")
    zk = zookeeper
    certs = make_certs(d / "certs")
    brokers = []
    try:
        for bid in (0, 1):
            ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port(), "SASL_SSL": free_port()}
            b = BrokerProcess(d / f"b{bid}", port=ports["PLAINTEXT"], broker_id=bid,
                              zookeeper_connect=zk.connect("/sec"), offsets_topic_replication_factor=1)
            b.props.update(broker_props(ports, certs))
            b.props.update({"inter.broker.listener.name": "SASL_SSL", "sasl.mechanism.inter.broker.protocol": "PLAIN"})
            b.ports = ports  # type: ignore[attr-defined]
            brokers.append(b.start())
        yield brokers
    finally:
        for b in brokers:
            b.stop()


def test_follower_replicates_over_the_sasl_ssl_listener(two_brokers):
    b0, b1 = two_brokers
    admin = AdminClient({"bootstrap.servers": b0.bootstrap})
    wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == 2, 20, what="both brokers registered")
    topic = f"rep-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 1, replication_factor=2)])[topic].result(15)
    p = Producer({"bootstrap.servers": b0.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce(topic, f"m{i}".encode())
    assert p.flush(20) == 0   # acks=all: the follower fetched it over SASL_SSL
    isr = lambda: admin.list_topics(topic, timeout=5).topics[topic].partitions[0].isrs  # noqa: E731
    assert sorted(isr()) == [0, 1]
    assert "inter-broker SASL authentication failed" not in b1.log_tail(200) + b0.log_tail(200)


def test_clients_get_every_brokers_endpoint_for_their_listener(two_brokers):
    conf = {"bootstrap.servers": f"127.0.0.1:{two_brokers[0].ports['SASL_PLAINTEXT']}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": ADMIN, "sasl.password": ADMIN_PW}
    md = AdminClient(conf).list_topics(timeout=10)
    assert {b.id: b.port for b in md.brokers.values()} == {i: two_brokers[i].ports["SASL_PLAINTEXT"] for i in (0, 1)}


def _user_made_on_b0_for_b1(two_brokers) -> dict:
    """A new SCRAM-SHA-512 user created through broker 0; the client config that logs in on broker 1."""
    b0, b1 = two_brokers
    user = f"zk{uuid.uuid4().hex[:6]}"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin = AdminClient({"bootstrap.servers": b0.bootstrap})
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, b"zk-pw")])[user].result(10)
    return {"bootstrap.servers": f"127.0.0.1:{b1.ports['SASL_PLAINTEXT']}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": "zk-pw"}


def test_scram_user_created_on_one_broker_logs_in_on_the_other(two_brokers):
    assert AdminClient(_user_made_on_b0_for_b1(two_brokers)).list_topics(timeout=10).brokers


def test_scram_login_does_not_wait_for_zookeeper(two_brokers, zookeeper):
    """Logins read the credential cache (as Kafka's CredentialCache): with ZooKeeper frozen, a known user still
    logs in. Before the cache, each login read /config/users on the event loop and hung the broker. ZooKeeper is
    resumed before the fixtures stop the brokers: a broker stopped with ZooKeeper frozen spends its controlled
    shutdown retries on it (about 15 s each)."""
    conf = _user_made_on_b0_for_b1(two_brokers)
    assert AdminClient(conf).list_topics(timeout=10).brokers   # b1 learnt the user from the change notification
    zookeeper.pause()
    try:
        for _ in range(3):   # fresh connections, each a full SCRAM exchange
            assert AdminClient(conf).list_topics(timeout=5).brokers
        wrong = {**conf, "sasl.password": "nope"}
        with pytest.raises(KafkaException):
            AdminClient(wrong).list_topics(timeout=3)
    finally:
        zookeeper.resume()
