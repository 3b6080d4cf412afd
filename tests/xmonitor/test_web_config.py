"""xmonitor's /metrics behind a web config (exporter-toolkit web.config.file: TLS, basic auth)."""

from __future__ import annotations

import argparse
import base64
import urllib.error
import urllib.request

import bcrypt
import pytest

from kafkascope.local.cluster import wait_for
from tests.xmonitor.helpers import fast_config
from xmonitor import __main__ as xmonitor_main
from xmonitor.app import XMonitor
from xmonitor.config import ConfigError, from_mapping

USER, PASSWORD = "prometheus", "scrape-secret"


def _code(port: int, password: str | None) -> int:
    headers = {}
    if password is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_web_config_key_flag_and_errors(tmp_path):
    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  bob: plain\n")
    with pytest.raises(ConfigError, match=r"web\.config\.file.*basic_auth_users\.bob"):
        from_mapping({"bootstrap.servers": "x:1", "web.config.file": str(bad)}).validate()
    bad.write_text("")
    assert from_mapping({"bootstrap.servers": "x:1", "web": {"config": {"file": str(bad)}}}).web_config_file
    p = argparse.ArgumentParser()
    xmonitor_main.add_arguments(p)
    assert p.parse_args(["--web.config.file", "w.yml"]).web_config_file == "w.yml"
    assert p.parse_args(["--web-config-file", "w.yml"]).web_config_file == "w.yml"


def test_xmonitor_metrics_need_credentials(shared_broker, tmp_path):
    w = tmp_path / "web.yml"
    w.write_text(f"basic_auth_users:\n  {USER}: '{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()}'\n")
    cfg = fast_config(shared_broker.bootstrap, tmp_path, web_config_file=str(w))
    with XMonitor(cfg) as m:
        assert m.port is not None
        assert _code(m.port, None) == 401
        assert _code(m.port, "wrong") == 401
        wait_for(lambda: _code(m.port, PASSWORD) == 200, timeout=10)
