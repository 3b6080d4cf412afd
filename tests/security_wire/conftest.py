"""A broker with PLAINTEXT, SASL_PLAINTEXT, SASL_SSL and SSL listeners; its test CA comes from the security kit
(kafkascope.local.security.make_certs)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from broker.scram_storage import LocalScramCredentials
from broker.security import scram
from common.polling import wait_for_port
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.process import free_port
from tests.scenarios.transactions import TXN_PROPS
from tests.security_wire.rotation import certs_or_skip

ADMIN, ADMIN_PW = "admin", "admin-secret"
ALICE, ALICE_PW = "alice", "alice-secret"
SCRAM_USER, SCRAM_PW = "carol", "carol-secret"


class SecuredBroker:
    def __init__(self, proc: BrokerProcess, ports: dict[str, int], certs: dict[str, Path]) -> None:
        self.proc, self.ports, self.certs = proc, ports, certs

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def metric(self, name: str, listener: str) -> float:
        """The sum of the /metrics samples whose name contains `name`, for one listener."""
        port = self.proc.props["prometheus.listener"].rsplit(":", 1)[1]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if not line.startswith("#") and name in line and f'listener="{listener}"' in line)

    def client_conf(self, listener: str, mechanism: str | None = None, user: str = ALICE,
                    password: str = ALICE_PW) -> dict:
        conf: dict = {"bootstrap.servers": self.bootstrap(listener), "security.protocol": listener}
        if mechanism is not None:
            conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
        if "SSL" in listener:
            conf["ssl.ca.location"] = str(self.certs["ca"])
        return conf


def broker_props(ports: dict[str, int], certs: dict[str, Path]) -> dict[str, str]:
    plain_jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                  f'username="{ADMIN}" password="{ADMIN_PW}" user_{ADMIN}="{ADMIN_PW}" user_{ALICE}="{ALICE_PW}";')
    scram_jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    props = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["server"]),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"]),
        "listener.name.ssl.ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
        "connections.max.reauth.ms": "600000",
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain_jaas
        for mech in ("scram-sha-256", "scram-sha-512"):
            props[f"listener.name.{listener}.{mech}.sasl.jaas.config"] = scram_jaas
    return props


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """One broker with every listener kind; SCRAM credentials for carol written to its local metadata."""
    d = tmp_path_factory.mktemp("secured")
    certs = certs_or_skip(d)
    ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port(), "SASL_SSL": free_port(), "SSL": free_port()}
    store = LocalScramCredentials(_mkdir(d / "logs"))
    for mech in scram.SCRAM_MECHANISMS.values():
        store.set(SCRAM_USER, mech, scram.generate_credential(mech, SCRAM_PW))
    proc = BrokerProcess(d, port=ports["PLAINTEXT"], prometheus_listener=f"127.0.0.1:{free_port()}")
    proc.props.update(broker_props(ports, certs))
    proc.props.update(TXN_PROPS)   # a standalone broker's transaction state log, as Kafka needs it configured
    with proc:
        for p in ports.values():
            wait_for_port("127.0.0.1", p, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        yield SecuredBroker(proc, ports, certs)


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p
