"""The lag monitor's HTTP server (/metrics and the Burrow API) behind a web config (TLS, basic auth)."""

from __future__ import annotations

import argparse
import base64
import ssl
import urllib.error
import urllib.request

import bcrypt
import pytest

from exporter import web_config
from kafkascope.cli import lag as lag_cli
from kafkascope.local.security import make_certs
from lagmonitor.api import LagAPI, serve
from lagmonitor.collector import wall_ms
from lagmonitor.config import ConfigError, read_config
from lagmonitor.monitor import LagMonitor

USER, PASSWORD = "prometheus", "scrape-secret"


def _get(url: str, ctx: ssl.SSLContext, password: str | None = None) -> int:
    headers = {}
    if password is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5, context=ctx) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_web_config_file_in_lag_yaml_and_flag(tmp_path):
    y = tmp_path / "lag.yaml"
    y.write_text("http-port: 0\nweb-config-file: /etc/kafkascope/web.yml\n")
    assert read_config(y).web_config_file == "/etc/kafkascope/web.yml"
    with pytest.raises(ConfigError):
        y.write_text("web-config-file: 3\n")
        read_config(y)
    p = argparse.ArgumentParser()
    lag_cli.register(p.add_subparsers())
    for flag in ("--web.config.file", "--web-config-file"):
        args = p.parse_args(["lag", "--bootstrap-servers", "x:1", flag, "/w.yml"])
        assert lag_cli.lag_config(args).web_config_file == "/w.yml"
    assert lag_cli.lag_config(p.parse_args(["lag"])).web_config_file is None


def test_lag_http_server_with_tls_and_basic_auth(tmp_path):
    certs = make_certs(tmp_path / "certs")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    w = tmp_path / "web.yml"
    w.write_text("tls_server_config:\n  cert_file: certs/server.crt\n  key_file: certs/server.key\n"
                 f"basic_auth_users:\n  {USER}: '{hashed}'\n")
    server = serve(LagAPI(LagMonitor(read_config(None)), wall_ms), 0, web_config=web_config.load(w))
    base = f"https://127.0.0.1:{server.server_address[1]}"
    ctx = ssl.create_default_context(cafile=str(certs["ca"]))
    try:
        for path in ("/metrics", "/v3/kafka", "/burrow/admin"):
            assert _get(base + path, ctx) == 401, path
            assert _get(base + path, ctx, "wrong") == 401, path
            assert _get(base + path, ctx, PASSWORD) == 200, path
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(base + "/metrics", ssl.create_default_context(), PASSWORD)
    finally:
        server.shutdown()
        server.server_close()
