"""ZooKeeper paths and znode JSON, in Kafka's (ZooKeeper mode) formats so that zkCli reads like Kafka's.

    /cluster/id                                   {"version":"1","id":"<cluster id>"}
    /controller                                   {"version":1,"brokerid":1,"timestamp":"..."} (ephemeral)
    /controller_epoch                             "3"
    /brokers/ids/<id>                             broker registration v5 (ephemeral)
    /brokers/topics/<t>                           {"version":3,"partitions":{"0":[1,2]},"topic_id":"...",
                                                   "adding_replicas":{},"removing_replicas":{}}
    /brokers/topics/<t>/partitions/<p>/state      {"controller_epoch":1,"leader":1,"version":1,
                                                   "leader_epoch":0,"isr":[1,2]}
    /config/topics/<t>                            {"version":1,"config":{...}}
    /config/groups/<g>                            kafkascope's own (Kafka keeps group configs only in KRaft's
                                                  metadata log): {"version":1,"config":{...}}
    /admin/delete_topics/<t>                      (empty)
    /admin/reassign_partitions                    {"version":1,"partitions":[{"topic":..,"partition":..,
                                                   "replicas":[..]}]}
    /admin/preferred_replica_election             {"version":1,"partitions":[{"topic":..,"partition":..}]}
    /admin/controlled_shutdown/<id>               kafkascope's own (the RPC is not in kio): ephemeral
                                                  {"version":1,"broker_id":N,"status":"requested"|"done",
                                                   "partitions_remaining":N}
    /admin/offline_replicas/<id>                  kafkascope's own, in place of Kafka's /log_dir_event_notification
                                                  and the KAFKA_STORAGE_ERROR answers to the controller's
                                                  LeaderAndIsr (not in kio): ephemeral {"version":1,"broker_id":N,
                                                  "partitions":[{"topic":..,"partition":..}]}
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.controller.state import PartitionState

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_GROUPS = "/config/groups"
CONFIG_CHANGES = "/config/changes"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CONTROLLED_SHUTDOWN = "/admin/controlled_shutdown"
OFFLINE_REPLICAS = "/admin/offline_replicas"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"

# Persistent paths every cluster has (Kafka's ZkData.PersistentZkPaths plus ours).
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, CONFIG_CHANGES, DELETE_TOPICS, CONTROLLED_SHUTDOWN,
                    OFFLINE_REPLICAS, ISR_CHANGE_NOTIFICATION, "/cluster", "/config/brokers", "/config/clients", "/config/users",
                    CONFIG_GROUPS, PRODUCER_ID_BLOCK)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def group_config_path(group: str) -> str:
    return f"{CONFIG_GROUPS}/{group}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def controlled_shutdown_path(broker_id: int) -> str:
    return f"{CONTROLLED_SHUTDOWN}/{broker_id}"


def offline_replicas_path(broker_id: int) -> str:
    return f"{OFFLINE_REPLICAS}/{broker_id}"


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes | None) -> dict:
    if not data:
        return {}
    return json.loads(data.decode())


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# ---------------------------------------------------------------- ids

def encode_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def decode_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    """Kafka's ProducerIdBlockZNode: the last block handed out, `block_end` inclusive, numbers as strings."""
    return _dumps({"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)})


def decode_producer_id_block_end(data: bytes) -> int:
    """The last id of the latest block (-1 when the znode is still empty)."""
    if not data:
        return -1
    return int(json.loads(data.decode())["block_end"])


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return _loads(data)["id"]


# ---------------------------------------------------------------- brokers and controller

@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple[tuple[str, str, str, int], ...] = ()  # (name, protocol, host, port), all advertised


def encode_broker(b: BrokerRegistration, listener: str = "PLAINTEXT") -> bytes:
    """Kafka's BrokerIdZNode v5 (every advertised listener in `endpoints`, the first one's host/port on top)."""
    listeners = b.listeners or ((listener, "PLAINTEXT", b.host, b.port),)
    body: dict[str, object] = {
        "features": {},
        "listener_security_protocol_map": {n: proto for n, proto, _, _ in listeners},
        "endpoints": [f"{n}://{h}:{p}" for n, _, h, p in listeners],
        "jmx_port": -1,
        "port": b.port,
        "host": b.host,
        "version": 5,
        "timestamp": _now_ms(),
    }
    if b.rack:
        body["rack"] = b.rack
    return _dumps(body)


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    d = _loads(data)
    host, port = d.get("host"), d.get("port", -1)
    if (not host or port in (None, -1)) and d.get("endpoints"):
        ep = d["endpoints"][0].split("://", 1)[-1]
        host, _, p = ep.rpartition(":")
        host, port = host.strip("[]"), int(p)
    protocols = d.get("listener_security_protocol_map") or {}
    listeners = []
    for ep in d.get("endpoints") or []:
        name, _, hp = ep.partition("://")
        h, _, p = hp.rpartition(":")
        listeners.append((name, protocols.get(name, name), h.strip("[]"), int(p)))
    return BrokerRegistration(broker_id, host or "", int(port), d.get("rack"), tuple(listeners))


def encode_controller(broker_id: int) -> bytes:
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": _now_ms()})


def decode_controller(data: bytes | None) -> int:
    if not data:
        return -1
    try:
        return int(_loads(data)["brokerid"])
    except (ValueError, KeyError):
        return int(data.decode())  # very old Kafka wrote the bare id


# ---------------------------------------------------------------- topics

@dataclass(frozen=True)
class TopicAssignment:
    """`/brokers/topics/<t>`: replicas per partition (the full set during a reassignment)."""

    topic_id: uuid.UUID
    partitions: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    version: int = -1  # znode version

    def target(self, partition: int) -> tuple[int, ...]:
        """The replicas this partition ends with (TRS): the full set minus those being removed."""
        removing = self.removing.get(partition, ())
        return tuple(r for r in self.partitions[partition] if r not in removing)

    def origin(self, partition: int) -> tuple[int, ...]:
        """The replicas before the reassignment (ORS)."""
        adding = self.adding.get(partition, ())
        return tuple(r for r in self.partitions[partition] if r not in adding)

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


def encode_topic(a: TopicAssignment) -> bytes:
    def enc(m: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items()) if r}
    return _dumps({"partitions": enc(a.partitions), "topic_id": encode_topic_id(a.topic_id),
                   "adding_replicas": enc(a.adding), "removing_replicas": enc(a.removing), "version": 3})


def decode_topic(data: bytes, version: int = -1) -> TopicAssignment:
    d = _loads(data)

    def dec(m: dict | None) -> dict[int, tuple[int, ...]]:
        return {int(p): tuple(int(r) for r in rs) for p, rs in (m or {}).items()}
    tid = d.get("topic_id")
    return TopicAssignment(decode_topic_id(tid) if tid else uuid.UUID(int=0), dec(d.get("partitions")),
                           dec(d.get("adding_replicas")), dec(d.get("removing_replicas")), version)


def encode_entity_config(configs: Mapping[str, str]) -> bytes:
    """An entity config znode as Kafka's AdminZkClient writes it (topics, groups, users, clients): version 1."""
    return _dumps({"version": 1, "config": dict(configs)})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    """The config of an entity znode; one without data (a parent such as users/alice above its clients) has none."""
    return {str(k): str(v) for k, v in (_loads(data).get("config") or {}).items()}


# ---------------------------------------------------------------- partition state

def encode_state(s: PartitionState) -> bytes:
    return _dumps({"controller_epoch": s.controller_epoch, "leader": s.leader, "version": 1,
                   "leader_epoch": s.leader_epoch, "isr": list(s.isr)})


def decode_state(data: bytes, replicas: tuple[int, ...], version: int) -> PartitionState:
    d = _loads(data)
    return PartitionState(replicas=replicas, leader=int(d["leader"]), leader_epoch=int(d["leader_epoch"]),
                          isr=tuple(int(r) for r in d["isr"]), controller_epoch=int(d.get("controller_epoch", 0)),
                          version=version)


# ---------------------------------------------------------------- admin requests

def encode_reassignment(targets: dict[tuple[str, int], tuple[int, ...]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                                for (t, p), r in sorted(targets.items())]})


def decode_reassignment(data: bytes | None) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(e["topic"], int(e["partition"])): tuple(int(r) for r in e["replicas"])
            for e in _loads(data).get("partitions", [])}


def encode_partition_list(partitions: list[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)]})


def decode_partition_list(data: bytes | None) -> list[tuple[str, int]]:
    return [(e["topic"], int(e["partition"])) for e in _loads(data).get("partitions", [])]


def encode_shutdown(broker_id: int, status: str, remaining: int = -1) -> bytes:
    return _dumps({"version": 1, "broker_id": broker_id, "status": status, "partitions_remaining": remaining,
                   "timestamp": _now_ms()})


def decode_shutdown(data: bytes | None) -> dict:
    return _loads(data)


def encode_offline_replicas(broker_id: int, partitions: list[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "broker_id": broker_id,
                   "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)]})


def decode_offline_replicas(data: bytes | None) -> frozenset[tuple[str, int]]:
    return frozenset((str(e["topic"]), int(e["partition"])) for e in _loads(data).get("partitions", []))
