"""Authorization end to end with real SASL/PLAIN principals (the listener's, not the harness's address map):
User:admin is a super user, User:alice has no ACL until `kafkascope acls --command-config` gives her one."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from common.polling import wait_for_port
from kafkascope.cli import main
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from kafkascope.local.wire import WireClient
from tests.authz.conftest import ACL_AUTHORIZER

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("sasl-acl")
    plain, sasl = free_port(), free_port()
    proc = BrokerProcess(d, port=plain, authorizer_class_name=ACL_AUTHORIZER,
                         super_users="User:admin")
    proc.props.update({"listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                       "sasl.enabled.mechanisms": "PLAIN",
                       "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
    with proc:
        wait_for_port("127.0.0.1", sasl, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        yield f"127.0.0.1:{sasl}", d


def conf(bootstrap: str, user: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


def produce_error(bootstrap: str, user: str, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer({**conf(bootstrap, user), "message.timeout.ms": 5000, "allow.auto.create.topics": False})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(10)
    return errors[0] if errors else None


def test_alice_needs_an_acl(sasl_broker, capsys) -> None:
    bootstrap, d = sasl_broker
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(conf(bootstrap, "admin"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    alice = AdminClient(conf(bootstrap, "alice"))
    assert topic not in alice.list_topics(timeout=10).topics          # leaks nothing
    assert topic in admin.list_topics(timeout=10).topics
    err = produce_error(bootstrap, "alice", topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    props = d / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.username=admin\nsasl.password=admin-secret\n")
    assert main(["acls", "--bootstrap-server", bootstrap, "--command-config", str(props), "--add",
                 "--allow-principal", "User:alice", "--producer", "--topic", topic]) == 0
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in capsys.readouterr().out
    assert produce_error(bootstrap, "alice", topic) is None
    assert topic in alice.list_topics(timeout=10).topics


def test_scram_credentials_need_cluster_acls(sasl_broker) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    bootstrap, _ = sasl_broker
    alice = AdminClient(conf(bootstrap, "alice"))
    upsert = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw")
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        alice.alter_user_scram_credentials([upsert])["bob"].result(10)
    # DescribeUserScramCredentials on the wire: confluent-kafka 2.16 aborts on its top-level error
    with WireClient(int(bootstrap.rsplit(":", 1)[1])) as w:
        assert w.call(17, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.none
        assert w.call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}).error_code == ErrorCode.none
        resp = w.call(50, 0, {"users": None})
        assert resp.error_code == ErrorCode.cluster_authorization_failed
        assert resp.error_message == "Cluster authorization failed."
    admin = AdminClient(conf(bootstrap, "admin"))
    admin.alter_user_scram_credentials([upsert])["bob"].result(10)
