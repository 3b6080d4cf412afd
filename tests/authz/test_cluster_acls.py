"""Two ZooKeeper brokers with Kafka's AclAuthorizer and a SASL_PLAINTEXT inter-broker listener whose principal
(User:admin) is the super user, as in issue 15's server.properties: the follower replicates through the
authorizer (follower Fetch needs CLUSTER_ACTION), and an ACL created through one broker lets alice in on the
other once the /kafka-acl-changes notification arrives."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AclBinding, AdminClient, NewTopic

from common.polling import wait_until
from kafkascope.local import zookeeper as zkrun
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from tests.authz.conftest import ACL_AUTHORIZER
from tests.authz.test_sasl_acls import JAAS


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory):
    if not zkrun.available():
        pytest.skip("ZooKeeper (Debian package) or Java not installed")
    d = tmp_path_factory.mktemp("acl-cluster")
    zk = zkrun.ZooKeeperServer(d / "zk", tick_time_ms=200).start()
    brokers = []
    try:
        for bid in (0, 1):
            plain, sasl = free_port(), free_port()
            b = BrokerProcess(d / f"b{bid}", port=plain, broker_id=bid, zookeeper_connect=zk.connect("/acl"),
                              offsets_topic_replication_factor=1, authorizer_class_name=ACL_AUTHORIZER,
                              super_users="User:admin")
            b.props.update({"listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                            "sasl.enabled.mechanisms": "PLAIN",
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                            "inter.broker.listener.name": "SASL_PLAINTEXT",
                            "sasl.mechanism.inter.broker.protocol": "PLAIN"})
            b.sasl = f"127.0.0.1:{sasl}"  # type: ignore[attr-defined]
            brokers.append(b.start())
        yield brokers
    finally:
        for b in brokers:
            b.stop()
        zk.stop()


def conf(bootstrap: str, user: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


def produce_error(bootstrap: str, user: str, topic: str, acks: str = "1") -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer({**conf(bootstrap, user), "message.timeout.ms": 8000, "acks": acks})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(15)
    return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)


def test_replication_and_acl_notifications(two_brokers) -> None:
    b0, b1 = two_brokers
    admin0 = AdminClient(conf(b0.sasl, "admin"))
    wait_until(lambda: len(admin0.list_topics(timeout=5).brokers) == 2, 20, what="both brokers registered")
    topic = f"rep-{uuid.uuid4().hex[:6]}"
    admin0.create_topics([NewTopic(topic, 1, replication_factor=2)])[topic].result(15)
    wait_until(lambda: admin0.list_topics(topic, timeout=5).topics[topic].partitions[0].leader >= 0, 20)
    assert produce_error(b0.sasl, "admin", topic, acks="all") is None   # the follower fetched through the ACLs
    leader = admin0.list_topics(topic, timeout=5).topics[topic].partitions[0].leader
    other = b1 if leader == 0 else b0   # create the ACL through the broker that does not lead the partition
    err = produce_error(b0.sasl, "alice", topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin_other = AdminClient(conf(other.sasl, "admin"))   # kept: a destroyed client fails its futures
    for f in admin_other.create_acls(
            [AclBinding(2, topic, 3, "User:alice", "*", 4, 3)]).values():   # TOPIC, LITERAL, WRITE, ALLOW
        f.result(10)
    wait_until(lambda: produce_error(b0.sasl, "alice", topic) is None, 20, what="the ACL reached the leader")
