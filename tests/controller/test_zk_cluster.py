"""Controller and ZkMetadata against a real ZooKeeper: several cluster members in one process."""

from __future__ import annotations

import json

import pytest

from broker.controller import zk_paths as zp
from broker.controller.state import NO_LEADER
from broker.errors import ErrorCode, KafkaError
from common.polling import wait_until


def online(cluster, node, topic, parts):
    def ok():
        return all((s := node.partition_state(topic, p)) is not None and s.leader != NO_LEADER
                   for p in range(parts))
    wait_until(ok, 10, 0.02, f"{topic} online on {node.me.node_id}: {node.partition_states()} {node.assignments()}")


def raw(node, path):
    data, stat = node.zk.get(path)
    return json.loads(data.decode()), stat


def test_registration_controller_and_topic_creation_in_kafka_format(cluster):
    a = cluster.start(1, rack="r1")
    cluster.start(2, rack="r2")
    cluster.start(3, rack="r3")
    ctrl = cluster.controller()
    wait_until(lambda: all(len(n.brokers()) == 3 for n in cluster.nodes.values()), 10, 0.02, "3 brokers seen")
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
                           for lst in cluster.listeners.values()), 10, 0.02, "listeners")
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
    wait_until(lambda: all(n.controller_id == new.me.node_id for n in cluster.nodes.values()), 10, 0.02, "ids")
    # a zombie write with the old epoch version is rejected
    tx = new.zk.transaction()
    tx.check(zp.CONTROLLER_EPOCH, old_version)
    tx.create("/zombie", b"")
    res = tx.commit()
    assert not isinstance(res[0], bool) and isinstance(res[0], Exception)
    assert not new.zk.exists("/zombie")


def three(cluster, **settings):
    for b in (1, 2, 3):
        cluster.start(b, **settings)
    ctrl = cluster.controller()
    wait_until(lambda: all(len(n.brokers()) == 3 for n in cluster.nodes.values()), 10, 0.02, "3 brokers seen")
    return ctrl


def survivor(cluster, not_id):
    return next(n for b, n in cluster.nodes.items() if b != not_id)


def test_broker_death_moves_leader_within_isr_and_shrinks_isr(cluster):
    three(cluster)
    n1 = cluster.nodes[1]
    n1.create_topic("t", 3, 3, {}, assignment={0: [2, 1, 3], 1: [3, 2, 1], 2: [1, 2, 3]})
    online(cluster, n1, "t", 3)
    ctrl_id = n1.controller_id
    victim = 2 if ctrl_id != 2 else 3
    before = n1.partition_state("t", 0 if victim == 2 else 1)
    cluster.stop(victim)
    obs = survivor(cluster, victim)
    p = 0 if victim == 2 else 1

    def moved():
        s = obs.partition_state("t", p)
        return s if s.leader not in (victim, NO_LEADER) and victim not in s.isr else None
    s = wait_until(moved, 10, 0.02, "leader moved")
    assert s.leader_epoch == before.leader_epoch + 1 and s.leader in before.isr
    # followers on the dead broker leave the ISR of every partition
    wait_until(lambda: all(victim not in obs.partition_state("t", q).isr for q in range(3)), 10, 0.02, "isr shrunk")
    wait_until(lambda: cluster.listeners[obs.me.node_id].states[("t", p)].leader == s.leader, 10, 0.02, "listener")


def test_unclean_disabled_goes_offline_enabled_elects_and_counts(cluster):
    three(cluster)
    ctrl = cluster.controller()
    others = [b for b in (1, 2, 3) if b != ctrl.me.node_id]
    a, b = others
    # ISR only on `a`; `b` is an out-of-sync replica
    for name, conf in (("clean", {}), ("dirty", {"unclean.leader.election.enable": "true"})):
        ctrl.create_topic(name, 1, 2, conf, assignment={0: [a, b]})
        online(cluster, ctrl, name, 1)
        cur = ctrl.partition_state(name, 0)
        assert cur.leader == a
        assert ctrl.update_isr(name, 0, cur, (a,)) is not None  # leader `a` shrinks the ISR
    before = ctrl.controller.unclean_leader_elections
    cluster.stop(a)
    s = wait_until(lambda: (x := ctrl.partition_state("clean", 0)).leader == NO_LEADER and x, 10, 0.02, "offline")
    assert s.isr == (a,)  # the last ISR member is kept
    d = wait_until(lambda: (x := ctrl.partition_state("dirty", 0)).leader == b and x, 10, 0.02, "unclean election")
    assert d.isr == (b,)
    assert ctrl.controller.unclean_leader_elections == before + 1
    assert ctrl.controller.stats().offline_partitions == 1
    # when `a` returns, the offline partition is cleanly elected again
    cluster.start(a)
    wait_until(lambda: ctrl.partition_state("clean", 0).leader == a, 10, 0.02, "clean election on return")


