"""The broker's /metrics behind `prometheus.web.config.file` (TLS + basic auth), and a real Prometheus scraping it."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import bcrypt
import pytest

from broker.config import BrokerConfig, ConfigError
from common.polling import wait_for_port
from kafkascope.local.broker_process import BrokerProcess, free_port
from kafkascope.local.security import make_certs
from tests.e2e.helpers import wait_until

USER, PASSWORD = "prometheus", "scrape-secret"


def _get(url: str, ctx: ssl.SSLContext, auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
    headers = {}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=ctx) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_bad_web_config_is_a_config_error_naming_the_key(tmp_path):
    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  bob: not-a-hash\n")
    with pytest.raises(ConfigError, match=r"prometheus\.web\.config\.file.*basic_auth_users\.bob"):
        BrokerConfig.from_properties({"prometheus.web.config.file": str(bad)})
    assert BrokerConfig.from_properties({}).prometheus_web_config_file == ""


@pytest.fixture(scope="module")
def secured_metrics(tmp_path_factory):
    d = tmp_path_factory.mktemp("broker-web")
    certs = make_certs(d / "certs")
    web = d / "web.yml"
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    web.write_text("tls_server_config:\n  cert_file: certs/server.crt\n  key_file: certs/server.key\n"
                   f"basic_auth_users:\n  {USER}: '{hashed}'\n")
    mport = free_port()
    with BrokerProcess(d / "broker", **{"prometheus.listener": f"127.0.0.1:{mport}",
                                        "prometheus.web.config.file": str(web)}) as b:
        yield b, mport, certs


def test_broker_metrics_need_tls_and_credentials(secured_metrics):
    _, mport, certs = secured_metrics
    url = f"https://127.0.0.1:{mport}/metrics"
    trusting = ssl.create_default_context(cafile=str(certs["ca"]))
    wait_until(lambda: _get(url, trusting)[0] == 401, 30, 0.2, what="broker /metrics answering")
    assert _get(url, trusting, (USER, "wrong"))[0] == 401
    code, body = _get(url, trusting, (USER, PASSWORD))
    assert code == 200 and b"kafka_controller_kafkacontroller_activecontrollercount" in body
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(url, ssl.create_default_context(), (USER, PASSWORD))


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian package `prometheus` not installed")
def test_prometheus_scrapes_the_secured_endpoint(secured_metrics, tmp_path):
    """The scrape config Prometheus needs for it: scheme https, tls_config.ca_file, basic_auth."""
    _, mport, certs = secured_metrics
    pport = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n  - job_name: kafka-broker\n    scheme: https\n"
        f"    tls_config:\n      ca_file: {certs['ca']}\n"
        f"    basic_auth:\n      username: {USER}\n      password: {PASSWORD}\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n")
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{pport}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port("127.0.0.1", pport, lambda: proc.poll() is None, timeout_s=30)

        def up() -> list:
            q = urllib.parse.urlencode({"query": "up"})
            try:
                body = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{pport}/api/v1/query?{q}", timeout=5)
                                  .read())
            except OSError:
                return []
            return [r for r in body["data"]["result"] if r["value"][1] == "1"]
        wait_until(up, 60, 0.5, what="the secured broker target up in Prometheus")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
