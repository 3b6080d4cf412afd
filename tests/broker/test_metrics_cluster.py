"""broker/metrics/cluster.py without servers: ZooKeeper client events as Kafka's ZooKeeperClient meters them."""

from types import SimpleNamespace

from broker.metrics.cluster import ClusterMetrics, zk_event
from exporter.registry import ManualClock, MetricName, Registry


def test_kazoo_state_changes_map_to_kafkas_keeper_state_events():
    assert zk_event("CONNECTED", "CONNECTED") == "SyncConnects"
    assert zk_event("CONNECTED", "CONNECTED_RO") == "ReadOnlyConnects"
    assert zk_event("SUSPENDED", "CONNECTING") == "Disconnects"
    assert zk_event("LOST", "EXPIRED_SESSION") == "Expires"
    assert zk_event("LOST", "AUTH_FAILED") == "AuthFailures"
    assert zk_event("LOST", "CLOSED") is None        # our own stop(): no ZooKeeper event


def test_session_expire_listener_has_kafkas_six_meters_and_marks_them():
    reg = Registry(ManualClock())
    zk = SimpleNamespace(client_state="AUTH_FAILED")
    broker = SimpleNamespace(clustered=True, metadata=SimpleNamespace(_zk=zk))
    cm = ClusterMetrics(reg, broker, post=lambda fn, *args: fn(*args))

    def count(event: str) -> int:
        return reg.get(MetricName("kafka.server", "SessionExpireListener", f"ZooKeeper{event}PerSec")).count

    cm._on_zk_state("LOST")
    zk.client_state = "CONNECTED"
    cm._on_zk_state("CONNECTED")
    assert [count(e) for e in ("AuthFailures", "SyncConnects", "Expires", "Disconnects", "ReadOnlyConnects",
                               "SaslAuthentications")] == [1, 1, 0, 0, 0, 0]
