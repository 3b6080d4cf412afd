"""Connection creation rate quotas per address (KIP-612): which addresses are measured, when a connection is
throttled and for how long (Kafka's Rate over 11 one-second windows, throttle (O - T) / T * W capped at one window),
the throttled connection left uncounted, and a real socket closed unserved by a standalone broker."""

from __future__ import annotations

import socket
import struct
import time

from broker.quota.connection import ConnectionRateQuotas
from broker.quota.entity import DEFAULT
from broker.quota.manager import QuotaSettings
from common.clock import ManualClock


def _quotas():
    clock = ManualClock()
    return clock, ConnectionRateQuotas(QuotaSettings(), clock)


def test_no_quota_no_sensor():
    _, q = _quotas()
    made = []
    q.on_sensor = lambda address, rate, up: made.append((address, up))
    assert all(q.on_connection("10.0.0.1") == 0 for _ in range(1000))
    assert made == []


def test_the_connection_over_the_rate_is_throttled_and_not_counted():
    clock, q = _quotas()
    q.update(DEFAULT, 1.0)
    # A new sensor's window is taken as 10 full seconds (Rate.windowSize): ten connections are within 1/s.
    assert [q.on_connection("10.0.0.1") for _ in range(10)] == [0] * 10
    throttle = q.on_connection("10.0.0.1")
    assert throttle == 1000     # (1.1 - 1) / 1 * 10 s = 1 s: capped at one quota window
    assert q.on_connection("10.0.0.2") == 0          # another address has its own rate
    clock.advance(1500)
    assert q.on_connection("10.0.0.1") == 500   # 11 over a window of 10.5 s: (11 / 10.5 - 1) / 1 * 10.5 s
    clock.advance(9500)
    # 11 s on: the window is the 11 s elapsed, and the throttled connections were not counted (10 of them, + 1).
    assert q.on_connection("10.0.0.1") == 0


def test_an_address_override_beats_the_default_and_removing_it_restores_the_default():
    clock, q = _quotas()
    q.update(DEFAULT, 100.0)
    q.update("10.0.0.7", 0.5)
    assert [q.on_connection("10.0.0.7") for _ in range(6)][-1] > 0       # 6 / 10 s > 0.5
    assert q.on_connection("::ffff:10.0.0.8") == 0                        # IPv4-mapped: the same address form
    q.update("10.0.0.7", None)
    assert q.quota_of("10.0.0.7") == 100.0


def test_sensors_go_with_their_quota_and_after_an_hour_idle():
    clock, q = _quotas()
    made = []
    q.on_sensor = lambda address, rate, up: made.append((address, up))
    q.update("10.0.0.7", 5.0)
    q.update(DEFAULT, 5.0)
    q.on_connection("10.0.0.7")
    q.on_connection("10.0.0.8")
    q.update("10.0.0.7", None)      # still under the default: kept
    q.update(DEFAULT, None)         # no quota left for either
    assert made == [("10.0.0.7", True), ("10.0.0.8", True), ("10.0.0.7", False), ("10.0.0.8", False)]
    q.update(DEFAULT, 5.0)
    q.on_connection("10.0.0.9")
    clock.advance(3_600_000)
    q.expire()
    assert made[-1] == ("10.0.0.9", False)


API_VERSIONS = struct.pack(">hhih", 18, 0, 7, 4) + b"test"


def _answered(port: int) -> bool:
    """Whether a new connection's ApiVersions is answered (False: closed unserved)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS)
        s.settimeout(10)
        try:
            return len(s.recv(4)) == 4
        except (ConnectionResetError, TimeoutError):
            return False


def test_a_standalone_broker_closes_a_connection_over_its_address_rate_unserved(tmp_path):
    from kafkascope.local.broker_process import BrokerProcess
    from kafkascope.local.wire import WireClient

    b = BrokerProcess(tmp_path, offsets_topic_num_partitions=1)
    b.start()
    try:
        with WireClient(b.port) as w:
            resp = w.call(49, 1, {"entries": [{"entity": [{"entity_type": "ip", "entity_name": "127.0.0.1"}],
                                               "ops": [{"key": "connection_creation_rate", "value": 1.0,
                                                        "remove": False}]}], "validate_only": False})
        assert resp.entries[0].error_code == 0
        # That connection was made before the quota: ten more are within 1/s over the first window, then one is
        # closed unserved, about a second later.
        assert [_answered(b.port) for _ in range(10)] == [True] * 10
        started = time.monotonic()
        assert not _answered(b.port)
        assert time.monotonic() - started >= 0.5
    finally:
        b.stop()


def test_an_address_sensor_is_its_connection_accept_rate_mbean():
    from broker.metrics.quotas import register_quota_metrics
    from broker.quota.managers import QuotaManagers
    from exporter.registry import Registry

    clock, q = _quotas()
    reg = Registry(clock)
    register_quota_metrics(reg, QuotaManagers(QuotaSettings(), clock), q)
    q.update(DEFAULT, 10.0)
    for _ in range(5):
        q.on_connection("10.0.0.7")
    q.on_accept(protected=False)
    beans = {n.mbean: m.read() for n, m in reg.items() if n.type == "socket-server-metrics"}
    assert beans == {"kafka.server:type=socket-server-metrics,name=connection-accept-rate,ip=10.0.0.7": 0.5,
                     "kafka.server:type=socket-server-metrics,name=broker-connection-accept-rate": 0.1}
    q.update(DEFAULT, None)
    assert [n.name for n, _ in reg.items() if n.type == "socket-server-metrics"] == ["broker-connection-accept-rate"]


def test_max_connection_creation_rate_holds_the_acceptor_and_counts_the_connection():
    clock, q = _quotas()
    assert all(q.on_accept(protected=False) == 0 for _ in range(50))   # unbounded: measured only
    assert q.broker_rate.rate == 5.0                                  # 50 over the 10 s a new window is taken as
    clock.advance(20_000)
    q.broker_bound = 2.0
    assert [q.on_accept(protected=False) for _ in range(20)] == [0] * 20
    assert q.on_accept(protected=False) == 500        # (21 / 10 - 2) / 2 * 10 s: the acceptor waits, then serves it
    assert q.on_accept(protected=True) == 0           # the inter-broker listener is not held
    q.update(DEFAULT, 0.0)
    before = q.broker_rate.total
    assert q.on_connection("10.0.0.1") > 0            # closed unserved by its address quota:
    assert q.broker_rate.total == before - 1          # no longer counted for the broker either


def test_a_standalone_broker_holds_its_acceptor_over_max_connection_creation_rate(tmp_path):
    from kafkascope.local.broker_process import BrokerProcess

    b = BrokerProcess(tmp_path, offsets_topic_num_partitions=1, max_connection_creation_rate=2)
    b.start()
    try:
        took = []
        for _ in range(21):   # 2/s over the 10 s a new rate is taken over: the 21st at the latest is held ~0.5 s
            started = time.monotonic()
            assert _answered(b.port)   # held, then served: never refused
            took.append(time.monotonic() - started)
        assert max(took) >= 0.4, took
    finally:
        b.stop()
