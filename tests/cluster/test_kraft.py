"""KRaft cluster planning (kafkascope/local/kraft.py): node roles, ports, server.properties, DescribeQuorum decoding.
No JVM here; tests/cluster/test_kraft_cluster.py runs real Apache Kafka 4.1 nodes (slow)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace as NS

import pytest

from kafkascope.local.kraft import (
    BROKER,
    CONTROLLER,
    KRaftLauncher,
    NodePlan,
    is_kraft_version,
    node_props,
    plan_nodes,
    quorum_from_response,
    quorum_voters,
)
from kafkascope.local.launcher import ClusterError


def _ports():
    counter = itertools.count(10000)
    given: dict[str, int] = {}

    def port_for(key: str) -> int:
        assert key not in given, f"port asked twice for {key}"
        given[key] = next(counter)
        return given[key]
    return port_for, given


def test_versions():
    assert is_kraft_version("4.1.1") and is_kraft_version("4.0.0") and is_kraft_version("5.0")
    assert not is_kraft_version("3.9.2") and not is_kraft_version(None)
    with pytest.raises(ClusterError, match="cannot read"):
        is_kraft_version("latest")


def test_combined_nodes_are_brokers_and_voters():
    port_for, given = _ports()
    nodes = plan_nodes(3, 0, 0, port_for)
    assert [n.node_id for n in nodes] == [0, 1, 2]
    assert all(n.roles == (BROKER, CONTROLLER) and n.kind == BROKER for n in nodes)
    assert set(given) == {"0", "1", "2", "0-controller", "1-controller", "2-controller"}
    assert quorum_voters(nodes) == ",".join(f"{i}@127.0.0.1:{given[f'{i}-controller']}" for i in range(3))
    assert nodes[1].main_port == given["1"]


def test_separate_roles_number_controllers_after_brokers():
    port_for, given = _ports()
    nodes = plan_nodes(3, 3, 0, port_for)
    assert [(n.node_id, n.kind) for n in nodes] == [(0, BROKER), (1, BROKER), (2, BROKER),
                                                     (3, CONTROLLER), (4, CONTROLLER), (5, CONTROLLER)]
    assert nodes[0].controller_port is None and nodes[3].port is None
    assert nodes[4].main_port == given["4-controller"]
    assert quorum_voters(nodes).count("@") == 3 and "0@" not in quorum_voters(nodes)
    with pytest.raises(ClusterError):
        plan_nodes(0, 3, 0, port_for)
    with pytest.raises(ClusterError):
        plan_nodes(3, -1, 0, port_for)


def test_node_props():
    base = {"broker.id": 0, "zookeeper.connect": "x", "zookeeper.session.timeout.ms": 6000, "log.dirs": "/d",
            "broker.rack": "a", "advertised.listeners": "PLAINTEXT://old", "min.insync.replicas": 2}
    combined = node_props(NodePlan(0, (BROKER, CONTROLLER), 9092, 9093), "0@127.0.0.1:9093", base)
    assert "broker.id" not in combined and not any(k.startswith("zookeeper") for k in combined)
    assert combined["process.roles"] == "broker,controller" and combined["node.id"] == 0
    assert combined["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert combined["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert combined["controller.quorum.voters"] == "0@127.0.0.1:9093"
    assert combined["min.insync.replicas"] == 2 and combined["broker.rack"] == "a"
    controller = node_props(NodePlan(3, (CONTROLLER,), None, 9093), "3@127.0.0.1:9093", base)
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:9093"
    assert controller["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT"
    assert "advertised.listeners" not in controller and "inter.broker.listener.name" not in controller
    assert "broker.rack" not in controller
    broker = node_props(NodePlan(1, (BROKER,), 9094, None), "3@127.0.0.1:9093", base)
    assert broker["listeners"] == "PLAINTEXT://127.0.0.1:9094" and broker["process.roles"] == "broker"


def _describe(error=0, part_error=0, leader=2):
    part = NS(error_code=part_error, leader_id=leader, leader_epoch=7, high_watermark=120,
              current_voters=[NS(replica_id=i, log_end_offset=120 - i) for i in range(3)],
              observers=[NS(replica_id=5, log_end_offset=118)])
    return NS(error_code=error, topics=[NS(partitions=[part])])


def test_quorum_from_response():
    q = quorum_from_response(_describe())
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (2, 7, 120)
    assert q.voters == {0: 120, 1: 119, 2: 118} and q.observers == {5: 118}
    with pytest.raises(ClusterError, match="error code 15"):
        quorum_from_response(_describe(error=15))
    with pytest.raises(ClusterError, match="__cluster_metadata-0"):
        quorum_from_response(_describe(part_error=6))


def test_launcher_refuses_what_kraft_does_not_do(tmp_path):
    with pytest.raises(ClusterError, match="ZooKeeper mode"):
        KRaftLauncher(tmp_path, version="3.9.2")
    with pytest.raises(ClusterError, match="unknown security"):
        KRaftLauncher(tmp_path, security="sasl_plaintext")


def test_cli_refuses_mixed_options(tmp_path, capsys):
    from kafkascope.cli import main

    def up(*args: str) -> str:
        assert main(["cluster", "up", "--data-dir", str(tmp_path / "c"), *args]) == 1
        return capsys.readouterr().err

    assert "--controllers is for KRaft clusters" in up("--impl", "apache-kafka", "--controllers", "3")
    assert "use it with --impl apache-kafka" in up("--version", "4.1.1")
    assert "pinned here is 3.9.2" in up("--impl", "apache-kafka", "--version", "3.8.0")
    assert "cannot read Apache Kafka version" in up("--impl", "apache-kafka", "--version", "four")
    assert not (tmp_path / "c").exists()   # nothing written, nothing started
