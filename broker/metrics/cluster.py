"""Cluster-mode metrics: controller elections and the ZooKeeper client (``SessionExpireListener``,
``ZooKeeperClientMetrics``). A standalone broker has no honest values for these, so it does not define them.

The controller and kazoo call from their own threads; every recording is handed to the event loop (`post`), so
the registry is only ever touched there. The broker hands over the hooks (`on_leader_election` to the controller,
the ZooKeeper client to `watch_zookeeper`); nothing here reaches into the metadata store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from exporter.registry import Registry

ZK_CLIENT_STATES = ("CONNECTED", "CONNECTING", "CONNECTED_RO", "EXPIRED_SESSION", "AUTH_FAILED", "CLOSED")
# Kafka's ZooKeeperClient meters, one per KeeperState event: ZooKeeper<event>PerSec.
ZK_EVENTS = ("Disconnects", "SyncConnects", "AuthFailures", "ReadOnlyConnects", "SaslAuthentications", "Expires")


class ZooKeeperClient(Protocol):
    """What the metrics read of the broker's ZooKeeper client (kazoo's KazooClient, with the request hook of
    broker.controller.zk_client.TimedKazooClient)."""

    @property
    def client_state(self) -> object: ...

    def add_listener(self, listener: Callable[[str], object]) -> None: ...

    def add_request_listener(self, listener: Callable[[float], None]) -> None: ...


def zk_event(kazoo_state: str, client_state: str) -> str | None:
    """The KeeperState event Kafka's watcher would see for a kazoo state change (listener state, then the client's
    KeeperState): CONNECTED is SyncConnected or ConnectedReadOnly, SUSPENDED Disconnected, LOST Expired or
    AuthFailed; LOST from our own close is no ZooKeeper event. SaslAuthenticated never happens (no SASL)."""
    if kazoo_state == "CONNECTED":
        return "ReadOnlyConnects" if client_state == "CONNECTED_RO" else "SyncConnects"
    if kazoo_state == "SUSPENDED":
        return "Disconnects"
    if kazoo_state == "LOST":
        return {"EXPIRED_SESSION": "Expires", "AUTH_FAILED": "AuthFailures"}.get(client_state)
    return None


class ClusterMetrics:
    """`clustered`: define the ZooKeeper beans (a standalone broker has no honest values for them)."""

    def __init__(self, reg: Registry, clustered: bool, post: Callable[..., None]) -> None:
        self._post = post
        self._zk: ZooKeeperClient | None = None
        cs = ("kafka.controller", "ControllerStats")
        self.unclean_elections = reg.meter(*cs, "UncleanLeaderElectionsPerSec")
        self.leader_election = reg.timer(*cs, "LeaderElectionRateAndTimeMs")
        self._clustered = clustered
        if not clustered:
            return
        sel = ("kafka.server", "SessionExpireListener")
        self.zk_events = {e: reg.meter(*sel, f"ZooKeeper{e}PerSec") for e in ZK_EVENTS}
        self.zk_request_latency = reg.histogram("kafka.server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs")
        reg.gauge_family(*sel, "SessionState", self._zk_session_state)

    def watch_zookeeper(self, zk: ZooKeeperClient) -> None:
        """Listen to the connected client's state changes and request latencies."""
        if not self._clustered:
            return
        self._zk = zk
        zk.add_listener(self._on_zk_state)
        zk.add_request_listener(self._on_zk_request)

    def on_leader_election(self, ms: float, unclean: bool) -> None:
        """The controller elected a leader in `ms` (controller thread)."""
        self._post(self._record_election, ms, unclean)

    def _record_election(self, ms: float, unclean: bool) -> None:
        self.leader_election.update(ms)
        if unclean:
            self.unclean_elections.mark()

    def _on_zk_state(self, state: str) -> None:  # kazoo thread, which has just set its client state; never block
        zk = self._zk
        event = zk_event(str(state), str(zk.client_state) if zk is not None else "")
        if event is not None:
            self._post(self.zk_events[event].mark)

    def _on_zk_request(self, seconds: float) -> None:  # kazoo thread: a request's result arrived
        self._post(self.zk_request_latency.update, seconds * 1000)

    def _zk_session_state(self) -> Iterable[tuple]:
        zk = self._zk
        current = str(zk.client_state) if zk is not None else "CLOSED"
        return (((("state", st),), int(st == current)) for st in ZK_CLIENT_STATES)
