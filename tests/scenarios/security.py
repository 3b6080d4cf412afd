"""A secured cluster as the scenarios see it, and the same login spelled for each client: confluent-kafka
(librdkafka, from client.properties through common/client_properties), kafka-python, aiokafka and kcat (-F file).

`SecuredCluster` wraps a local Cluster started with `security="sasl_ssl"` (ours or Apache Kafka's): the security
kit's client.properties is the admin's; `add_user` makes another SCRAM-SHA-512 user the Kafka way (kafkascope
configs --alter with that file, i.e. AlterUserScramCredentials) and waits until every broker knows it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from broker.replication.client import BrokerConnection
from broker.security import plain
from broker.security.scram import SCRAM_MECHANISMS, salted_password
from broker.security.scram_sasl import ScramSaslClient
from common import client_properties
from kafkascope.cli import main as kafkascope
from kafkascope.local.cluster import Cluster, wait_for
from kafkascope.local.launcher import brokers_seen_by
from kafkascope.local.security import SecurityKit
from kafkascope.local.wire import WireClient
from tests.interop.metrics_page import scrape

SASL_HANDSHAKE, SASL_AUTHENTICATE, ALTER_USER_SCRAM_CREDENTIALS = 17, 36, 51


@dataclass
class SecuredCluster:
    name: str            # "kafkascope" | "apache-kafka"
    cluster: Cluster

    @property
    def kit(self) -> SecurityKit:
        return self.cluster.launcher.kit()

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def ports(self) -> list[int]:
        return [b.port for b in self.cluster.brokers]

    @property
    def admin_properties(self) -> Path:
        """The client.properties `cluster up --security sasl_ssl` wrote (Java names)."""
        return self.kit.client_properties_path

    def properties(self, tmp: Path, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Path:
        """A client.properties for another login, written like the admin's."""
        return self.kit.write_client_properties(tmp / f"{user}-{mechanism}-{uuid.uuid4().hex[:6]}.properties",
                                                user, password, mechanism)

    def cli(self, *args: str, properties: Path | None = None) -> int:
        """`kafkascope ARGS --bootstrap-server B --command-config client.properties` (the admin's by default)."""
        return kafkascope([*args, "--bootstrap-server", self.bootstrap,
                           "--command-config", str(properties or self.admin_properties)])

    def add_user(self, password: str = "user-secret") -> str:
        """A fresh SCRAM-SHA-512 user with no ACLs, its login working on every broker."""
        user = f"u{uuid.uuid4().hex[:8]}"
        assert self.cli("configs", "--alter", "--entity-type", "users", "--entity-name", user,
                        "--add-config", f"SCRAM-SHA-512=[iterations=8192,password={password}]") == 0
        login = self.kit.client_security("SCRAM-SHA-512", user, password)
        for port in self.ports:   # Kafka's brokers learn of it through a ZooKeeper change notification
            wait_for(lambda p=port: asyncio.run(brokers_seen_by(p, security=login)), 30,
                     what=f"{user}'s login on port {port}")
        return user


def confluent_conf(properties: Path) -> dict[str, str]:
    """librdkafka settings from a Java client.properties, as our tools read it."""
    return client_properties.load(properties)


def kafka_python_conf(properties: Path) -> dict:
    rdk = confluent_conf(properties)
    return {"security_protocol": rdk["security.protocol"], "sasl_mechanism": rdk["sasl.mechanisms"],
            "sasl_plain_username": rdk["sasl.username"], "sasl_plain_password": rdk["sasl.password"],
            "ssl_cafile": rdk["ssl.ca.location"]}


def aiokafka_conf(properties: Path) -> dict:
    conf = kafka_python_conf(properties)
    conf["ssl_context"] = ssl.create_default_context(cafile=conf.pop("ssl_cafile"))
    return conf


def client_conf(client: str, properties: Path) -> dict:
    """The settings `tests.scenarios.clients.produce/consume` pass on to `client` for this login."""
    return {"confluent": confluent_conf, "kafka-python": kafka_python_conf,
            "aiokafka": aiokafka_conf}[client](properties)


def kcat_config(properties: Path, tmp: Path) -> Path:
    """A librdkafka properties file for kcat -F (kcat reads librdkafka's names only)."""
    path = tmp / f"kcat-{uuid.uuid4().hex[:6]}.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in confluent_conf(properties).items()))
    return path


