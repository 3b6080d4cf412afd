"""exporter/zk.py against fake ZooKeeper servers answering `mntr` (the real one is in test_cluster_metrics.py)."""

from __future__ import annotations

import socket
import threading

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporter import zk

LEADER_MNTR = """zk_version\t3.8.0-abc, built on 2023-01-01
zk_server_state\tleader
zk_avg_latency\t0.5
zk_max_latency\t12
zk_min_latency\t0
zk_packets_received\t1000
zk_packets_sent\t1001
zk_num_alive_connections\t7
zk_outstanding_requests\t2
zk_znode_count\t42
zk_watch_count\t9
zk_ephemerals_count\t4
zk_approximate_data_size\t4096
zk_followers\t2
zk_synced_followers\t2
zk_weird.key-name\t3
zk_text_only\tnot-a-number
"""
FOLLOWER_MNTR = "zk_server_state\tfollower\nzk_avg_latency\t1\nzk_znode_count\t42\n"


class FakeZooKeeper:
    """Answers one four-letter word per connection with a fixed text, then closes (as ZooKeeper does)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer.encode()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.words: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.words.append(conn.recv(4))
                conn.sendall(self.answer)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def ensemble():
    servers = [FakeZooKeeper(LEADER_MNTR), FakeZooKeeper(FOLLOWER_MNTR)]
    yield servers
    for s in servers:
        s.close()


def _samples(reg) -> dict:
    out = {}
    for fam in text_string_to_metric_families(generate_latest(reg).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_parse_hosts_accepts_a_zookeeper_connect_string():
    assert zk.parse_hosts("127.0.0.1:2181,10.0.0.2:2182/kafkascope") == [("127.0.0.1", 2181), ("10.0.0.2", 2182)]
    assert zk.parse_hosts("localhost") == [("localhost", 2181)]
    with pytest.raises(ValueError):
        zk.parse_hosts(" , ")


def test_collector_exports_each_server_with_community_names(ensemble):
    leader, follower = ensemble
    dead = socket.create_server(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()  # nobody listens there now
    reg, collector = zk.build_registry([("127.0.0.1", leader.port), ("127.0.0.1", follower.port),
                                        ("127.0.0.1", dead_port)], timeout_s=1.0)
    try:
        s = _samples(reg)
    finally:
        collector.close()
    lh, fh, dh = (f"127.0.0.1:{p}" for p in (leader.port, follower.port, dead_port))
    assert leader.words == [b"mntr"] and follower.words == [b"mntr"]
    assert s[("zk_up", (("zk_host", lh),))] == 1 and s[("zk_up", (("zk_host", dh),))] == 0
    assert s[("zk_server_state", (("state", "leader"), ("zk_host", lh)))] == 1
    assert s[("zk_server_state", (("state", "follower"), ("zk_host", lh)))] == 0
    assert s[("zk_server_state", (("state", "follower"), ("zk_host", fh)))] == 1
    assert sum(v for (n, _), v in s.items() if n == "zk_server_leader") == 1  # one leader in the ensemble
    host = (("zk_host", lh),)
    expected = {"zk_avg_latency": 0.5, "zk_max_latency": 12, "zk_min_latency": 0, "zk_packets_received": 1000,
                "zk_packets_sent": 1001, "zk_num_alive_connections": 7, "zk_outstanding_requests": 2,
                "zk_znode_count": 42, "zk_watch_count": 9, "zk_ephemerals_count": 4,
                "zk_approximate_data_size": 4096, "zk_followers": 2, "zk_synced_followers": 2,
                "zk_weird_key_name": 3}
    for name, v in expected.items():
        assert s[(name, host)] == v, name
    assert s[("zk_version", (("version", "3.8.0-abc"), ("zk_host", lh)))] == 1
    assert not any(n == "zk_text_only" for n, _ in s)
    assert not any(dict(lbl).get("zk_host") == dh for n, lbl in s if n != "zk_up")


def test_mntr_refused_by_the_whitelist_reads_as_down():
    srv = FakeZooKeeper("mntr is not executed because it is not in the whitelist.\n")
    try:
        assert zk.mntr("127.0.0.1", srv.port) is None
    finally:
        srv.close()


def test_serve_behind_a_web_config(ensemble, tmp_path):
    """`kafkascope zk-exporter --web.config.file`: /metrics answers 401 without credentials, 200 with them."""
    import asyncio
    import base64
    import urllib.error
    import urllib.request

    import bcrypt

    from exporter.web_config import load

    w = tmp_path / "web.yml"
    w.write_text(f"basic_auth_users:\n  prom: '{bcrypt.hashpw(b'pw', bcrypt.gensalt(4)).decode()}'\n")
    hosts = [("127.0.0.1", s.port) for s in ensemble]

    def get(port: int, auth: str | None) -> tuple[int, bytes]:
        headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, b""

    async def main() -> list:
        ready, bound = asyncio.Event(), []
        task = asyncio.create_task(zk.serve(hosts, "127.0.0.1", 0, ready, web_config=load(w), bound=bound))
        await ready.wait()
        try:
            return [await asyncio.to_thread(get, bound[0], a) for a in (None, "prom:wrong", "prom:pw")]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    (none, _), (wrong, _), (right, body) = asyncio.run(main())
    assert (none, wrong, right) == (401, 401, 200)
    assert b'zk_server_state{state="leader"' in body


def test_cli_refuses_a_bad_web_config(tmp_path, capsys):
    import argparse

    from kafkascope.cli import zk_exporter

    bad = tmp_path / "web.yml"
    bad.write_text("tls_server_config:\n  key_file: k\n")
    p = argparse.ArgumentParser()
    zk_exporter.register(p.add_subparsers())
    args = p.parse_args(["zk-exporter", "--zookeeper", "127.0.0.1:1", "--web.config.file", str(bad)])
    assert args.run(args) == 2
    assert "tls_server_config.cert_file" in capsys.readouterr().err
