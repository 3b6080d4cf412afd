"""xmonitor against a 3-broker ZooKeeper cluster: a killed broker is named, joining brokers get probed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from kafkascope.local.cluster import wait_for
from tests.xmonitor.helpers import fast_config, gauge, scrape
from xmonitor import formulas
from xmonitor.app import XMonitor


def _counts(m: XMonitor) -> dict[tuple[str, str], dict[str, float]]:
    """(partition, leader) -> {successes, errors} from /metrics."""
    s = scrape(m)
    out: dict[tuple[str, str], dict[str, float]] = {}
    for name, key in (("xmonitor_produce_successes_total", "s"), ("xmonitor_produce_errors_total", "e")):
        for labels, v in s.get(name, []):
            d = out.setdefault((labels["partition"], labels["leader"]), {"s": 0.0, "e": 0.0})
            d[key] += v
    return out


def _window_availability(m: XMonitor, seconds: float) -> tuple[float, set[str]]:
    """Xinfra's produce-availability formula over counter deltas of the last `seconds` (the kmf gauge uses 60 s);
    also the leader ids of partitions with no acknowledged send in that window."""
    a = _counts(m)
    time.sleep(seconds)
    b = _counts(m)
    per_p: dict[str, list[float]] = {}
    failing = set()
    for key, d in b.items():
        prev = a.get(key, {"s": 0.0, "e": 0.0})
        ds, de = d["s"] - prev["s"], d["e"] - prev["e"]
        acc = per_p.setdefault(key[0], [0.0, 0.0])
        acc[0] += ds
        acc[1] += de
    for key in b:
        if per_p[key[0]][0] == 0 and key[1] != "-1":
            failing.add(key[1])
    return formulas.produce_availability([(s, e, False) for s, e in per_p.values()]), failing


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return {p.id: (p.leader.id if p.leader is not None else -1) for p in d.partitions}


def _isrs(bootstrap: str, topic: str) -> dict[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return {p.id: [n.id for n in p.isr] for p in d.partitions}


def test_killed_broker_rf1_drops_availability_to_b_minus_1_over_b_and_is_named(cluster_factory, tmp_path):
    c = cluster_factory(brokers=3)
    cfg = fast_config(c.bootstrap, tmp_path, produce_request_timeout_ms=1500, rebalance_interval_ms=2000,
                      preferred_leader_election_check_interval_ms=1000)
    with XMonitor(cfg) as m:
        wait_for(lambda: set(_leaders(c.bootstrap, cfg.topic).values()) == {0, 1, 2}, timeout=30,
                 what="every broker leads a monitor partition")
        wait_for(lambda: _window_availability(m, 1.0)[0] == 1.0, timeout=20)
        c.broker(1).kill()
        # the sends in flight at the kill time out: errors labelled with the dead leader
        wait_for(lambda: any(labels["leader"] == "1" and v > 0 for labels, v in
                             scrape(m).get("xmonitor_produce_errors_total", [])), timeout=10)
        avail, failing = _window_availability(m, 4.0)
        assert avail == pytest.approx(2 / 3, abs=0.05)
        assert failing == {"1"}                     # the failing partition carries the dead broker's id
        assert gauge(m, "produce-service", "produce-availability-avg") < 1.0
        c.broker(1).start()
        wait_for(lambda: _window_availability(m, 1.5)[0] == 1.0, timeout=40, what="recovered")


def test_joining_broker_leads_a_partition_within_one_rebalance_interval(cluster_factory, tmp_path):
    c = cluster_factory(brokers=3)
    c.broker(2).stop()
    c.wait_for(lambda: c.registered_broker_ids() == [0, 1], timeout=20)
    rebalance_s = 4.0
    cfg = fast_config(c.bootstrap, tmp_path, rebalance_interval_ms=int(rebalance_s * 1000),
                      preferred_leader_election_check_interval_ms=500)
    with XMonitor(cfg) as m:
        assert sorted(set(_leaders(c.bootstrap, cfg.topic).values())) == [0, 1]
        c.broker(2).start()
        c.wait_for(lambda: c.registered_broker_ids() == [0, 1, 2], timeout=20)
        joined = time.monotonic()
        wait_for(lambda: 2 in _leaders(c.bootstrap, cfg.topic).values(), timeout=rebalance_s + 6,
                 what="broker 2 leads a monitor partition")
        took = time.monotonic() - joined
        assert took <= rebalance_s + 6
        # and the probe's series name it
        wait_for(lambda: any(labels["leader"] == "2" for labels, _ in
                             scrape(m).get("xmonitor_produce_successes_total", [])), timeout=15)
        assert len(_leaders(c.bootstrap, cfg.topic)) == 3


@pytest.mark.slow
def test_rf3_acks_all_killing_one_broker_loses_nothing(cluster_factory, tmp_path):
    c = cluster_factory(brokers=3, **{"min.insync.replicas": 2})
    cfg = fast_config(c.bootstrap, tmp_path, replication_factor=3, min_insync_replicas=2,
                      produce_request_timeout_ms=10000, consume_loss_grace_ms=3000)
    with XMonitor(cfg) as m:
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") >= 100, timeout=30)
        c.broker(0).kill()
        wait_for(lambda: all(leader in (1, 2) for leader in _leaders(c.bootstrap, cfg.topic).values()),
                 timeout=30, what="every monitor partition led by a survivor")
        c.broker(0).start()
        wait_for(lambda: all(0 in isr for isr in _isrs(c.bootstrap, cfg.topic).values()), timeout=40,
                 what="broker 0 back in every ISR")
        before = gauge(m, "consume-service", "records-consumed-total")
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") > before + 50, timeout=20)
        # every gap seen is either filled or confirmed lost once the grace has passed
        wait_for(lambda: m.consume.accounting.pending() == 0, timeout=cfg.consume_loss_grace_ms / 1000 + 10,
                 what="no open sequence gaps")
        assert gauge(m, "consume-service", "records-lost-total") == 0
        assert _window_availability(m, 2.0)[0] == 1.0
