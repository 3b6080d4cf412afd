"""`kafkascope cluster up --impl apache-kafka --version 4.1.1 --security sasl_ssl` as a user runs it (slow: three
Kafka 4.1 KRaft nodes): it prints the security usage, the printed commands and Kafka's console tools log in with the
client.properties it wrote, status reads the quorum over the SASL_SSL listener, and a killed node comes back ready
(SCRAM login included) over the secured CONTROLLER and client listeners; and a cluster with a separate controller."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys

import pytest

from common import client_properties
from common.polling import wait_until
from kafkascope.cli import main
from kafkascope.local import kraft, kraft_security
from kafkascope.local.apache_kafka import DEFAULT_VERSION
from kafkascope.local.launcher import brokers_seen_by
from tests.cluster.test_cli import ROOT, _Lines, _processes_mentioning
from tests.cluster.test_kraft_cluster import _cleanup
from tests.interop.conftest import apache_kafka_or_skip
from tests.interop.test_kafka_tools import CONSOLE_CONSUMER, CONSOLE_PRODUCER, kafka_tool  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed")]


def test_secured_kraft_cluster_through_the_cli(tmp_path, capsys, kafka_tool):  # noqa: F811 - fixture
    apache_kafka_or_skip(DEFAULT_VERSION)
    data_dir = tmp_path / "k"
    up = subprocess.Popen([sys.executable, "-m", "kafkascope", "cluster", "up", "--impl", "apache-kafka",
                           "--version", DEFAULT_VERSION, "--brokers", "3", "--security", "sasl_ssl",
                           "--data-dir", str(data_dir), "--timeout", "180", "--poll-interval", "0.5"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        out = _Lines(up.stdout)
        bootstrap = out.until("bootstrap servers:", 300).split(":", 1)[1].strip()
        security = out.until("security: SASL_SSL", 10)
        assert kraft_security.AUTHORIZER in security and "super user User:admin" in security
        props = out.until("client properties:", 10).split(":", 1)[1].strip()
        ours = out.until("  kafkascope topics", 5).split()
        assert props == str(data_dir / "security" / "client.properties")
        assert ours[ours.index("--command-config") + 1] == props
        server = client_properties.read(data_dir / "broker-0" / "server.properties")
        assert server["listeners"].startswith("SASL_SSL://127.0.0.1:") and "PLAINTEXT" not in server["listeners"]
        assert server["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL"

        # the printed command, as the admin whose SCRAM credential kafka-storage format wrote
        capsys.readouterr()
        assert main(["topics", "--bootstrap-server", bootstrap, "--command-config", props, "--create",
                     "--topic", "secured", "--partitions", "1", "--replication-factor", "3"]) == 0
        capsys.readouterr()
        assert main(ours[1:]) == 0 and "secured" in capsys.readouterr().out.split()

        # Kafka's console tools and ours, with the same file
        bs = ["--bootstrap-server", bootstrap, "--topic", "secured"]
        kafka_tool(CONSOLE_PRODUCER, *bs, "--producer.config", props, "--sync", stdin="java-1\njava-2\n")
        with open(tmp_path / "lines", "w+") as stdin:
            stdin.write("ours-1\n")
            stdin.seek(0)
            r = subprocess.run([sys.executable, "-m", "kafkascope", "console-producer", *bs, "--producer.config",
                                props], stdin=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        java = kafka_tool(CONSOLE_CONSUMER, *bs, "--consumer.config", props, "--from-beginning",
                          "--max-messages", "3", "--timeout-ms", "30000").stdout
        assert java.split() == ["java-1", "java-2", "ours-1"]
        r = subprocess.run([sys.executable, "-m", "kafkascope", "console-consumer", *bs, "--consumer.config", props,
                            "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000"],
                           capture_output=True, text=True, timeout=90, cwd=ROOT)
        assert r.returncode == 0 and r.stdout.split() == ["java-1", "java-2", "ours-1"], r.stderr

        # status: security, and the quorum read with DescribeQuorum over SASL_SSL
        capsys.readouterr()
        assert main(["cluster", "status", "--data-dir", str(data_dir)]) == 0
        status = capsys.readouterr().out
        assert f"security: sasl_ssl (client properties: {props})" in status and "quorum: leader " in status

        # a killed node starts again (its broker logs in to the controllers over SASL_SSL/PLAIN) and takes the
        # admin's SCRAM login
        assert main(["cluster", "kill", "1", "--data-dir", str(data_dir)]) == 0
        assert main(["cluster", "start", "1", "--data-dir", str(data_dir), "--timeout", "180"]) == 0
        launcher = kraft.attach(data_dir)
        scram = launcher.kit().client_security("SCRAM-SHA-512")
        launcher.kit().wait_admin_scram([launcher.broker_port(1)], 60)
        wait_until(lambda: asyncio.run(brokers_seen_by(launcher.broker_port(1), security=scram)) == {0, 1, 2}, 60,
                   interval_s=0.5, what="node 1 sees every broker, logged in with SCRAM",
                   retry_on=(OSError, EOFError, TimeoutError))

        up.send_signal(signal.SIGINT)
        assert up.wait(90) == 0
    finally:
        _cleanup(up, data_dir)
    assert _processes_mentioning(str(data_dir)) == []


def test_separate_controller_secured(tmp_path):
    """--controllers 1 --brokers 2: the broker-only nodes log in to the controller-only node over its SASL_SSL
    CONTROLLER listener (PLAIN), and DescribeQuorum answers on both kinds of listener with the admin's login."""
    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()  # the JMX exporter agent comes with the 3.9 line
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.scenarios.clients import consume, produce
    from tests.scenarios.security import confluent_conf

    launcher = kraft.KRaftLauncher(tmp_path, brokers=2, controllers=1, security="sasl_ssl")
    try:
        launcher.start_all(180)
        login = launcher.client_security()
        controller_port = next(s.port for s in launcher.status() if s.id == "2")   # its CONTROLLER listener
        for port in (launcher.broker_port(0), controller_port):
            q = asyncio.run(kraft.describe_quorum(port, 10, login))
            assert q.leader_id == 2 and set(q.voters) == {2} and set(q.observers) == {0, 1}
        conf = confluent_conf(launcher.kit().client_properties_path)
        admin = AdminClient({**conf, "bootstrap.servers": launcher.bootstrap})
        admin.create_topics([NewTopic("roles", 1, 2)])["roles"].result(60)
        produce("confluent", launcher.bootstrap, "roles", [(b"k", b"v", [])], **conf)
        assert [r[3] for r in consume("confluent", launcher.bootstrap, "roles", 1, **conf)] == [b"v"]
    finally:
        launcher.shutdown()
