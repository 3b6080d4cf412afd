"""Grafana dashboards: structure, provisioning, and `kafkascope dashboards push` against a local stand-in of
Grafana's HTTP API (an http.server on 127.0.0.1 that records the requests)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

from dashboards import build, catalog, grafana
from kafkascope.cli import main


def test_dashboards_are_well_formed():
    boards = grafana.dashboards()
    assert set(boards) == {"cluster-overview", "request-latency", "topics", "xmonitor", "consumer-lag", "slo",
                           "zookeeper", "host", "kraft"}
    uids = [b["uid"] for b in boards.values()]
    assert len(set(uids)) == len(uids)
    overview_rows = [p["title"] for p in boards["cluster-overview"]["panels"] if p["type"] == "row"]
    assert overview_rows == ["Availability", "Speed", "Load", "Traffic"]
    for b in boards.values():
        ids = [p["id"] for p in b["panels"]]
        assert len(set(ids)) == len(ids)
        for p in b["panels"]:
            if p["type"] != "row":
                assert p["targets"] and all(t["expr"] for t in p["targets"]), (b["uid"], p["title"])
    for rel in grafana.provisioning():
        assert yaml.safe_load((catalog.GRAFANA_DIR / rel).read_text())["apiVersion"] == 1


def test_build_writes_one_file_per_board_where_the_catalog_says():
    files = build.generated()
    boards = {p.stem for p in files if p.parent == catalog.DASHBOARDS_DIR}
    assert boards == set(grafana.BOARDS)
    assert {catalog.PROMETHEUS_DIR / f for f in catalog.RULE_FILES} <= set(files)
    assert all(catalog.GRAFANA_DIR / rel in files for rel in grafana.provisioning())


def test_the_dashboards_do_not_import_the_build():
    """grafana.py takes names from the shared modules; the build imports it, not the other way round."""
    code = "import sys, dashboards.grafana; sys.exit('dashboards.build' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=catalog.HERE.parent, timeout=60).returncode == 0


class _Grafana(BaseHTTPRequestHandler):
    requests: list = []

    def _reply(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> dict:
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n)) if n else None
        self.requests.append((self.command, self.path, self.headers.get("Authorization"), body))
        return body

    def do_GET(self):
        self._record()
        if self.path.startswith("/api/folders/"):
            return self._reply(404, {"message": "folder not found"})
        self._reply(404, {"message": "not found"})

    def do_POST(self):
        body = self._record()
        if self.path == "/api/folders":
            return self._reply(200, {"uid": body.get("uid"), "title": body["title"], "id": 7})
        if self.path == "/api/dashboards/db":
            d = body["dashboard"]
            return self._reply(200, {"status": "success", "uid": d["uid"], "url": f"/d/{d['uid']}", "version": 1})
        self._reply(404, {"message": "not found"})

    def log_message(self, *a):
        pass


def test_push_through_grafana_client(capsys):
    _Grafana.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Grafana)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert main(["dashboards", "push", "--url", url, "--token", "glsa_test"]) == 0
    finally:
        server.shutdown()
    reqs = _Grafana.requests
    assert all(auth == "Bearer glsa_test" for _, _, auth, _ in reqs)
    assert reqs[0][:2] == ("GET", "/api/folders/kafkascope")
    assert reqs[1][:2] == ("POST", "/api/folders") and reqs[1][3]["uid"] == "kafkascope"
    pushed = [r[3] for r in reqs if r[1] == "/api/dashboards/db"]
    assert {p["dashboard"]["uid"] for p in pushed} == {b["uid"] for b in grafana.dashboards().values()}
    assert all(p["overwrite"] and p["folderUid"] == "kafkascope" and p["dashboard"]["id"] is None for p in pushed)
    assert f"pushed {len(grafana.dashboards())} dashboards" in capsys.readouterr().out


def test_push_reports_an_unreachable_grafana(capsys):
    assert main(["dashboards", "push", "--url", "http://127.0.0.1:9", "--token", "t"]) == 1
    assert "push to http://127.0.0.1:9 failed" in capsys.readouterr().err
