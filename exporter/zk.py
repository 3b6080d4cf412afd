"""ZooKeeper ensemble metrics: ask each server ``mntr`` (a four-letter word) and export what it says.

    kafkascope zk-exporter --zookeeper 127.0.0.1:2181,127.0.0.1:2182 --listen 127.0.0.1:9141

Names follow the community's mntr exporters (dabealu/zookeeper-exporter, which Grafana dashboard 11442 and most
ZooKeeper alert rules are written against): the mntr key as the metric name, one ``zk_host="H:P"`` label per
server, raw values (no unit conversion). Every scrape asks every server once (2 s timeout each, in parallel).

| metric | from mntr | meaning |
| --- | --- | --- |
| ``zk_up{zk_host}`` | (the connection) | 1 if the server answered ``mntr``, else 0 (and nothing else for it) |
| ``zk_server_state{zk_host,state}`` | ``zk_server_state`` | 1 for the server's state, 0 for the others: leader, follower, observer, standalone |
| ``zk_server_leader{zk_host}`` | ``zk_server_state`` | 1 on the leader (``sum(zk_server_leader) == 1`` in a healthy ensemble; a standalone server reports 0) |
| ``zk_avg_latency``, ``zk_max_latency``, ``zk_min_latency`` | same | request latency in ms (ZooKeeper's own, since its last stats reset) |
| ``zk_znode_count`` | same | znodes in the data tree |
| ``zk_watch_count`` | same | watches set on this server |
| ``zk_ephemerals_count`` | same | ephemeral znodes |
| ``zk_outstanding_requests`` | same | requests queued and not yet answered |
| ``zk_packets_sent``, ``zk_packets_received`` | same | packets since start (counters in meaning, exported as the plain values, as the community does) |
| ``zk_num_alive_connections`` | same | client connections |
| ``zk_approximate_data_size`` | same | bytes of znode data and paths |
| ``zk_open_file_descriptor_count``, ``zk_max_file_descriptor_count`` | same | file descriptors |
| ``zk_followers``, ``zk_synced_followers``, ``zk_pending_syncs`` | same | leader only |
| ``zk_version{zk_host,version}`` | ``zk_version`` | always 1 |
| ``zk_<key>`` | any other numeric key | as mntr says (ZooKeeper 3.6+ adds many) |

The curated metrics above carry a HELP text; the other numeric keys are passed through with a generic one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import socket
from collections.abc import Iterator, Sequence

from prometheus_client.core import CollectorRegistry, GaugeMetricFamily
from prometheus_client.exposition import generate_latest

from exporter.web_config import WebConfig

log = logging.getLogger(__name__)

SERVER_STATES = ("leader", "follower", "observer", "standalone")
HELP = {
    "zk_avg_latency": "Average request latency (ms), from mntr",
    "zk_max_latency": "Maximum request latency (ms), from mntr",
    "zk_min_latency": "Minimum request latency (ms), from mntr",
    "zk_znode_count": "Number of znodes, from mntr",
    "zk_watch_count": "Number of watches, from mntr",
    "zk_ephemerals_count": "Number of ephemeral znodes, from mntr",
    "zk_outstanding_requests": "Requests queued and not yet answered, from mntr",
    "zk_packets_sent": "Packets sent since start, from mntr",
    "zk_packets_received": "Packets received since start, from mntr",
    "zk_num_alive_connections": "Live client connections, from mntr",
    "zk_approximate_data_size": "Approximate data size in bytes, from mntr",
    "zk_open_file_descriptor_count": "Open file descriptors, from mntr",
    "zk_max_file_descriptor_count": "File descriptor limit, from mntr",
    "zk_followers": "Followers (leader only), from mntr",
    "zk_synced_followers": "Followers in sync (leader only), from mntr",
    "zk_pending_syncs": "Pending syncs (leader only), from mntr",
}
_NAME_OK = re.compile(r"[^a-zA-Z0-9_]")


def parse_hosts(spec: str) -> list[tuple[str, int]]:
    """"h1:p1,h2:p2" (a chroot after the last port is ignored, so a zookeeper.connect string works) -> pairs."""
    out = []
    for item in spec.split("/", 1)[0].split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        out.append((host, int(port)) if sep else (item, 2181))
    if not out:
        raise ValueError(f"no ZooKeeper server in {spec!r}")
    return out


def mntr(host: str, port: int, timeout_s: float = 2.0) -> dict[str, str] | None:
    """The server's ``mntr`` answer as key -> raw string, None if it does not answer (or refuses mntr)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            s.sendall(b"mntr")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
    except OSError:
        return None
    out = {}
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            out[key.strip()] = value.strip()
    return out or None  # "mntr is not executed because it is not in the whitelist." has no tab


