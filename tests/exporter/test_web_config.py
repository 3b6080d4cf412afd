"""The exporter-toolkit web config (TLS, basic auth) on both /metrics servers, through real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest
from prometheus_client import CollectorRegistry, Counter

from exporter import web_config
from exporter.http import MetricsHTTPServer, registry_exposition, serve_threaded, text_exposition
from exporter.web_config import WebConfigError
from kafkascope.local.security import make_certs

USER, PASSWORD = "prometheus", "scrape-secret"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("webcerts")
    c = make_certs(d)
    return {**c, "cert": d / "server.crt", "key": d / "server.key"}


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "web.yml"
    p.write_text(text)
    return p


def _auth(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _get(url: str, headers: dict | None = None, context: ssl.SSLContext | None = None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# --- parsing ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("nope: 1\n", "nope"),
    ("basic_auth_users:\n  alice: plaintext\n", "basic_auth_users.alice"),
    ("basic_auth_users: [a]\n", "basic_auth_users"),
    ("tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file"),
    ("tls_server_config:\n  cert_file: missing.crt\n  key_file: k\n", "tls_server_config.cert_file"),
    ("tls_server_config:\n  bogus: 1\n", "tls_server_config.bogus"),
    ("http_server_config:\n  headers: {X: y}\n", "http_server_config.headers"),
])
def test_parse_errors_name_the_key(tmp_path, text, key):
    with pytest.raises(WebConfigError, match=key.replace(".", r"\.")):
        web_config.load(_write(tmp_path, text))


def test_tls_options_validated(tmp_path, certs):
    base = f"tls_server_config:\n  cert_file: {certs['cert']}\n  key_file: {certs['key']}\n"
    with pytest.raises(WebConfigError, match="min_version"):
        web_config.load(_write(tmp_path, base + "  min_version: TLS99\n"))
    with pytest.raises(WebConfigError, match="client_ca_file is required"):
        web_config.load(_write(tmp_path, base + "  client_auth_type: RequireAndVerifyClientCert\n"))
    with pytest.raises(WebConfigError, match="client_auth_type"):
        web_config.load(_write(tmp_path, base + "  client_auth_type: RequireAnyClientCert\n"))
    with pytest.raises(WebConfigError, match="cannot load"):
        web_config.load(_write(tmp_path, f"tls_server_config:\n  cert_file: {certs['key']}\n"
                                         f"  key_file: {certs['key']}\n"))
    cfg = web_config.load(_write(tmp_path, base + f"  client_ca_file: {certs['ca']}\n"))
    assert cfg.tls is not None and cfg.tls.client_auth_type == "RequireAndVerifyClientCert"


def test_relative_paths_are_read_from_the_config_directory(certs):
    d = certs["cert"].parent
    cfg = web_config.load(_write(d, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"))
    assert cfg.tls is not None and cfg.tls.cert_file == d / "server.crt"


def test_empty_file_means_neither_tls_nor_auth(tmp_path):
    cfg = web_config.load(_write(tmp_path, ""))
    assert cfg.tls is None and cfg.check(None)


def test_basic_auth_check_and_cache(tmp_path, monkeypatch):
    cfg = web_config.load(_write(tmp_path, f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
    good = _auth(USER, PASSWORD)["Authorization"]
    assert not cfg.check(None)
    assert not cfg.check("Bearer x")
    assert not cfg.check("Basic !!!")
    assert not cfg.check(_auth(USER, "wrong")["Authorization"])
    assert not cfg.check(_auth("mallory", PASSWORD)["Authorization"])
    assert cfg.check(good)
    calls = []
    monkeypatch.setattr(web_config.bcrypt, "checkpw", lambda *a: calls.append(a) or False)
    assert cfg.check(good), "a successful check is cached"
    assert not cfg.check(_auth(USER, "wrong")["Authorization"]) and len(calls) == 1, "failures are not cached"


# --- the threaded server (xmonitor, the lag monitor) -----------------------------------------------------------

def _threaded(cfg, other=None):
    reg = CollectorRegistry()
    Counter("probe_events", "events", registry=reg).inc(3)
    if other is not None:
        return serve_threaded(text_exposition(lambda: "x 1\n"), "127.0.0.1", 0, other=other, web_config=cfg)
    return serve_threaded(registry_exposition(reg), "127.0.0.1", 0, web_config=cfg)


def test_threaded_basic_auth(tmp_path):
    cfg = web_config.load(_write(tmp_path, f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
    server = _threaded(cfg, other=lambda m, u: (200, b"burrow\n", "text/plain"))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code, headers, _ = _get(url + "/metrics")
        assert code == 401 and headers["WWW-Authenticate"] == "Basic"
        assert _get(url + "/metrics", _auth(USER, "wrong"))[0] == 401
        assert _get(url + "/v3/kafka", _auth(USER, "wrong"))[0] == 401, "other routes (Burrow API) too"
        assert _get(url + "/metrics", _auth(USER, PASSWORD))[:3:2] == (200, b"x 1\n")
        assert _get(url + "/v3/kafka", _auth(USER, PASSWORD))[2] == b"burrow\n"
    finally:
        server.shutdown()
        server.server_close()


def test_threaded_without_web_config_is_unchanged():
    server = _threaded(None)
    try:
        code, _, body = _get(f"http://127.0.0.1:{server.server_address[1]}/metrics")
        assert code == 200 and b"probe_events_total 3.0" in body
    finally:
        server.shutdown()
        server.server_close()


def _tls_yaml(certs, extra: str = "") -> str:
    return f"tls_server_config:\n  cert_file: {certs['cert']}\n  key_file: {certs['key']}\n{extra}"


def test_threaded_tls_and_auth(tmp_path, certs):
    cfg = web_config.load(_write(tmp_path, _tls_yaml(certs) + f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
    server = _threaded(cfg)
    url = f"https://127.0.0.1:{server.server_address[1]}/metrics"
    trusting = ssl.create_default_context(cafile=str(certs["ca"]))
    try:
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(url, context=ssl.create_default_context())   # the system store does not know the test CA
        assert _get(url, context=trusting)[0] == 401
        code, _, body = _get(url, _auth(USER, PASSWORD), context=trusting)
        assert code == 200 and b"probe_events_total 3.0" in body
        # a plaintext request on the TLS port fails that connection only
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _get(f"http://127.0.0.1:{server.server_address[1]}/metrics")
        assert _get(url, _auth(USER, PASSWORD), context=trusting)[0] == 200
    finally:
        server.shutdown()
        server.server_close()


def test_threaded_mutual_tls(tmp_path, certs):
    cfg = web_config.load(_write(tmp_path, _tls_yaml(certs, f"  client_ca_file: {certs['ca']}\n")))
    server = _threaded(cfg)
    url = f"https://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        no_cert = ssl.create_default_context(cafile=str(certs["ca"]))
        with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
            _get(url, context=no_cert)
        with_cert = ssl.create_default_context(cafile=str(certs["ca"]))
        with_cert.load_cert_chain(str(certs["client_cert"]), str(certs["client_key"]))
        assert _get(url, context=with_cert)[0] == 200
    finally:
        server.shutdown()
        server.server_close()


# --- the asyncio server (broker, zk-exporter) ------------------------------------------------------------------

def test_asyncio_server_tls_and_auth(tmp_path, certs):
    cfg = web_config.load(_write(tmp_path, _tls_yaml(certs) + f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
    trusting = ssl.create_default_context(cafile=str(certs["ca"]))

    async def main() -> list:
        srv = MetricsHTTPServer(lambda: b"m 1\n", "127.0.0.1", 0, web_config=cfg)
        port = await srv.start()
        url = f"https://127.0.0.1:{port}/metrics"
        try:
            def probes() -> list:
                out = [_get(url, context=trusting)]
                out.append(_get(url, _auth(USER, "wrong"), context=trusting))
                out.append(_get(url, _auth(USER, PASSWORD), context=trusting))
                try:
                    _get(url, context=ssl.create_default_context())
                    out.append("trusted")
                except urllib.error.URLError as e:
                    out.append(str(e))
                out.append(_get(url, _auth(USER, PASSWORD), context=trusting))
                return out
            return await asyncio.to_thread(probes)
        finally:
            await srv.stop()

    no_auth, wrong, right, untrusted, after = asyncio.run(main())
    assert no_auth[0] == 401 and no_auth[1]["WWW-Authenticate"] == "Basic"
    assert wrong[0] == 401
    assert right[0] == 200 and right[2] == b"m 1\n"
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted
    assert after[0] == 200, "a failed handshake closes that connection only"
