"""xmonitor on an Apache Kafka 4.1 KRaft cluster (three combined broker+controller nodes, kafkascope/local/kraft.py):
the same SLIs through a kill -9 of the active controller and then of another broker, and the SLO report on that
run's SLI files (slow: three JVMs, two restarts and Spark). With controller-only nodes, a controller failover does
not touch the probe at all.

The monitor topic has RF 1 here, as in tests/xmonitor/test_cluster.py's ZooKeeper-mode kill test: with RF 3 and
acks=all every partition whose ISR holds the dead node stalls until the controller fences it, so the drop could not be
pinned on the killed node's partitions. Nothing is lost: an RF-1 partition is offline while its node is down (sends
to it fail and count as errors) and comes back with its log when the node restarts.
"""

from __future__ import annotations

import pytest

from kafkascope.local.apache_kafka import DEFAULT_VERSION
from kafkascope.local.cluster import wait_for
from kafkascope.local.kraft import KRaftLauncher
from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios.slo import assert_counts_match_the_files, run_report
from tests.xmonitor.helpers import fast_config, gauge, scrape, total
from tests.xmonitor.test_cluster import _leaders, _window_availability
from xmonitor import sink
from xmonitor.app import XMonitor

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
NODES = 3
# A killed broker is fenced 3 s after its last heartbeat (default 9 s), so a drill takes seconds, not tens of them.
FAST_FENCING = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}


def _incident(launcher: KRaftLauncher, m: XMonitor, topic: str, node: int) -> dict[int, int]:
    """kill -9 `node`: only the partitions it leads fail (errors carry its id), the others keep their
    availability; it restarts and the probe recovers. The leaders (partition -> node) before the kill."""
    leaders = _leaders(launcher.bootstrap, topic)
    led = {p for p, b in leaders.items() if b == node}
    assert led, (node, leaders)
    launcher.kill(node)
    wait_for(lambda: any(labels["leader"] == str(node) and v > 0 for labels, v in
                         scrape(m).get("xmonitor_produce_errors_total", [])), timeout=15,
             what=f"sends to node {node} failing")
    avail, failing = _window_availability(m, 4.0)
    assert failing == {str(node)}, (failing, leaders)
    assert avail == pytest.approx((len(leaders) - len(led)) / len(leaders), abs=0.05), leaders
    launcher.start(node, timeout_s=180)
    wait_for(lambda: _window_availability(m, 1.5)[0] == 1.0, timeout=90, what=f"recovered after node {node}")
    return leaders


def test_xmonitor_through_controller_failover_and_broker_kill_then_slo_report(tmp_path):
    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()  # the JMX exporter agent comes with the 3.9 line
    launcher = KRaftLauncher(tmp_path / "kraft", brokers=NODES, broker_props=FAST_FENCING)
    try:
        launcher.start_all(timeout_s=180)
        cfg = fast_config(launcher.bootstrap, tmp_path, produce_request_timeout_ms=1500, rebalance_interval_ms=2000,
                          preferred_leader_election_check_interval_ms=1000)
        with XMonitor(cfg) as m:
            wait_for(lambda: set(_leaders(launcher.bootstrap, cfg.topic).values()) == set(range(NODES)),
                     timeout=60, what="every node leads a monitor partition")
            wait_for(lambda: _window_availability(m, 1.0)[0] == 1.0, timeout=30, what="a healthy probe")

            controller = launcher.quorum().leader_id
            first = _incident(launcher, m, cfg.topic, controller)
            after = launcher.quorum()
            assert after.leader_id != controller and set(after.voters) == set(range(NODES))
            assert after.voters[controller] >= 0

            broker = next(b for b in range(NODES) if b not in (controller, after.leader_id))
            second = _incident(launcher, m, cfg.topic, broker)
            assert launcher.quorum().leader_id == after.leader_id   # a broker kill moves no controller

            wait_for(lambda: set(_leaders(launcher.bootstrap, cfg.topic).values()) == set(range(NODES)),
                     timeout=60, what="every node leads a monitor partition again")
            wait_for(lambda: m.consume.accounting.pending() == 0, timeout=cfg.consume_loss_grace_ms / 1000 + 15,
                     what="no open sequence gaps")
            assert gauge(m, "consume-service", "records-lost-total") == 0
            assert gauge(m, "consume-service", "records-duplicated-total") == 0
    finally:
        launcher.shutdown()

    # the SLI files: send errors only on partitions the killed nodes led when they died (a row's leader is the one
    # at the interval's end, so the partition is what identifies them), and the report shows them
    t = sink.read_dir(cfg.sli_dir).to_pylist()
    failed = {r["partition"] for r in t if r["produce_errors"]}
    struck = {p for p, b in first.items() if b == controller} | {p for p, b in second.items() if b == broker}
    assert failed and failed <= struck, (failed, first, second)
    assert sum(r["records_lost"] for r in t) == 0
    report = run_report(cfg.sli_dir, tmp_path / "report")
    assert_counts_match_the_files(report, cfg.sli_dir)
    occ = {s["name"]: s["occurrences"] for s in report["slos"]}
    assert occ["write-availability"]["bad"] > 0          # the two incidents
    assert occ["write-availability"]["bad"] == sum(r["produce_attempts"] - r["produce_successes"] for r in t)
    assert occ["no-loss"]["bad"] == 0


def test_controller_only_failover_leaves_the_probe_untouched(tmp_path):
    """Brokers 0-2 and controllers 3-5: killing the active controller changes no partition leader, so the probe
    sees no error at all while the other two controllers elect a new leader (the data plane does not wait for it)."""
    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()
    launcher = KRaftLauncher(tmp_path / "kraft", brokers=NODES, controllers=3, broker_props=FAST_FENCING)
    try:
        launcher.start_all(timeout_s=240)
        cfg = fast_config(launcher.bootstrap, tmp_path, produce_request_timeout_ms=1500, rebalance_interval_ms=2000,
                          preferred_leader_election_check_interval_ms=1000)
        with XMonitor(cfg) as m:
            wait_for(lambda: set(_leaders(launcher.bootstrap, cfg.topic).values()) == set(range(NODES)),
                     timeout=60, what="every broker leads a monitor partition")
            wait_for(lambda: _window_availability(m, 1.0)[0] == 1.0, timeout=30, what="a healthy probe")
            leaders = _leaders(launcher.bootstrap, cfg.topic)
            errors = total(scrape(m), "xmonitor_produce_errors_total")
            q = launcher.quorum()
            assert q.leader_id in (3, 4, 5)
            launcher.kill(q.leader_id)
            new = wait_for(lambda: (n := launcher.quorum()).leader_id not in (-1, q.leader_id) and n, timeout=60,
                           what="a new active controller")
            assert new.leader_id in (3, 4, 5)
            avail, failing = _window_availability(m, 3.0)
            assert (avail, failing) == (1.0, set())
            assert total(scrape(m), "xmonitor_produce_errors_total") == errors
            assert _leaders(launcher.bootstrap, cfg.topic) == leaders
            launcher.start(q.leader_id, timeout_s=180)
            wait_for(lambda: launcher.quorum().voters.get(q.leader_id, -1) >= new.high_watermark, timeout=120,
                     what="the controller back in the quorum")
            assert gauge(m, "consume-service", "records-lost-total") == 0
    finally:
        launcher.shutdown()