def _number(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


class ZooKeeperCollector:
    """prometheus-client custom collector: one ``mntr`` per server per scrape."""

    def __init__(self, hosts: Sequence[tuple[str, int]], timeout_s: float = 2.0) -> None:
        self.hosts = list(hosts)
        self.timeout_s = timeout_s
        self._pool = concurrent.futures.ThreadPoolExecutor(max(1, len(self.hosts)), thread_name_prefix="zk-mntr")

    def scrape(self) -> dict[str, dict[str, str] | None]:
        futs = {f"{h}:{p}": self._pool.submit(mntr, h, p, self.timeout_s) for h, p in self.hosts}
        return {k: f.result() for k, f in futs.items()}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        answers = self.scrape()
        up = GaugeMetricFamily("zk_up", "1 if the server answered mntr", labels=["zk_host"])
        state = GaugeMetricFamily("zk_server_state", "Server state from mntr (1 for the current one)",
                                  labels=["zk_host", "state"])
        leader = GaugeMetricFamily("zk_server_leader", "1 if the server is the ensemble leader", labels=["zk_host"])
        version = GaugeMetricFamily("zk_version", "ZooKeeper version (always 1)", labels=["zk_host", "version"])
        values: dict[str, GaugeMetricFamily] = {}
        for zk_host, m in answers.items():
            up.add_metric([zk_host], 1 if m is not None else 0)
            if m is None:
                continue
            current = m.get("zk_server_state", "")
            for st in SERVER_STATES if current in SERVER_STATES else (*SERVER_STATES, current):
                state.add_metric([zk_host, st], int(st == current))
            leader.add_metric([zk_host], int(current == "leader"))
            if "zk_version" in m:
                version.add_metric([zk_host, m["zk_version"].split(",", 1)[0]], 1)
            for key, raw in m.items():
                if key in ("zk_server_state", "zk_version"):
                    continue
                v = _number(raw)
                if v is None:
                    continue
                name = _NAME_OK.sub("_", key if key.startswith("zk_") else f"zk_{key}")
                fam = values.get(name)
                if fam is None:
                    fam = values[name] = GaugeMetricFamily(name, HELP.get(name, f"{key} from mntr"),
                                                           labels=["zk_host"])
                fam.add_metric([zk_host], v)
        yield up
        yield state
        yield leader
        yield version
        yield from values.values()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def build_registry(hosts: Sequence[tuple[str, int]], timeout_s: float = 2.0) -> tuple[CollectorRegistry,
                                                                                      ZooKeeperCollector]:
    reg = CollectorRegistry(auto_describe=False)
    collector = ZooKeeperCollector(hosts, timeout_s)
    reg.register(collector)
    return reg, collector


async def serve(hosts: Sequence[tuple[str, int]], listen_host: str, listen_port: int,
                ready: asyncio.Event | None = None, web_config: WebConfig | None = None,
                bound: list[int] | None = None) -> None:
    """Serve ``/metrics`` until cancelled. The mntr round trips run in worker threads, not on the loop.

    `web_config`: TLS and basic auth (exporter.web_config); `bound` gets the port once listening."""
    from exporter.http import MetricsHTTPServer

    reg, collector = build_registry(hosts)
    loop = asyncio.get_running_loop()
    cache: dict[str, bytes] = {}

    # MetricsHTTPServer renders synchronously on the loop: refresh in a thread, then serve what it produced.
    class _Server(MetricsHTTPServer):
        async def _handle(self, reader, writer):
            cache["body"] = await loop.run_in_executor(None, generate_latest, reg)
            await super()._handle(reader, writer)

    server = _Server(lambda: cache.get("body") or generate_latest(reg), listen_host, listen_port,
                     web_config=web_config)
    port = await server.start()
    if bound is not None:
        bound.append(port)
    scheme = "https" if web_config is not None and web_config.tls is not None else "http"
    zks = ",".join(f"{h}:{p}" for h, p in hosts)
    log.info("zk-exporter: ZooKeeper %s on %s://%s:%d/metrics", zks, scheme, listen_host, port)
    print(f"zk-exporter: {scheme}://{listen_host}:{port}/metrics (ZooKeeper {zks})", flush=True)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()
        collector.close()
