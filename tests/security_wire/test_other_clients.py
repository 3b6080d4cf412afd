"""kafka-python and aiokafka over SASL_PLAINTEXT (PLAIN, SCRAM-SHA-512) and SASL_SSL: the handshake versions and
framing they use are served, and a wrong password is an authentication error."""

from __future__ import annotations

import itertools
import ssl
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError

from tests.security_wire.conftest import ADMIN, ADMIN_PW, SCRAM_PW, SCRAM_USER


def _kafka_python_conf(secured, listener: str, mechanism: str, user: str, password: str) -> dict:
    conf = {"bootstrap_servers": secured.bootstrap(listener), "security_protocol": listener,
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
    if listener == "SASL_SSL":
        conf["ssl_cafile"] = str(secured.certs["ca"])
    return conf


@pytest.mark.parametrize("listener,mechanism,user,password", [
    ("SASL_PLAINTEXT", "PLAIN", ADMIN, ADMIN_PW),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW),
    ("SASL_SSL", "SCRAM-SHA-256", SCRAM_USER, SCRAM_PW),
])
def test_kafka_python_roundtrip(secured, listener, mechanism, user, password):
    conf = _kafka_python_conf(secured, listener, mechanism, user, password)
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    p = KafkaProducer(**conf)
    for i in range(3):
        p.send(topic, f"v{i}".encode()).get(timeout=20)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **conf)
    got = [m.value for m in itertools.islice(c, 3)]
    c.close()
    assert got == [b"v0", b"v1", b"v2"]


def test_kafka_python_wrong_password(secured):
    before = secured.metric("failed_authentication_total", "SASL_PLAINTEXT")
    conf = _kafka_python_conf(secured, "SASL_PLAINTEXT", "SCRAM-SHA-512", SCRAM_USER, "wrong")
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**conf, api_version=(3, 0), max_block_ms=3000).send("x", b"v").get(timeout=3)
    assert secured.metric("failed_authentication_total", "SASL_PLAINTEXT") > before


async def test_aiokafka_roundtrip_over_sasl_ssl(secured):
    ctx = ssl.create_default_context(cafile=str(secured.certs["ca"]))
    conf = {"bootstrap_servers": secured.bootstrap("SASL_SSL"), "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": SCRAM_USER,
            "sasl_plain_password": SCRAM_PW, "ssl_context": ctx}
    topic = f"aio-{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(**conf)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"hello")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
    await consumer.start()
    try:
        msg = await consumer.getone()
    finally:
        await consumer.stop()
    assert msg.value == b"hello"
