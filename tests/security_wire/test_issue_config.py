"""The broker configuration of issue 15, key for key (as Kafka 3.9 takes it), starts and serves: the super user
over SASL_SSL with PLAIN and with SCRAM-SHA-512, and a user without ACLs sees no topic."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.scram_storage import LocalScramCredentials
from broker.security import scram
from common.polling import wait_for_port
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from kafkascope.local.security import make_certs

ISSUE_CONFIG = """\
listeners=SASL_SSL://127.0.0.1:{sasl_ssl},PLAINTEXT://127.0.0.1:{plain}
listener.security.protocol.map=SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=SASL_SSL
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location={server_pem}
ssl.truststore.type=PEM
ssl.truststore.location={ca_pem}
authorizer.class.name=kafka.security.authorizer.AclAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
"""


@pytest.fixture(scope="module")
def issue_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("issue-config")
    certs = make_certs(d / "certs")
    ports = {"sasl_ssl": free_port(), "plain": free_port()}
    logs = d / "logs"
    logs.mkdir()
    mech = scram.SCRAM_MECHANISMS["SCRAM-SHA-512"]
    LocalScramCredentials(logs).set("admin", mech, scram.generate_credential(mech, "admin-scram"))
    proc = BrokerProcess(d, port=ports["plain"])
    proc.props = {"broker.id": 0, "log.dirs": str(logs), "offsets.topic.num.partitions": 1}
    text = ISSUE_CONFIG.format(server_pem=certs["server"], ca_pem=certs["ca"], **ports)
    proc.props.update(dict(line.split("=", 1) for line in text.replace("\\\n", "").splitlines()))
    with proc:
        wait_for_port("127.0.0.1", ports["sasl_ssl"], lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        yield f"127.0.0.1:{ports['sasl_ssl']}", certs


def _conf(bootstrap: str, ca, mechanism: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": str(ca),
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def test_super_user_and_user_without_acls(issue_broker):
    bootstrap, certs = issue_broker
    admin = AdminClient(_conf(bootstrap, certs["ca"], "PLAIN", "admin", "admin-secret"))
    topic = f"issue-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    scram_admin = AdminClient(_conf(bootstrap, certs["ca"], "SCRAM-SHA-512", "admin", "admin-scram"))
    assert topic in scram_admin.list_topics(timeout=10).topics
    alice = AdminClient(_conf(bootstrap, certs["ca"], "PLAIN", "alice", "alice-secret"))
    assert topic not in alice.list_topics(timeout=10).topics
