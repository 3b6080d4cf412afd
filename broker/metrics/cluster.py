"""Cluster-mode metrics: controller elections and the ZooKeeper client (``SessionExpireListener``,
``ZooKeeperClientMetrics``). A standalone broker has no honest values for these, so it does not define them.

The controller and kazoo call from their own threads; every recording is handed to the event loop (`post`), so
the registry is only ever touched there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from exporter.registry import Registry

if TYPE_CHECKING:
    from broker.broker import Broker

ZK_CLIENT_STATES = ("CONNECTED", "CONNECTING", "CONNECTED_RO", "EXPIRED_SESSION", "AUTH_FAILED", "CLOSED")
# Kafka's ZooKeeperClient meters, one per KeeperState event: ZooKeeper<event>PerSec.
ZK_EVENTS = ("Disconnects", "SyncConnects", "AuthFailures", "ReadOnlyConnects", "SaslAuthentications", "Expires")


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
    def __init__(self, reg: Registry, broker: Broker, post: Callable[..., None]) -> None:
        self._broker = broker
        self._post = post
        cs = ("kafka.controller", "ControllerStats")
        self.unclean_elections = reg.meter(*cs, "UncleanLeaderElectionsPerSec")
        self.leader_election = reg.timer(*cs, "LeaderElectionRateAndTimeMs")
        if not broker.clustered:
            return
        sel = ("kafka.server", "SessionExpireListener")
        self.zk_events = {e: reg.meter(*sel, f"ZooKeeper{e}PerSec") for e in ZK_EVENTS}
        self.zk_request_latency = reg.histogram("kafka.server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs")
        reg.gauge_family(*sel, "SessionState", self._zk_session_state)

    def wire(self) -> None:
        b = self._broker
        if not b.clustered:
            return
        controller = getattr(b.metadata, "controller", None)
        if controller is not None:
            controller.on_leader_election = self._on_leader_election
        zk = getattr(b.metadata, "_zk", None)
        if zk is not None:
            zk.add_listener(self._on_zk_state)
            self._wrap_zk_calls(zk)

    def _on_leader_election(self, ms: float, unclean: bool) -> None:  # controller thread
        self._post(self._record_election, ms, unclean)

    def _record_election(self, ms: float, unclean: bool) -> None:
        self.leader_election.update(ms)
        if unclean:
            self.unclean_elections.mark()

    def _on_zk_state(self, state: str) -> None:  # kazoo thread, which has just set its client state; never block
        zk = getattr(self._broker.metadata, "_zk", None)
        event = zk_event(str(state), str(zk.client_state) if zk is not None else "")
        if event is not None:
            self._post(self.zk_events[event].mark)

    def _zk_session_state(self) -> Iterable[tuple]:
        zk = getattr(self._broker.metadata, "_zk", None)
        current = str(zk.client_state) if zk is not None else "CLOSED"
        return (((("state", st),), int(st == current)) for st in ZK_CLIENT_STATES)

    def _wrap_zk_calls(self, zk: Any) -> None:
        """Time every request kazoo queues, from queueing to its result (ZooKeeperRequestLatencyMs)."""
        orig = zk._call
        timer_update = self.zk_request_latency.update
        post = self._post
        perf = time.perf_counter

        def _call(request, async_object):  # noqa: ANN001, ANN202
            t0 = perf()
            try:
                async_object.rawlink(lambda _r: post(timer_update, (perf() - t0) * 1000))
            except Exception:  # noqa: BLE001, S110 - never break a ZooKeeper request for a metric
                pass
            return orig(request, async_object)

        zk._call = _call