def test_controlled_shutdown_moves_leadership_and_rebalance_restores_it(cluster):
    three(cluster)
    ctrl = cluster.controller()
    leaving = next(b for b in (1, 2, 3) if b != ctrl.me.node_id)
    node = cluster.nodes[leaving]
    ctrl.create_topic("cs", 6, 3, {})
    online(cluster, ctrl, "cs", 6)
    led = [p for p in range(6) if ctrl.partition_state("cs", p).leader == leaving]
    assert led
    remaining = cluster.run(node.controlled_shutdown(10))
    assert remaining == 0
    for p in range(6):
        s = ctrl.partition_state("cs", p)
        assert s.leader != leaving and leaving not in s.isr
    cluster.stop(leaving)
    cluster.start(leaving)
    # the returning replica catches up: its leaders add it back to the ISR (as the replica manager would)
    for p in range(6):
        s = ctrl.partition_state("cs", p)
        assert ctrl.update_isr("cs", p, s, s.isr + (leaving,)) is not None
    assert ctrl.controller.stats().preferred_replica_imbalance == len(led)
    moved = ctrl.controller.submit(ctrl.controller.rebalance).result(10)
    assert moved == len(led)
    wait_until(lambda: all(ctrl.partition_state("cs", p).leader == leaving for p in led), 10, 0.02, "preferred back")
    assert ctrl.controller.stats().preferred_replica_imbalance == 0


def test_elect_leaders_preferred_and_unclean(cluster):
    three(cluster)
    ctrl = cluster.controller()
    x, y = [b for b in (1, 2, 3) if b != ctrl.me.node_id]
    ctrl.create_topic("el", 1, 2, {}, assignment={0: [x, y]})
    online(cluster, ctrl, "el", 1)
    res = cluster.run(ctrl.elect_leaders(0, [("el", 0), ("nope", 0)], 10))
    assert res[("el", 0)][0] == ErrorCode.election_not_needed
    assert res[("nope", 0)][0] == ErrorCode.unknown_topic_or_partition
    with pytest.raises(KafkaError) as e:
        cluster.run(cluster.nodes[x].elect_leaders(0, None, 10))
    assert e.value.code == ErrorCode.not_controller
    # move leadership to y, then the preferred election brings it back to x
    cur = ctrl.partition_state("el", 0)
    ctrl.controller.submit(lambda: ctrl.controller._write_state(
        "el", 0, lambda c: __import__("broker.controller.election", fromlist=["Decision"]).Decision(y, c.isr))
    ).result(10)
    assert ctrl.partition_state("el", 0).leader == y
    res = cluster.run(ctrl.elect_leaders(0, [("el", 0)], 10))
    assert res[("el", 0)][0] == ErrorCode.none and ctrl.partition_state("el", 0).leader == x
    # unclean: ISR = [x], x dies -> offline; ElectLeaders(unclean) elects y
    cur = ctrl.partition_state("el", 0)
    assert ctrl.update_isr("el", 0, cur, (x,)) is not None
    cluster.stop(x)
    wait_until(lambda: ctrl.partition_state("el", 0).leader == NO_LEADER, 10, 0.02, "offline")
    res = cluster.run(ctrl.elect_leaders(1, [("el", 0)], 10))
    assert res[("el", 0)][0] == ErrorCode.none
    assert ctrl.partition_state("el", 0).leader == y and ctrl.partition_state("el", 0).isr == (y,)


def test_add_partitions_and_delete_topic(cluster):
    three(cluster)
    n2 = cluster.nodes[2]
    n2.create_topic("grow", 2, 2, {})
    online(cluster, n2, "grow", 2)
    info = cluster.nodes[3].add_partitions("grow", 5)
    assert info.partitions == 5
    for n in cluster.nodes.values():
        online(cluster, n, "grow", 5)
    a = n2.assignment("grow")
    assert all(len(a.partitions[p]) == 2 for p in range(5))
    with pytest.raises(KafkaError):
        n2.add_partitions("grow", 3)
    n2.delete_topic("grow")
    assert cluster.run(cluster.nodes[1].wait_deleted("grow", 10))
    wait_until(lambda: all("grow" in lst.deleted and not any(k[0] == "grow" for k in lst.states)
                           for lst in cluster.listeners.values()), 10, 0.02, "on_topic_deleted everywhere")
    assert not n2.zk.exists(zp.topic_path("grow")) and not n2.zk.exists(zp.topic_config_path("grow"))
    assert not n2.zk.exists(zp.delete_topic_path("grow"))
    # the name can be used again
    n2.create_topic("grow", 1, 1, {})
    online(cluster, n2, "grow", 1)


