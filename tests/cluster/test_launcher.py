"""ClusterLauncher: ZooKeeper + N broker subprocesses, fault-drill actions, state shared through cluster.json."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from kafkascope.local import zookeeper as zkmod
from kafkascope.local.cluster import Cluster, wait_for
from kafkascope.local.launcher import ClusterError, ClusterLauncher, brokers_seen_by

pytestmark = pytest.mark.skipif(not zkmod.available(), reason="java or Debian's zookeeper package missing")


def _props(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def test_generated_configs(tmp_path):
    launcher = ClusterLauncher(tmp_path, brokers=3, racks=["a", "b"], broker_props={"min.insync.replicas": 2})
    launcher.prepare()
    zk_port = launcher.zookeeper_host_port.rsplit(":", 1)[1]
    ports = set()
    for bid, rack in zip([0, 1, 2], ["a", "b", "a"], strict=True):
        p = _props(tmp_path / f"broker-{bid}" / "server.properties")
        assert p["broker.id"] == str(bid)
        assert p["zookeeper.connect"] == f"127.0.0.1:{zk_port}/kafkascope"
        assert p["broker.rack"] == rack
        assert p["log.dirs"] == str(tmp_path / f"broker-{bid}" / "logs")
        assert p["offsets.topic.replication.factor"] == p["default.replication.factor"] == "3"
        assert p["group.initial.rebalance.delay.ms"] == "0"
        assert p["min.insync.replicas"] == "2"
        ports.add(p["listeners"])
    assert len(ports) == 3
    zoo = _props(tmp_path / "zookeeper" / "zoo.cfg")
    assert zoo["clientPort"] == zk_port and zoo["admin.enableServer"] == "false"
    one = ClusterLauncher(tmp_path / "one", brokers=1)
    one.prepare()
    assert _props(tmp_path / "one" / "broker-0" / "server.properties")["offsets.topic.replication.factor"] == "1"
    solo = ClusterLauncher(tmp_path / "solo", brokers=2, standalone=True)
    solo.prepare()
    assert "zookeeper.connect" not in _props(tmp_path / "solo" / "broker-1" / "server.properties")
    jbod = ClusterLauncher(tmp_path / "jbod", brokers=1, log_dirs=2)
    jbod.prepare()
    assert _props(tmp_path / "jbod" / "broker-0" / "server.properties")["log.dirs"] == ",".join(
        str(tmp_path / "jbod" / "broker-0" / d) for d in ("logs", "logs-2"))


def test_status_follows_kill_pause_resume_stop_start(cluster_factory):
    c = cluster_factory(brokers=3, standalone=True)
    assert len(c.bootstrap.split(",")) == 3
    assert c.status() == {"zk": "running", "0": "running", "1": "running", "2": "running"}
    assert c.zookeeper.ruok() and c.zookeeper.mntr()["zk_server_state"] == "standalone"

    b1 = c.broker(1)
    old_pid, port = b1.pid, b1.port
    b1.kill()
    assert b1.state == "dead" and b1.pid is None
    b1.start()
    assert b1.state == "running" and b1.pid != old_pid and b1.port == port

    c.broker(2).pause()
    assert c.broker(2).state == "paused"
    c.broker(2).resume()
    assert c.broker(2).state == "running"

    assert c.broker(0).stop() == "stopped"  # clean exit on SIGTERM
    assert c.broker(0).state == "stopped"
    c.broker(0).start()

    c.zookeeper.pause()
    assert c.zookeeper.state == "paused" and not c.zookeeper.ruok(0.3)
    c.zookeeper.resume()
    wait_for(c.zookeeper.ruok, 10)
    c.zookeeper.kill()
    assert c.zookeeper.state == "dead"
    c.zookeeper.start()
    assert c.zookeeper.ruok()
    assert set(c.status().values()) == {"running"}

    pids = [b.pid for b in c.brokers] + [c.zookeeper.pid]
    c.shutdown()
    assert set(c.status().values()) == {"stopped"}
    assert not any(os.path.exists(f"/proc/{pid}") and _not_zombie(pid) for pid in pids)


def _not_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_second_launcher_acts_through_cluster_json(cluster_factory):
    c = cluster_factory(brokers=2, standalone=True)
    state = json.loads((c.data_dir / "cluster.json").read_text())
    assert state["bootstrap_servers"] == c.bootstrap
    assert state["zookeeper_connect"] == c.zookeeper.connect
    assert state["launcher_pid"] == os.getpid()

    other = ClusterLauncher.attach(c.data_dir)  # as `kafkascope cluster kill 1 --data-dir DIR` does
    assert other.bootstrap == c.bootstrap
    other.kill(1)
    assert c.broker(1).state == "dead"  # the owning instance sees it too (and reaps its child)
    other.pause("zk")
    assert c.zookeeper.state == "paused"
    other.resume("zk")
    other.start(1)
    assert c.broker(1).state == "running"
    with pytest.raises(ClusterError, match="already running"):
        other.start(0)
    with pytest.raises(ClusterError, match="unknown process"):
        other.kill(7)
    # a process started by the other instance is still stopped by the owner's shutdown
    pid = c.broker(1).pid
    c.shutdown()
    assert not _not_zombie(pid)
    assert ClusterLauncher.attach(c.data_dir).status()[1].state == "stopped"


def test_attach_without_cluster(tmp_path):
    with pytest.raises(ClusterError, match="no cluster"):
        ClusterLauncher.attach(tmp_path)


def test_up_refuses_while_an_earlier_run_is_alive(cluster_factory):
    c = cluster_factory(brokers=1, standalone=True)
    with pytest.raises(ClusterError, match="still running"):
        ClusterLauncher(c.data_dir, brokers=1).prepare()


def test_restart_keeps_ports_and_data(tmp_path):
    with Cluster(tmp_path, brokers=1, standalone=True) as c:
        port, zk_port = c.broker(0).port, c.zookeeper.port
    with Cluster(tmp_path, brokers=1, standalone=True) as c:
        assert (c.broker(0).port, c.zookeeper.port) == (port, zk_port)


def test_three_brokers_register_in_zookeeper_and_know_each_other_once_started(cluster_factory):
    c = cluster_factory(brokers=3, racks=["a", "b", "c"], timeout=30)
    assert c.registered_broker_ids() == [0, 1, 2]
    # start_all returns once every broker has learnt of the others (a CreateTopics with RF=3 sent right away
    # failed with INVALID_REPLICATION_FACTOR when one broker had not yet seen the third one's registration)
    for b in c.brokers:
        assert asyncio.run(brokers_seen_by(b.port)) == {0, 1, 2}
    zk = c.kazoo()
    info = json.loads(zk.get("/brokers/ids/1")[0])
    assert info.get("rack") == "b"
    assert f"127.0.0.1:{c.broker(1).port}" in json.dumps(info)
    c.broker(2).kill()
    assert wait_for(lambda: c.registered_broker_ids() == [0, 1], timeout=30)  # ephemeral node gone
    c.broker(2).start()
    assert wait_for(lambda: c.registered_broker_ids() == [0, 1, 2], timeout=15)
