"""The KRaft alerts (dashboards/build.py `_kraft_alerts`): `promtool test rules` cases that fire and that stay quiet,
including on a ZooKeeper-mode cluster (no raft-metrics series). Their series on a live Kafka 4.1 node:
tests/interop/test_kraft_dashboards.py."""

from __future__ import annotations

import pytest

from dashboards import build, grafana
from dashboards.metrics import KRAFT_ONLY
from tests.dashboards.test_e2e import metric_names
from tests.dashboards.test_rules import B0, B1, I0, I1, _run, case, expect, needs_promtool

M = build.M


def kraft_cases() -> dict[str, list[dict]]:
    c: dict[str, list[dict]] = {}
    a = "KafkaKRaftNoActiveController"
    state = M.raft_state + '{{{},current_state="{}"}}'
    c[a] = [
        case(a, [(state.format(B0, "leader"), "1x20"), (state.format(B1, "follower"), "1x20"),
                 (f"{M.active_controller}{{{B0}}}", "1x4 0x15"), (f"{M.active_controller}{{{B1}}}", "0x20")],
             [("4m", []), ("5m", []), ("7m", [expect(a, 0)])]),
        # every controller gone: nobody reports ActiveControllerCount, a broker's raft-metrics remain
        case(a, [(state.format(B1, "observer"), "1x20")], [("3m", [expect(a, 0)])]),
        # ZooKeeper mode (no raft-metrics): KafkaActiveControllerCountNotOne's business, not this one's
        case(a, [(f"{M.active_controller}{{{B0}}}", "0x20")], [("10m", [])]),
    ]
    a = "KafkaKRaftQuorumLeaderChangesFrequent"
    c[a] = [case(a, [(f"{M.raft_epoch}{{{B0}}}", "1 2 3 4 5 5x40"),      # 4 elections in 4 minutes
                     (f"{M.raft_epoch}{{{B1}}}", "0 0 0 7 7x40")],      # a node joining: one change
                 [("3m", []), ("5m", [expect(a, 4, job="kafka-broker")]), ("40m", [])])]
    a = "KafkaKRaftMetadataErrors"
    c[a] = [case(a, [(f"{M.metadata_load_errors}{{{B0}}}", "0 0 1x20"), (f"{M.metadata_apply_errors}{{{B0}}}", "0x20"),
                     (f"{M.controller_metadata_errors}{{{B1}}}", "0 0 0 2x20")],
                 [("1m", []), ("5m", [expect(a, 1, **I0), expect(a, 2, **I1)])])]
    a = "KafkaKRaftMetadataLagHigh"
    c[a] = [case(a, [(f"{M.metadata_lag_ms}{{{B0}}}", "500x20"), (f"{M.metadata_lag_ms}{{{B1}}}", "500 500 15000x20")],
                 [("5m", []), ("8m", [expect(a, 15000, **I1)])])]
    return c


KRAFT = kraft_cases()


def test_kraft_alerts_are_in_their_own_group():
    groups = {g["name"]: {r["alert"] for r in g["rules"]} for g in build.alerting_rules()["groups"]}
    assert groups["kafkascope-kraft"] == set(KRAFT)


def test_kraft_board_and_alerts_use_only_declared_kraft_names():
    """Every KRaft-only name is used, and the kraft board uses nothing else but the ActiveControllerCount sum."""
    used = {n for d, _, e in grafana.queries() if d == "kraft" for n in metric_names(e)}
    alerts = {n for g in build.alerting_rules()["groups"] if g["name"] == "kafkascope-kraft"
              for r in g["rules"] for n in metric_names(r["expr"])}
    assert used - KRAFT_ONLY == {M.active_controller}
    assert alerts - KRAFT_ONLY == {M.active_controller}
    assert KRAFT_ONLY <= used | alerts


@needs_promtool
@pytest.mark.parametrize("alert", sorted(KRAFT))
def test_kraft_alert_fires_and_stays_quiet(tmp_path, alert):
    _run(tmp_path, alert, KRAFT[alert])


def test_group_coordinator_rules_name_the_mbean_only_with_the_kraft_additions(tmp_path):
    """Strimzi's rules drop kafka.server:type=group-coordinator-metrics; the additions name it as the board expects,
    and Strimzi's own KRaft rules (raft-metrics) still decide what they decided (jmx_exporter: first match wins)."""
    from exporter.jmx_config import JmxConfig
    from exporter.jmx_engine import JmxEngine
    from kafkascope.local.apache_kafka import write_jmx_rules

    plain = JmxEngine(JmxConfig.load(write_jmx_rules(tmp_path / "strimzi.yml")))
    kraft = JmxEngine(JmxConfig.load(write_jmx_rules(tmp_path / "kraft.yml", kraft=True)))
    gc = "kafka.server", (("type", "group-coordinator-metrics"), ("protocol", "consumer"))
    assert plain.match(*gc, "group-count", 2.0) is None
    s = kraft.match(*gc, "group-count", 2.0)
    assert s is not None and (s.name, s.labels) == (M.groups_by_protocol, (("protocol", "consumer"),))
    s = kraft.match("kafka.server", (("type", "group-coordinator-metrics"),), "consumer-group-rebalance-rate", 0.5)
    assert s is not None and (s.name, s.labels) == (M.consumer_rebalance_rate, ())
    raft = ("kafka.server", (("type", "raft-metrics"),), "current-state", "leader")
    assert kraft.match(*raft) == plain.match(*raft)
    assert kraft.match(*raft).name == M.raft_state
