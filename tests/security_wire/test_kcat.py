"""kcat (the system librdkafka) lists metadata over SASL_SSL with SCRAM-SHA-512 and is refused a wrong password."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.security_wire.conftest import SCRAM_PW, SCRAM_USER

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")


def _kcat(secured, password: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["kcat", "-b", secured.bootstrap("SASL_SSL"), "-L", "-m", "5", "-X", "security.protocol=SASL_SSL",
         "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", f"sasl.username={SCRAM_USER}",
         "-X", f"sasl.password={password}", "-X", f"ssl.ca.location={secured.certs['ca']}"],
        capture_output=True, text=True, timeout=30)


def test_kcat_metadata_over_sasl_ssl(secured):
    ok = _kcat(secured, SCRAM_PW)
    assert ok.returncode == 0, ok.stderr
    assert f"127.0.0.1:{secured.ports['SASL_SSL']}" in ok.stdout
    bad = _kcat(secured, "wrong")
    assert bad.returncode != 0 and "invalid credentials" in bad.stderr
