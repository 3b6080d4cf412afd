"""The one /metrics endpoint: the routing rule both servers share, and the threaded server."""

import gzip
import json
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from exporter.http import CONTENT_TYPE, registry_exposition, respond, serve_threaded, text_exposition


def test_respond_routes_metrics_and_refuses_the_rest():
    ok = lambda: (b"m 1\n", "t")  # noqa: E731
    assert respond("GET", "/metrics", ok) == (200, b"m 1\n", "t")
    assert respond("HEAD", "/", ok)[0] == 200
    assert respond("POST", "/metrics", ok)[0] == 405
    assert respond("GET", "/other", ok)[0] == 404

    def boom():
        raise RuntimeError("x")
    assert respond("GET", "/metrics", boom)[0] == 500


def _get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, r.headers, r.read()


@pytest.fixture
def registry_server():
    reg = CollectorRegistry()
    Counter("probe_events", "events", registry=reg).inc(3)
    server = serve_threaded(registry_exposition(reg), "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_registry_exposition_negotiates_format_and_gzip(registry_server):
    status, headers, body = _get(f"{registry_server}/metrics")
    assert status == 200 and headers["Content-Type"] == CONTENT_TYPE and b"probe_events_total 3.0" in body
    _, headers, body = _get(f"{registry_server}/metrics?x=1", {"Accept": "application/openmetrics-text",
                                                               "Accept-Encoding": "gzip"})
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert headers["Content-Encoding"] == "gzip" and gzip.decompress(body).endswith(b"# EOF\n")
    with pytest.raises(urllib.error.HTTPError) as e:
        _get(f"{registry_server}/nope")
    assert e.value.code == 404


def test_other_routes_take_everything_but_metrics():
    seen = []

    def other(method, url):
        seen.append((method, url))
        return 418, json.dumps({"url": url}).encode(), "application/json"
    server = serve_threaded(text_exposition(lambda: "x 1\n"), "127.0.0.1", 0, other=other)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert _get(f"{base}/metrics")[2] == b"x 1\n"
        with pytest.raises(urllib.error.HTTPError) as e:
            _get(f"{base}/?q=1")
        assert e.value.code == 418 and seen == [("GET", "/?q=1")]
    finally:
        server.shutdown()
        server.server_close()