def sasl_failure(port: int, ca: Path, mechanism: str, user: str, password: str) -> tuple[int, str | None]:
    """The (error_code, error_message) of the SaslAuthenticate that ends a login over TLS; (0, None) if it
    succeeds. Spoken on the wire, so the Kafka error code is seen as sent (clients turn it into their own)."""
    return asyncio.run(_sasl_failure(port, ca, mechanism, user, password))


async def _sasl_failure(port: int, ca: Path, mechanism: str, user: str, password: str) -> tuple[int, str | None]:
    from broker.network.client_security import ClientSecurity

    tls_only = ClientSecurity("SASL_SSL", "SASL_SSL", ssl.create_default_context(cafile=str(ca)))
    conn = BrokerConnection("127.0.0.1", port, "kafkascope-test", tls_only)
    await conn.connect(10)
    try:
        hs = await conn.request(SASL_HANDSHAKE, 1, {"mechanism": mechanism}, 10)
        assert hs.error_code == 0, hs
        if mechanism == "PLAIN":
            steps = [lambda _: plain.plain_client_response(user, password)]
        else:
            client = ScramSaslClient(SCRAM_MECHANISMS[mechanism], user, password)
            steps = [lambda _: client.first(), client.respond]   # client-first, then client-final with the proof
        challenge = b""
        for step in steps:
            resp = await conn.request(SASL_AUTHENTICATE, 2, {"auth_bytes": step(challenge)}, 10)
            if resp.error_code != 0:
                return int(resp.error_code), resp.error_message
            challenge = bytes(resp.auth_bytes)
        return 0, None
    finally:
        conn.close()


def alter_scram_error(port: int, login, user: str, password: str) -> int:
    """The error code one broker answers to an AlterUserScramCredentials upsertion (SCRAM-SHA-512) sent to it."""
    mech = SCRAM_MECHANISMS["SCRAM-SHA-512"]
    salt = b"kafkascope-test-salt"
    upsertion = {"name": user, "mechanism": mech.type, "iterations": 8192, "salt": salt,
                 "salted_password": salted_password(mech, password, salt, 8192)}

    async def run() -> int:
        conn = BrokerConnection("127.0.0.1", port, "kafkascope-test", login)
        await conn.connect(10)
        try:
            resp = await conn.request(ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [upsertion]},
                                      10)
            return int(resp.results[0].error_code)
        finally:
            conn.close()
    return asyncio.run(run())


def port_probe_is_no_failed_authentication(port: int, failed_total: Callable[[], float]) -> None:
    """A TCP connect and close on a SASL_SSL port (a port probe, a load balancer's health check, the launcher's
    readiness check) is not a failed authentication; plaintext bytes on it are one, and so is a client that does
    not trust the certificate (Kafka counts an SslAuthenticationException, not an EOF during the handshake). `failed_total` reads the broker's
    socket-server-metrics failed-authentication-total for that listener."""
    before = failed_total()
    for _ in range(3):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with WireClient(port) as w:   # after the probes, so the broker has seen them close by the time it answers
        w.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})   # ApiVersions, in plaintext
        assert _closed_after_any_alert(w.sock)
    # a client that does not trust the broker's certificate aborts the handshake with an alert: a failure too
    untrusting = ssl.create_default_context()   # the system's CAs, not the kit's
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            untrusting.wrap_socket(raw, server_hostname="127.0.0.1").close()
            raise AssertionError("a client without the kit's CA completed the handshake")
        except ssl.SSLCertVerificationError:
            pass
    wait_for(lambda: failed_total() >= before + 2, 10, what="the plaintext request and the untrusting client counted")
    assert failed_total() == before + 2


def _closed_after_any_alert(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """Whether the peer closes the connection; Kafka first sends a TLS alert record, ours closes at once."""
    sock.settimeout(timeout_s)
    for _ in range(64):   # an alert is a few bytes; far fewer reads than this
        try:
            if not sock.recv(4096):
                return True
        except ConnectionResetError:
            return True
    return False


def failed_authentications(metrics_url: str, listener: str = "SASL_SSL") -> float:
    """failed-authentication-total of one listener on one /metrics page, summed over network processors."""
    page = scrape(metrics_url)
    return sum(v for labels, v in page.get("kafka_server_socket_server_metrics_failed_authentication_total",
                                           {}).items() if dict(labels).get("listener") == listener)
