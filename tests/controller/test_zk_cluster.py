"""Controller and ZkMetadata against a real ZooKeeper: several cluster members in one process."""

from __future__ import annotations

import json

import pytest

from broker.controller import zk_paths as zp
from broker.controller.state import NO_LEADER
from broker.errors import ErrorCode, KafkaError
from tests.controller.conftest import wait_until


def online(cluster, node, topic, parts):
    def ok():
        return all((s := node.partition_state(topic, p)) is not None and s.leader != NO_LEADER
                   for p in range(parts))
    wait_until(ok, 10, f"{topic} online on {node.me.node_id}: {node.partition_states()} {node.assignments()}")


def raw(node, path):
    data, stat = node.zk.get(path)
    return json.loads(data.decode()), stat


def test_registration_controller_and_topic_creation_in_kafka_format(cluster):
    a = cluster.start(1, rack="r1")
    cluster.start(2, rack="r2")
    cluster.start(3, rack="r3")
    ctrl = cluster.controller()
    wait_until(lambda: all(len(n.brokers()) == 3 for n in cluster.nodes.values()), 10, "3 brokers seen")
    reg, _ = raw(a, zp.broker_path(2))
    assert reg["version"] == 5 and reg["port"] == 19002 and reg["rack"] == "r2"
    assert reg["endpoints"] == ["PLAINTEXT://127.0.0.1:19002"]
    c, _ = raw(a, zp.CONTROLLER)
    assert c["version"] == 1 and c["brokerid"] == ctrl.me.node_id and "timestamp" in c
    assert int(a.zk.get(zp.CONTROLLER_EPOCH)[0]) == ctrl.controller.epoch >= 1
    assert all(n.controller_id == ctrl.me.node_id for n in cluster.nodes.values())
    # cluster id shared through /cluster/id
    assert len({n.cluster_id for n in cluster.nodes.values()}) == 1
    assert json.loads(a.zk.get(zp.CLUSTER_ID)[0])["id"] == a.cluster_id

    info = cluster.nodes[2].create_topic("orders", 6, 3, {"retention.ms": "1000"})
    assert info.partitions == 6 and info.replication_factor == 3
    with pytest.raises(KafkaError) as e:
        cluster.nodes[3].create_topic("orders", 1, 1, {})
    assert e.value.code == ErrorCode.topic_already_exists
    for n in cluster.nodes.values():
        online(cluster, n, "orders", 6)
    t, _ = raw(a, zp.topic_path("orders"))
    assert t["version"] == 3 and zp.decode_topic_id(t["topic_id"]) == info.topic_id
    assert sorted(t["partitions"]) == [str(p) for p in range(6)]
    leaders = []
    for p in range(6):
        reps = t["partitions"][str(p)]
        assert len(set(reps)) == 3
        st, _ = raw(a, zp.state_path("orders", p))
        assert set(st) == {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
        assert st["leader"] == reps[0] and st["isr"] == reps and st["leader_epoch"] == 0
        assert st["controller_epoch"] == ctrl.controller.epoch
        leaders.append(st["leader"])
    assert sorted(set(leaders)) == [1, 2, 3]  # leaders spread
    cfg, _ = raw(a, zp.topic_config_path("orders"))
    assert cfg == {"version": 1, "config": {"retention.ms": "1000"}}
    # every broker's listener got every state, on the loop thread
    wait_until(lambda: all(len([k for k in lst.states if k[0] == "orders"]) == 6
                           for lst in cluster.listeners.values()), 10, "listeners")
    assert all(lst.wrong_thread == 0 for lst in cluster.listeners.values())
    assert all(n.topic("orders").configs == {"retention.ms": "1000"} for n in cluster.nodes.values())
    assert cluster.run(cluster.nodes[3].wait_online("orders", 5))


def test_controller_failover_bumps_epoch_and_fences_old(cluster):
    for b in (1, 2, 3):
        cluster.start(b)
    old = cluster.controller()
    old_epoch = old.controller.epoch
    old_version = old.controller.epoch_zk_version
    old_id = old.me.node_id
    cluster.stop(old_id)
    new = cluster.controller()
    assert new.me.node_id != old_id and new.controller.epoch == old_epoch + 1
    wait_until(lambda: all(n.controller_id == new.me.node_id for n in cluster.nodes.values()), 10, "ids")
    # a zombie write with the old epoch version is rejected
    tx = new.zk.transaction()
    tx.check(zp.CONTROLLER_EPOCH, old_version)
    tx.create("/zombie", b"")
    res = tx.commit()
    assert not isinstance(res[0], bool) and isinstance(res[0], Exception)
    assert not new.zk.exists("/zombie")
