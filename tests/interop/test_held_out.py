"""The held-out check's judging (tests/interop/held_out.py) on made-up run results: no cluster, no Prometheus."""

from __future__ import annotations

import pytest

from tests.interop import community_queries as cq
from tests.interop import held_out as ho


def _run(impl: str, data: dict[str, bool], rates: dict[str, float] | None = None) -> ho.RunResult:
    """A run whose queries are `source | expr` -> has data (the expression as written is also the resolved one)."""
    res = ho.RunResult(impl, "strimzi", rates=dict(rates or {}))
    for key, has in data.items():
        source, expr = key.split(" | ", 1)
        res.queries.append(ho.Resolved(cq.Query(source, f"panel {expr} [A]", expr), expr, has_data=has,
                                       series=int(has)))
    return res


KRAFT = ho.Listed(((r"kafka_server_raftmetrics_", "raft"), (r"^kraft\.json ", "whole board")))
ZK = ho.Listed(((r"sessionexpirelistener", "zk session"),))
EX = ho.Explanations(out_of_scope=ho.Listed(((r"\bcontainer_", "k8s"),)), ours_only=ZK, kafka_only=KRAFT,
                     known_gaps={("b.json", "panel gap_metric [A]"): "accepted"})


def test_missing_on_ours_leaves_out_kraft_only_and_known_gaps_and_reports_closed_gaps():
    kafka = _run("apache-kafka", {"b.json | kafka_server_raftmetrics_current_leader": True,
                                  "kraft.json | jvm_threads_current": True, "b.json | gap_metric": True,
                                  "b.json | kafka_server_x": True, "b.json | both": True})
    ours = _run("kafkascope", {"b.json | kafka_server_raftmetrics_current_leader": False,
                               "kraft.json | jvm_threads_current": False, "b.json | gap_metric": False,
                               "b.json | kafka_server_x": False, "b.json | both": True})
    gaps, closed = ho.missing_on_ours(ours, kafka, EX)
    assert gaps == ["b.json | panel kafka_server_x [A] | kafka_server_x"] and closed == []
    ours.queries[2].has_data = True  # the known gap now has data on ours
    assert ho.missing_on_ours(ours, kafka, EX)[1] == ["b.json | panel gap_metric [A] (remove it from KNOWN_GAPS)"]


def test_stale_entries_need_data_on_one_side_and_none_on_the_other():
    kafka = _run("apache-kafka", {"b.json | kafka_server_raftmetrics_epoch": True, "kraft.json | up": True})
    ours = _run("kafkascope", {"b.json | kafka_server_raftmetrics_epoch": False, "kraft.json | up": False})
    assert ho.stale_entries(KRAFT, has=kafka, lacks=ours) == []
    kafka.queries[0].has_data = False  # no query of the raft entry has data on Kafka any more
    assert [p.split(" (")[0] for p in ho.stale_entries(KRAFT, has=kafka, lacks=ours)] == ["'kafka_server_raftmetrics_'"]
    kafka.queries[0].has_data = ours.queries[1].has_data = True  # the whole-board entry has data on ours too
    assert ho.stale_entries(KRAFT, has=kafka, lacks=ours) == [
        "'^kraft\\\\.json ': kraft.json | panel up [A] has data on kafkascope too"]


def test_ours_only_and_out_of_scope():
    kafka = _run("apache-kafka", {"a.json | rate(kafka_server_sessionexpirelistener_x[5m])": False,
                                  "a.json | jvm_extra": False, "a.json | container_cpu": True,
                                  "a.json | absent(container_cpu)": True})
    ours = _run("kafkascope", {"a.json | rate(kafka_server_sessionexpirelistener_x[5m])": True,
                               "a.json | jvm_extra": True, "a.json | container_cpu": False,
                               "a.json | absent(container_cpu)": True})
    assert ho.unexplained_ours_only(ours, kafka, EX) == ["a.json | panel jvm_extra [A] | jvm_extra"]
    # absent() has data exactly when the series are missing, so it is never out of scope
    assert ho.out_of_scope_with_data(kafka, EX) == ["a.json | panel container_cpu [A] | container_cpu"]


def test_rate_problems_allow_5_percent():
    kafka = _run("apache-kafka", {}, {"cd-a": 20.0, "cd-b": 20.0, "cd-c": 20.0})
    ours = _run("kafkascope", {}, {"cd-a": 19.1, "cd-b": 18.9, "cd-c": 20.0})
    assert ho.rate_problems(ours, kafka) == ["cd-b: ours 18.9 vs Kafka 20.0"]


def test_fault_panels_compare_per_reporting_node_where_told():
    def run(impl: str, offline: float) -> ho.RunResult:
        return ho.RunResult(impl, "strimzi", fault={ho.URP_TITLE: 22.0, ho.OFFLINE_TITLE: offline},
                            fault_stable=True, fault_metadata={"under_replicated": 22, "offline": 1},
                            alerts={"OfflinePartitions": "firing"})

    runs = {"apache-kafka": run("apache-kafka", 2.0), "kafkascope": run("kafkascope", 1.0)}
    with pytest.raises(AssertionError, match="fault panels differ"):
        ho.check_fault_panels_and_alerts(runs)
    ho.check_fault_panels_and_alerts(runs, kafka_reporters={ho.OFFLINE_TITLE: 2})
    runs["kafkascope"].fault[ho.OFFLINE_TITLE] = 2.0  # ours counting twice is still wrong
    with pytest.raises(AssertionError):
        ho.check_fault_panels_and_alerts(runs, kafka_reporters={ho.OFFLINE_TITLE: 2})
