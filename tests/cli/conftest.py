"""CLI tests run against `shared_broker`; KAFKASCOPE_TEST_BOOTSTRAP=H:P points them at a running
cluster instead and KAFKASCOPE_TEST_BROKER=apache at a reference Apache Kafka started here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkascope.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def _apache_kafka():
    from kafkascope.local.apache_kafka import ApacheKafka

    with ApacheKafka() as k:
        yield k.bootstrap


@pytest.fixture
def bootstrap(request) -> str:
    if os.environ.get("KAFKASCOPE_TEST_BOOTSTRAP"):
        return os.environ["KAFKASCOPE_TEST_BOOTSTRAP"]
    if os.environ.get("KAFKASCOPE_TEST_BROKER") == "apache":
        return request.getfixturevalue("_apache_kafka")
    return request.getfixturevalue("shared_broker").bootstrap


@pytest.fixture
def cli(capsys, bootstrap):
    """Run `kafkascope COMMAND --bootstrap-server B ARGS...` in-process: (exit code, stdout, stderr)."""

    def run(command: str, *args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([command, "--bootstrap-server", bootstrap, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def cli_proc(bootstrap):
    """The same as a subprocess, for commands that read stdin."""

    def run(command: str, *args: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kafkascope", command, "--bootstrap-server", bootstrap,
                               *args], input=stdin, capture_output=True, timeout=timeout, cwd=ROOT)

    return run