def test_reassignment_via_api_and_legacy_znode(cluster):
    three(cluster)
    ctrl = cluster.controller()
    n1 = cluster.nodes[1]
    n1.create_topic("mv", 2, 2, {}, assignment={0: [1, 2], 1: [2, 3]})
    online(cluster, n1, "mv", 2)
    res = n1.alter_reassignments({("mv", 0): (3, 2)})
    assert res[("mv", 0)] == (ErrorCode.none, None)
    assert n1.reassignments()[("mv", 0)] == ((3, 2, 1), (3,), (1,))
    again = n1.alter_reassignments({("mv", 0): (1, 3)})
    assert again[("mv", 0)][0] == ErrorCode.reassignment_in_progress
    # the new replica catches up: the leader adds it to the ISR, then the controller completes
    s = ctrl.partition_state("mv", 0)
    assert s.replicas == (3, 2, 1)
    assert n1.update_isr("mv", 0, s, s.isr + (3,)) is not None
    done = wait_until(lambda: (x := n1.partition_state("mv", 0)).replicas == (3, 2) and x, 10, 0.02, "reassigned")
    assert done.leader in (3, 2) and set(done.isr) <= {2, 3} and not n1.reassignments()
    # legacy znode (kafka-reassign-partitions --zookeeper)
    n1.zk.create(zp.REASSIGN_PARTITIONS, zp.encode_reassignment({("mv", 1): (1, 3)}))
    s = wait_until(lambda: (x := ctrl.partition_state("mv", 1)).replicas == (1, 3, 2) and x, 10, 0.02, "phase A")
    assert n1.update_isr("mv", 1, s, s.isr + (1,)) is not None
    wait_until(lambda: ctrl.partition_state("mv", 1).replicas == (1, 3), 10, 0.02, "legacy reassigned")
    wait_until(lambda: not n1.zk.exists(zp.REASSIGN_PARTITIONS), 10, 0.02, "znode removed")
    s = ctrl.partition_state("mv", 1)
    assert s.leader in (1, 3) and 2 not in s.isr


def test_conditional_isr_update_conflicts(cluster):
    three(cluster)
    n1 = cluster.nodes[1]
    n1.create_topic("isr", 1, 3, {})
    online(cluster, n1, "isr", 1)
    s = n1.partition_state("isr", 0)
    first = n1.update_isr("isr", 0, s, s.isr[:2])
    assert first is not None and first.version == s.version + 1
    assert n1.update_isr("isr", 0, s, s.isr[:1]) is None  # stale version
    # a leader epoch bump by the controller invalidates the leader's view
    stale = first
    wait_until(lambda: n1.partition_state("isr", 0).version == first.version, 10, 0.02, "cache")
    ctrl = cluster.controller()
    ctrl.controller.submit(lambda: ctrl.controller._write_state(
        "isr", 0, lambda c: __import__("broker.controller.election", fromlist=["Decision"]).Decision(
            c.leader, c.isr))).result(10)
    wait_until(lambda: n1.partition_state("isr", 0).leader_epoch == stale.leader_epoch + 1, 10, 0.02, "epoch bump")
    assert n1.update_isr("isr", 0, stale, stale.isr[:1]) is None


def test_session_expiry_reregisters_and_keeps_serving_cache(cluster):
    three(cluster)
    n3 = cluster.nodes[3]
    n3.create_topic("exp", 1, 3, {})
    online(cluster, n3, "exp", 1)
    sid, pwd = n3.zk.client_id
    # expire n3's session: another client with the same session id closes it
    from kazoo.client import KazooClient
    other = KazooClient(hosts=cluster.zk_server.host_port, client_id=(sid, pwd))
    other.start(timeout=10)
    other.stop()
    other.close()
    # the cache keeps answering meanwhile
    assert n3.topic("exp") is not None and n3.partition_state("exp", 0) is not None
    wait_until(lambda: (cid := n3.zk.client_id) and cid[0] != sid, 15, 0.02, "new session")
    wait_until(lambda: n3.zk.exists(zp.broker_path(3)) and n3.zk.get(zp.broker_path(3))[1].ephemeralOwner
               == n3.zk.client_id[0], 15, 0.02, "re-registered")
    wait_until(lambda: 3 in cluster.nodes[1].live_broker_ids(), 10, 0.02, "others see broker 3")
    cluster.controller()
    # still receiving watches with the new session
    n3b = cluster.nodes[1]
    n3b.create_topic("exp2", 1, 3, {})
    online(cluster, n3, "exp2", 1)


