"""Client quota configs in ZooKeeper (ZkClientQuotas) on a real ZooKeeper, two in-process brokers: Kafka 3.9's znodes
and change notifications, other keys of a user's znode kept, changes seen by the other broker through the one
/config/changes listener that SCRAM credentials share."""

from __future__ import annotations

import json
import threading

from broker.quota.entity import DEFAULT, QuotaEntity
from broker.security.scram import SCRAM_SHA_512, credential_from_salted_password, credential_to_string
from common.polling import wait_until

ALICE = QuotaEntity(user="alice")
ALICE_C1 = QuotaEntity(user="alice", client_id="c1")


def _znode(zk, path: str):
    data, _ = zk.get(path)
    return json.loads(data) if data else None


def _notes(zk) -> list[str]:
    return [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"]
            for c in sorted(zk.get_children("/config/changes"))]


def test_quota_configs_in_kafkas_znodes_seen_by_every_broker(cluster):
    b0, b1 = cluster.start(0), cluster.start(1)
    seen: list[tuple[QuotaEntity, dict, bool]] = []
    b1.client_quotas().subscribe(lambda e, v: seen.append((e, v, threading.current_thread() is cluster.thread)))
    zk = b0.zk
    cluster.call(lambda: b0.client_quotas().set(ALICE, {"producer_byte_rate": 1048576.0, "request_percentage": 50.0}))
    cluster.call(lambda: b0.client_quotas().set(ALICE_C1, {"consumer_byte_rate": 2000.0}))
    cluster.call(lambda: b0.client_quotas().set(QuotaEntity(client_id=DEFAULT), {"controller_mutation_rate": 1e7}))
    assert _znode(zk, "/config/users/alice") == {
        "version": 1, "config": {"producer_byte_rate": "1048576", "request_percentage": "50.0"}}
    assert _znode(zk, "/config/users/alice/clients/c1") == {"version": 1, "config": {"consumer_byte_rate": "2000"}}
    assert _znode(zk, "/config/clients/<default>") == {"version": 1, "config": {"controller_mutation_rate": "1.0E7"}}
    assert _notes(zk)[-3:] == ["users/alice", "users/alice/clients/c1", "clients/<default>"]
    expected = {ALICE: {"producer_byte_rate": 1048576.0, "request_percentage": 50.0},
                ALICE_C1: {"consumer_byte_rate": 2000.0}, QuotaEntity(client_id=DEFAULT): {"controller_mutation_rate": 1e7}}
    wait_until(lambda: b1.client_quotas().all() == expected, 10, what="broker 1 sees broker 0's quotas")
    wait_until(lambda: len(seen) == 3, 10, what="broker 1's subscriber told")
    assert all(on_loop for *_, on_loop in seen)   # delivered on the event loop, not kazoo's thread
    # the last quota of a user/client entity gone: its znode goes, and the user's empty parents with it
    cluster.call(lambda: b0.client_quotas().set(ALICE_C1, {}))
    assert zk.exists("/config/users/alice/clients/c1") is None and zk.exists("/config/users/alice/clients") is None
    assert zk.exists("/config/users/alice") is not None   # it still holds alice's own quotas
    wait_until(lambda: ALICE_C1 not in b1.client_quotas().all(), 10, what="broker 1 sees the removal")
    assert seen[-1][:2] == (ALICE_C1, {})


def test_scram_keys_share_the_user_znode_and_the_listener(cluster):
    b0, b1 = cluster.start(0), cluster.start(1)
    cred = credential_from_salted_password(SCRAM_SHA_512, b"s" * 16, b"p" * 64, 8192)
    cluster.call(lambda: b0.scram_credentials().set("bob", SCRAM_SHA_512, cred))
    # a user with only SCRAM credentials is a quota entity with no values (DynamicConfigManager feeds it)
    wait_until(lambda: b1.client_quotas().all().get(QuotaEntity(user="bob")) == {}, 10, what="bob as an entity")
    wait_until(lambda: b1.scram_credentials().lookup("bob", "SCRAM-SHA-512") == cred, 10, what="bob's credential")
    cluster.call(lambda: b0.client_quotas().set(QuotaEntity(user="bob"), {"consumer_byte_rate": 10.0}))
    config = _znode(b0.zk, "/config/users/bob")["config"]
    assert config["consumer_byte_rate"] == "10" and "SCRAM-SHA-512" in config
    cluster.call(lambda: b0.client_quotas().set(QuotaEntity(user="bob"), {}))
    assert set(_znode(b0.zk, "/config/users/bob")["config"]) == {"SCRAM-SHA-512"}   # the credential is kept
    wait_until(lambda: b1.client_quotas().all().get(QuotaEntity(user="bob")) == {}, 10, what="bob without quotas")
    assert b1.scram_credentials().lookup("bob", "SCRAM-SHA-512") == cred
    # a user/client-id notification is not a user to SCRAM
    cluster.call(lambda: b0.client_quotas().set(QuotaEntity(user="bob", client_id="k"), {"producer_byte_rate": 1.0}))
    wait_until(lambda: QuotaEntity(user="bob", client_id="k") in b1.client_quotas().all(), 10, what="bob/k")
    assert set(b1.scram_credentials().all()) == {"bob"}


def test_entities_written_before_start_are_loaded(cluster, zk_server):
    b0 = cluster.start(0)
    zk = b0.zk
    # as a Kafka 3.9 broker (or kafka-configs.sh --zookeeper) leaves them
    zk.create("/config/users/CN%3Da%20b", b'{"version":1,"config":{"request_percentage":"0.001"}}', makepath=True)
    zk.create("/config/users/<default>/clients/<default>", b'{"version":1,"config":{"producer_byte_rate":"100"}}',
              makepath=True)
    cred = credential_to_string(credential_from_salted_password(SCRAM_SHA_512, b"s" * 16, b"p" * 64, 8192))
    zk.create("/config/users/carol", json.dumps({"version": 1, "config": {"SCRAM-SHA-512": cred}}).encode(),
              makepath=True)
    b1 = cluster.start(1)
    got = b1.client_quotas().all()
    assert got[QuotaEntity(user="CN=a b")] == {"request_percentage": 0.001}
    assert got[QuotaEntity(user=DEFAULT, client_id=DEFAULT)] == {"producer_byte_rate": 100.0}
    assert got[QuotaEntity(user="carol")] == {} and got[QuotaEntity(user=DEFAULT)] == {}


def test_ip_entities_in_config_ips_seen_by_the_other_broker_and_loaded_at_start(cluster):
    b0, b1 = cluster.start(0), cluster.start(1)
    zk = b0.zk
    ip, default = QuotaEntity(ip="10.0.0.7"), QuotaEntity(ip=DEFAULT)
    cluster.call(lambda: b0.client_quotas().set(ip, {"connection_creation_rate": 5.0}))
    cluster.call(lambda: b0.client_quotas().set(default, {"connection_creation_rate": 100.0}))
    assert _znode(zk, "/config/ips/10.0.0.7") == {"version": 1, "config": {"connection_creation_rate": "5"}}
    assert _notes(zk)[-2:] == ["ips/10.0.0.7", "ips/<default>"]
    wait_until(lambda: b1.client_quotas().all().get(ip) == {"connection_creation_rate": 5.0}, 10,
               what="broker 1 sees the IP quota")
    cluster.call(lambda: b0.client_quotas().set(ip, {}))
    assert zk.exists("/config/ips/10.0.0.7") is None    # an IP entity's empty znode goes, as a client's
    b2 = cluster.start(2)
    assert b2.client_quotas().all() == {default: {"connection_creation_rate": 100.0}}
