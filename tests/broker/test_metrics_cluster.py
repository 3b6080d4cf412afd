"""broker/metrics/cluster.py without servers: ZooKeeper client events as Kafka's ZooKeeperClient meters them, the
request latency hook of the broker's kazoo client, and controller elections."""


from broker.controller.zk_client import TimedKazooClient
from broker.metrics.cluster import ClusterMetrics, zk_event
from common.clock import ManualClock
from common.polling import wait_until
from exporter.registry import MetricName, Registry


class FakeZooKeeper:
    def __init__(self, state: str) -> None:
        self.client_state = state
        self.listeners: list = []
        self.request_listeners: list = []

    def add_listener(self, fn) -> None:
        self.listeners.append(fn)

    def add_request_listener(self, fn) -> None:
        self.request_listeners.append(fn)


def cluster_metrics(clustered: bool = True) -> tuple[Registry, ClusterMetrics]:
    reg = Registry(ManualClock())
    return reg, ClusterMetrics(reg, clustered, post=lambda fn, *args: fn(*args))


def test_kazoo_state_changes_map_to_kafkas_keeper_state_events():
    assert zk_event("CONNECTED", "CONNECTED") == "SyncConnects"
    assert zk_event("CONNECTED", "CONNECTED_RO") == "ReadOnlyConnects"
    assert zk_event("SUSPENDED", "CONNECTING") == "Disconnects"
    assert zk_event("LOST", "EXPIRED_SESSION") == "Expires"
    assert zk_event("LOST", "AUTH_FAILED") == "AuthFailures"
    assert zk_event("LOST", "CLOSED") is None        # our own stop(): no ZooKeeper event


def test_session_expire_listener_has_kafkas_six_meters_and_marks_them():
    reg, cm = cluster_metrics()
    zk = FakeZooKeeper("AUTH_FAILED")
    cm.watch_zookeeper(zk)
    (on_state,) = zk.listeners

    def count(event: str) -> int:
        return reg.get(MetricName("kafka.server", "SessionExpireListener", f"ZooKeeper{event}PerSec")).count

    on_state("LOST")
    zk.client_state = "CONNECTED"
    on_state("CONNECTED")
    assert [count(e) for e in ("AuthFailures", "SyncConnects", "Expires", "Disconnects", "ReadOnlyConnects",
                               "SaslAuthentications")] == [1, 1, 0, 0, 0, 0]


def test_session_state_is_closed_until_a_client_is_watched():
    reg, cm = cluster_metrics()
    state = reg.get(MetricName("kafka.server", "SessionExpireListener", "SessionState"))

    def current() -> list[str]:
        return [dict(tags)["state"] for tags, v in state.fn() if v == 1]

    assert current() == ["CLOSED"]
    cm.watch_zookeeper(FakeZooKeeper("CONNECTED"))
    assert current() == ["CONNECTED"]


def test_request_latency_comes_from_the_clients_hook_in_ms():
    reg, cm = cluster_metrics()
    zk = FakeZooKeeper("CONNECTED")
    cm.watch_zookeeper(zk)
    (on_request,) = zk.request_listeners
    on_request(0.25)
    latency = reg.get(MetricName("kafka.server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs"))
    assert latency.count == 1 and latency.sum_ms == 250.0


def test_timed_kazoo_client_reports_every_request_to_its_listeners():
    zk = TimedKazooClient(hosts="127.0.0.1:1")   # never started: requests fail at once, and are still timed
    got: list[float] = []
    zk.add_request_listener(got.append)
    assert zk.get_async("/x").exception is not None
    wait_until(lambda: got, 5, 0.01, "the request listener called")
    assert len(got) == 1 and 0 <= got[0] < 5


def test_elections_are_timed_and_unclean_ones_counted_standalone_too():
    reg, cm = cluster_metrics(clustered=False)
    cm.on_leader_election(12.0, False)
    cm.on_leader_election(30.0, True)
    cs = ("kafka.controller", "ControllerStats")
    assert reg.get(MetricName(*cs, "LeaderElectionRateAndTimeMs")).count == 2
    assert reg.get(MetricName(*cs, "UncleanLeaderElectionsPerSec")).count == 1
    assert reg.get(MetricName("kafka.server", "SessionExpireListener", "SessionState")) is None
    cm.watch_zookeeper(FakeZooKeeper("CONNECTED"))   # standalone: nothing to watch, nothing defined


