"""`kafkascope cluster up --security sasl_ssl` as a user runs it: the files it writes, the commands it prints
working as printed, status and a broker restart over the SASL_SSL-only listener, nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from common import client_properties
from kafkascope.cli import main
from kafkascope.local import zookeeper as zkmod
from tests.cluster.test_cli import ROOT, _cleanup, _Lines, _processes_mentioning

pytestmark = pytest.mark.skipif(not zkmod.available() or shutil.which("openssl") is None,
                                reason="java, Debian's zookeeper package or openssl missing")


def test_up_with_security_prints_working_commands(tmp_path, capsys):
    data_dir = tmp_path / "c"
    up = subprocess.Popen([sys.executable, "-m", "kafkascope", "cluster", "up", "--brokers", "2", "--security",
                           "sasl_ssl", "--data-dir", str(data_dir), "--poll-interval", "0.2"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        out = _Lines(up.stdout)
        bootstrap = out.until("bootstrap servers:", 90).split(":", 1)[1].strip()
        props = out.until("client properties:", 10).split(":", 1)[1].strip()
        ours = out.until("  kafkascope topics", 5).split()
        java = out.until("  kafka-topics.sh", 5).split()
        assert props == str(data_dir / "security" / "client.properties")
        assert ours[ours.index("--command-config") + 1] == props == java[java.index("--command-config") + 1]
        assert ours[ours.index("--bootstrap-server") + 1] == bootstrap
        assert client_properties.read(props)["ssl.truststore.location"] == str(data_dir / "security/certs/ca.pem")
        server = (data_dir / "broker-0" / "server.properties").read_text()
        listeners = [line for line in server.splitlines() if line.startswith("listeners=")]
        assert listeners == [f"listeners=SASL_SSL://{bootstrap.split(',')[0]}"]   # no PLAINTEXT listener

        # the printed command, with the SCRAM-SHA-512 admin the launcher created
        capsys.readouterr()
        assert main(["topics", "--bootstrap-server", bootstrap, "--command-config", props, "--create",
                     "--topic", "secured", "--partitions", "1", "--replication-factor", "2"]) == 0
        assert main(ours[1:]) == 0 and "secured" in capsys.readouterr().out.split()

        assert main(["cluster", "status", "--data-dir", str(data_dir)]) == 0
        assert f"security: sasl_ssl (client properties: {props})" in capsys.readouterr().out
        # a restarted broker is ready again over SASL_SSL, and the admin's credential (in ZooKeeper) still works
        assert main(["cluster", "kill", "1", "--data-dir", str(data_dir)]) == 0
        assert main(["cluster", "start", "1", "--data-dir", str(data_dir)]) == 0
        one = bootstrap.split(",")[1]
        capsys.readouterr()
        assert main(["topics", "--bootstrap-server", one, "--command-config", props, "--describe",
                     "--topic", "secured"]) == 0
        capsys.readouterr()
        assert main(["cluster", "status", "--data-dir", str(data_dir), "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["security"] == "sasl_ssl" and status["client_properties"] == props
        assert {p["id"]: p["state"] for p in status["processes"]} == {"zk": "running", "0": "running",
                                                                      "1": "running"}
        up.send_signal(signal.SIGINT)
        assert up.wait(60) == 0
    finally:
        _cleanup(up, data_dir)
    assert _processes_mentioning(str(data_dir)) == []


def test_security_usage_errors(tmp_path, capsys):
    assert main(["cluster", "up", "--standalone", "--security", "sasl_ssl", "--data-dir", str(tmp_path)]) == 1
    assert "not with --standalone" in capsys.readouterr().err
    assert main(["cluster", "up", "--security", "sasl_plaintext", "--data-dir", str(tmp_path)]) == 2
