"""A Kafka client.properties file (Java names: sasl.jaas.config, PEM trust store) is all the CLI tools, xmonitor
and the lag monitor need to work over SASL_SSL (SCRAM-SHA-512) — the same file kafka-*.sh take."""

from __future__ import annotations

import subprocess
import sys

from confluent_kafka import Producer

from common.client_properties import load
from tests.scenarios.command_config import lag_monitor_reports_ok, xmonitor_probes
from tests.security_wire.conftest import SCRAM_PW, SCRAM_USER


def _java_properties(secured, tmp_path, password: str = SCRAM_PW):
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{SCRAM_USER}" password="{password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secured.certs['ca']}\n")
    return path


def _kafkascope(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkascope", *args], capture_output=True, text=True, timeout=60)


def test_cli_tools_take_a_java_client_properties_file(secured, tmp_path):
    bootstrap = secured.bootstrap("SASL_SSL")
    props = _java_properties(secured, tmp_path)
    r = _kafkascope("topics", "--bootstrap-server", bootstrap, "--command-config", str(props),
                    "--create", "--topic", "cmd-config", "--partitions", "2")
    assert r.returncode == 0, r.stderr
    r = _kafkascope("topics", "--bootstrap-server", bootstrap, "--command-config", str(props), "--list")
    assert r.returncode == 0 and "cmd-config" in r.stdout.split(), r.stderr
    wrong = _java_properties(secured, tmp_path, password="wrong")
    r = _kafkascope("topics", "--bootstrap-server", bootstrap, "--command-config", str(wrong), "--list")
    assert r.returncode == 1 and "Authentication failed" in r.stderr and "SCRAM-SHA-512" in r.stderr, r.stderr


def test_xmonitor_probes_over_sasl_ssl(secured, tmp_path):
    xmonitor_probes(secured.bootstrap("SASL_SSL"), _java_properties(secured, tmp_path), tmp_path)


def test_lag_monitor_over_sasl_ssl(secured, tmp_path):
    lag_monitor_reports_ok(secured.bootstrap("SASL_SSL"), _java_properties(secured, tmp_path))


def test_transactions_tool_over_sasl_ssl(secured, tmp_path):
    """`kafkascope transactions` sends its requests itself (confluent-kafka has no admin call for them): the same
    TLS and SCRAM login as the other tools."""
    bootstrap, props = secured.bootstrap("SASL_SSL"), _java_properties(secured, tmp_path)
    conf = {**load(props), "bootstrap.servers": bootstrap}
    tid = "cmd-config-txn"
    p = Producer({**conf, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("cmd-config-txn", b"open")
    p.flush(30)
    try:
        r = _kafkascope("transactions", "--bootstrap-server", bootstrap, "--command-config", str(props), "--list")
        assert r.returncode == 0, r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert rows[0][:2] == ["TransactionalId", "Coordinator"]
        assert [row[0] for row in rows[1:]] == [tid] and rows[1][-1] == "Ongoing"
    finally:
        p.abort_transaction(30)