def test_bounced_broker_gets_new_leader_epoch(cluster):
    three(cluster)
    ctrl = cluster.controller()
    other = next(b for b in (1, 2, 3) if b != ctrl.me.node_id)
    ctrl.create_topic("b", 1, 1, {}, assignment={0: [other]})
    online(cluster, ctrl, "b", 1)
    before = ctrl.partition_state("b", 0)
    # the controller thread is held busy while the broker restarts, so it only sees the new registration
    gate = __import__("threading").Event()
    ctrl.controller.submit(lambda: gate.wait(10))
    cluster.stop(other)
    cluster.start(other)
    gate.set()
    s = wait_until(lambda: (x := ctrl.partition_state("b", 0)).leader_epoch >= before.leader_epoch + 2 and x,
                   10, 0.02, "bounce handled")
    assert s.leader == other and s.isr == (other,)


def test_short_zookeeper_pause_keeps_cache_and_recovers(cluster):
    three(cluster)
    n1 = cluster.nodes[1]
    n1.create_topic("zkp", 2, 3, {})
    online(cluster, n1, "zkp", 2)
    cluster.zk_server.pause()
    try:
        assert n1.topic("zkp") is not None and n1.partition_state("zkp", 0).online
        assert len(n1.brokers()) == 3
    finally:
        cluster.zk_server.resume()
    # same sessions continue (pause < session timeout): no re-election, writes work again
    ctrl = cluster.controller()
    n1.create_topic("zkp2", 1, 3, {})
    online(cluster, n1, "zkp2", 1)
    assert ctrl.controller.active


def test_producer_id_blocks_are_unique_across_brokers(cluster):
    """Kafka's /latest_producer_id_block: each broker claims its own block, so two brokers never hand out the
    same producer id (an idempotent producer reconnecting to another broker would be taken for a duplicate)."""
    from broker.broker import ProducerIdManager

    a, b = cluster.start(1), cluster.start(2)
    assert a.claim_producer_id_block(1000) == 0
    assert b.claim_producer_id_block(1000) == 1000
    data = json.loads(a.zk.get(zp.PRODUCER_ID_BLOCK)[0])
    assert data == {"version": 1, "broker": 2, "block_start": "1000", "block_end": "1999"}
    ma = ProducerIdManager(a.claim_producer_id_block)
    mb = ProducerIdManager(b.claim_producer_id_block)
    ids = [ma.allocate(), mb.allocate(), ma.allocate(), mb.allocate()]
    assert ids == [2000, 3000, 2001, 3001]


def test_enabling_unclean_election_on_a_topic_or_the_cluster_elects_its_offline_partitions(cluster):
    """An operator recovers an offline partition by enabling unclean.leader.election.enable: on the topic
    (KafkaController.enableTopicUncleanLeaderElection) or as the cluster's dynamic default (DynamicLogConfig ->
    enableDefaultUncleanLeaderElection); the controller elects at once, not when the old leader returns."""
    three(cluster)
    ctrl = cluster.controller()
    a, b = [x for x in (1, 2, 3) if x != ctrl.me.node_id]
    for name in ("by-topic", "by-default"):
        ctrl.create_topic(name, 1, 2, {}, assignment={0: [a, b]})
        online(cluster, ctrl, name, 1)
        cur = ctrl.partition_state(name, 0)
        assert ctrl.update_isr(name, 0, cur, (a,)) is not None
    cluster.stop(a)
    for name in ("by-topic", "by-default"):
        wait_until(lambda n=name: ctrl.partition_state(n, 0).leader == NO_LEADER, 10, 0.02, f"{name} offline")
    ctrl.set_topic_configs("by-topic", {"unclean.leader.election.enable": "true"})
    wait_until(lambda: ctrl.partition_state("by-topic", 0).leader == b, 10, 0.02, "elected on the topic config")
    assert ctrl.partition_state("by-default", 0).leader == NO_LEADER
    ctrl.broker_configs().set("<default>", {"unclean.leader.election.enable": "true"})
    wait_until(lambda: ctrl.partition_state("by-default", 0).leader == b, 10, 0.02, "elected on the cluster default")
