"""Cluster metadata behind one interface: topics, their partitions, ids and config overrides, brokers.

`LocalMetadata` is the standalone implementation (one broker, state in a JSON file in the first log dir).
The ZooKeeper-backed cluster implementation (broker/controller/store.py, ZkMetadata) provides the same
methods. Nothing outside the two implementations asks which one it has, except through `clustered`:
cluster-only requests (reassignments, ElectLeaders) get the answer Kafka gives for a one-broker cluster.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from broker.acl_storage import ACL_FILE, AclStorage, LocalAclStorage
from broker.broker_configs import BrokerConfigStore, LocalBrokerConfigs
from broker.controller.state import ClusterListener, PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.quota.store import ClientQuotaStore, LocalClientQuotas
from broker.scram_storage import LocalScramCredentials, ScramCredentialStore
from common.atomic_file import write_json

log = logging.getLogger(__name__)

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})


def validate_topic_name(name: str | None) -> str:
    """Kafka's Topic.validate: raises INVALID_TOPIC_EXCEPTION with Kafka's reason."""
    if not name:
        raise KafkaError(ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.invalid_topic_exception, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME:
        raise KafkaError(ErrorCode.invalid_topic_exception,
                         f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL.fullmatch(name):
        raise KafkaError(ErrorCode.invalid_topic_exception,
                         f"Topic name \"{name}\" is illegal, it contains a character other than "
                         "ASCII alphanumerics, '.', '_' and '-'")
    return name


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    # Every listener as registered: (name, security protocol, host, port); empty: PLAINTEXT at host:port only.
    listeners: tuple[tuple[str, str, str, int], ...] = ()

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """This broker's (host, port) on a listener name (Kafka's Broker.endpoint); None if it has none."""
        if not self.listeners:
            return (self.host, self.port) if listener.upper() == "PLAINTEXT" else None
        return next(((h, p) for n, _, h, p in self.listeners if n.upper() == listener.upper()), None)


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


# (topic, partition) -> (error, message), the per-partition result of ElectLeaders and reassignments.
PartitionResults = dict[tuple[str, int], tuple[ErrorCode, str | None]]
# (topic, partition) -> (replicas, adding, removing) of an ongoing reassignment.
Reassignments = dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


class MetadataStore(Protocol):
    """Cluster metadata as this broker sees it. Reads come from a local cache (never block); writes that
    go to ZooKeeper are synchronous and short; waiting for the controller to act is async."""

    cluster_id: str

    @property
    def controller_id(self) -> int:
        """The active controller's broker id (-1 while there is none)."""
    @property
    def clustered(self) -> bool:
        """True for a ZooKeeper cluster member, False standalone (which is its own controller)."""
    def brokers(self) -> list[BrokerInfo]:
        """Live brokers."""
    def topics(self) -> dict[str, TopicInfo]: ...
    def topic(self, name: str) -> TopicInfo | None: ...
    def partition_state(self, topic: str, partition: int) -> PartitionState | None: ...
    def topic_generation(self, name: str) -> int:
        """A number that changes whenever the topic's partitions, assignment or partition states may have
        (the key under which encoded Metadata answers are kept); never reused for another topic of that name."""
    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str],
                     assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo: ...
    def delete_topic(self, name: str) -> TopicInfo: ...
    def add_partitions(self, name: str, total: int,
                       assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo: ...
    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo: ...
    def group_configs(self, group: str) -> dict[str, str]:
        """A group's config overrides (KIP-848's dynamic group configs; coordinator/group_config.py)."""
    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        """Replace a group's overrides (empty: none)."""
    def configured_groups(self) -> list[str]:
        """The groups with overrides."""
    def update_isr(self, topic: str, partition: int, current: PartitionState,
                   isr: tuple[int, ...]) -> PartitionState | None:
        """Leader-only conditional ISR write; None if `current` is stale (version or leader epoch moved)."""
    def submit_isr_update(self, topic: str, partition: int, current: PartitionState, isr: tuple[int, ...],
                          done: Callable[[PartitionState | None], None]) -> None:
        """`update_isr` without waiting for it: `done(new state or None)` is called on the event loop (at once,
        or when ZooKeeper answers)."""
    def claim_producer_id_block(self, size: int) -> int:
        """Claim the next `size` producer ids (never handed out before, by any broker); the block's first id."""
    def reassignments(self) -> Reassignments:
        """Ongoing partition reassignments (ListPartitionReassignments)."""
    def adding_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """The replicas a reassignment of the partition is adding (none when it is not being reassigned)."""
    def alter_reassignments(self, targets: Mapping[tuple[str, int], Sequence[int] | None],
                            allow_replication_factor_change: bool = True) -> PartitionResults:
        """AlterPartitionReassignments: start (replicas) or cancel (None) a reassignment per partition."""
    async def elect_leaders(self, election_type: int, partitions: Sequence[tuple[str, int]] | None,
                            timeout_s: float) -> PartitionResults:
        """ElectLeaders (0 preferred, 1 unclean); raises NOT_CONTROLLER on a broker that is not the controller."""
    def set_leader_election_hook(self, hook: Callable[[float, bool], None]) -> None:
        """Call `hook(milliseconds, unclean)` (from any thread) for every leader this broker elects as controller."""
    async def wait_online(self, topic: str, timeout_s: float) -> bool:
        """Until every partition of `topic` has a leader (the controller acted), or the timeout."""
    async def wait_deleted(self, topic: str, timeout_s: float) -> bool:
        """Until the controller has deleted `topic`, or the timeout."""
    def shutting_down_brokers(self) -> set[int]:
        """Brokers in controlled shutdown: leaders must not add them back to an ISR."""
    def offline_replicas(self) -> dict[tuple[str, int], set[int]]:
        """Partition -> the live brokers whose replica of it is offline (a failed log dir)."""
    def start(self, listener: ClusterListener) -> None:
        """Register this broker and start delivering partition states to `listener`."""
    async def controlled_shutdown(self, timeout_s: float) -> int | None:
        """Ask the controller to move leadership off this broker before it stops."""
    def report_offline_replicas(self, partitions: list[tuple[str, int]]) -> None:
        """Tell the controller these replicas are offline here (a failed log dir), so it moves their leadership
        and takes them out of ISRs until this broker restarts. Blocking."""
    def acl_storage(self) -> AclStorage:
        """The ACLs the authorizer reads (loaded by `start` in a cluster) and where changes go."""
    def scram_credentials(self) -> ScramCredentialStore:
        """Where SCRAM logins read credentials and AlterUserScramCredentials writes them."""
    def client_quotas(self) -> ClientQuotaStore:
        """The client quota configs (Describe/AlterClientQuotas; the quota managers subscribe to them)."""
    def broker_configs(self) -> BrokerConfigStore:
        """The dynamic broker configs (Describe/AlterConfigs on BROKER resources; the replication throttles)."""
    def close(self) -> None: ...


class LocalMetadata:
    """Standalone metadata: this broker is the only broker and the controller."""

    FILE = "__cluster_metadata.json"
    PRODUCER_ID_FILE = "__producer_id_block"
    clustered = False

    def __init__(self, data_dir: Path, me: BrokerInfo, cluster_id: str = "") -> None:
        self._path = data_dir / self.FILE
        self._producer_id_path = data_dir / self.PRODUCER_ID_FILE
        self._me = me
        self.controller_id = me.node_id
        self._topics: dict[str, TopicInfo] = {}
        self._generations: dict[str, int] = {}
        self._generation = 0
        self._listener: ClusterListener | None = None
        self._acls: LocalAclStorage | None = None
        self._scram: LocalScramCredentials | None = None
        state = json.loads(self._path.read_text()) if self._path.exists() else {}
        self._group_configs: dict[str, dict[str, str]] = {g: dict(c) for g, c in state.get("groups", {}).items()}
        self._quotas = LocalClientQuotas(state.get("client_quotas", {}), self._save_quotas,
                                         lambda: self.scram_credentials().all())
        self._broker_configs = LocalBrokerConfigs(state.get("broker_configs", {}), self._save_broker_configs)
        self.cluster_id = state.get("cluster_id") or cluster_id or new_cluster_id()
        for t in state.get("topics", []):
            info = TopicInfo(t["name"], uuid.UUID(t["topic_id"]), t["partitions"], t.get("replication_factor", 1),
                             dict(t.get("configs", {})))
            self._topics[info.name] = info
        if state.get("cluster_id") != self.cluster_id:   # a broker restarted on a full disk must still start
            self._save()

    def _save_or_undo(self, undo: Callable[[], object]) -> None:
        """Write the metadata file; when the disk cannot take it, undo the change in memory and answer
        KAFKA_STORAGE_ERROR (the handler's per-topic error), so memory and file still agree."""
        try:
            self._save()
        except OSError as e:
            undo()
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"The metadata file {self._path} could not be written: {e}") from None

    def _save(self, quotas: dict[str, dict[str, str]] | None = None,
              broker_configs: dict[str, dict[str, str]] | None = None) -> None:
        state = {"cluster_id": self.cluster_id, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "partitions": t.partitions,
             "replication_factor": t.replication_factor, "configs": t.configs}
            for t in self._topics.values()]}
        if self._group_configs:
            state["groups"] = self._group_configs
        quotas = self._quotas.configs() if quotas is None else quotas
        if quotas:   # entity path (users/alice/clients/c1) -> config, as Kafka's znodes
            state["client_quotas"] = quotas
        broker_configs = self._broker_configs.configs() if broker_configs is None else broker_configs
        if broker_configs:   # broker id or <default> -> dynamic config
            state["broker_configs"] = broker_configs
        self._path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self._path, state)

    def brokers(self) -> list[BrokerInfo]:
        return [self._me]

    def group_configs(self, group: str) -> dict[str, str]:
        return dict(self._group_configs.get(group, {}))

    def configured_groups(self) -> list[str]:
        return sorted(self._group_configs)

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        before = self._group_configs.get(group)
        if configs:
            self._group_configs[group] = dict(configs)
        else:
            self._group_configs.pop(group, None)
        self._save_or_undo(lambda: self._group_configs.update({group: before}) if before is not None
                           else self._group_configs.pop(group, None))

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        info = self._topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return None
        return self._leader_state()

    def topic_generation(self, name: str) -> int:
        return self._generations.get(name, 0)

    def _changed(self, name: str) -> None:
        self._generation += 1
        self._generations[name] = self._generation

    def _leader_state(self) -> PartitionState:
        """This broker leads every partition, alone in its ISR."""
        me = self._me.node_id
        return PartitionState(replicas=(me,), leader=me, leader_epoch=0, isr=(me,))

    def update_isr(self, topic: str, partition: int, current: PartitionState,
                   isr: tuple[int, ...]) -> PartitionState | None:
        return current  # a single broker is always its own ISR

    def submit_isr_update(self, topic: str, partition: int, current: PartitionState, isr: tuple[int, ...],
                          done: Callable[[PartitionState | None], None]) -> None:
        done(self.update_isr(topic, partition, current, isr))

    async def wait_online(self, topic: str, timeout_s: float) -> bool:
        return topic in self._topics

    async def wait_deleted(self, topic: str, timeout_s: float) -> bool:
        return topic not in self._topics

    def shutting_down_brokers(self) -> set[int]:
        return set()

    def offline_replicas(self) -> dict[tuple[str, int], set[int]]:
        return {}   # its log dirs stay online (log/dir_failure.py)

    def start(self, listener: ClusterListener) -> None:
        self._listener = listener
        for name in self._topics:
            self._announce(name)

    def _announce(self, name: str) -> None:
        if self._listener is not None:
            for p in range(self._topics[name].partitions):
                self._listener.on_partition_state(name, p, self._leader_state())

    async def controlled_shutdown(self, timeout_s: float) -> None:
        return None  # nobody to hand leadership to

    def report_offline_replicas(self, partitions: list[tuple[str, int]]) -> None:
        return None  # no controller: a standalone broker keeps its log dirs online (log/dir_failure.py)

    def acl_storage(self) -> AclStorage:
        if self._acls is None:
            self._acls = LocalAclStorage(self._path.parent / ACL_FILE)
        return self._acls

    def scram_credentials(self) -> ScramCredentialStore:
        if self._scram is None:  # one store: it caches the file, and AlterUserScramCredentials writes through it
            self._scram = LocalScramCredentials(self._path.parent, on_user_change=self._quotas.user_changed)
        return self._scram

    def client_quotas(self) -> ClientQuotaStore:
        return self._quotas

    def _save_quotas(self, quotas: dict[str, dict[str, str]]) -> None:
        """Write the file with these quota configs (LocalClientQuotas keeps them only once written)."""
        self._save_or_raise(quotas=quotas)

    def broker_configs(self) -> BrokerConfigStore:
        return self._broker_configs

    def _save_broker_configs(self, configs: dict[str, dict[str, str]]) -> None:
        self._save_or_raise(broker_configs=configs)

    def _save_or_raise(self, **override: dict[str, dict[str, str]]) -> None:
        try:
            self._save(**override)
        except OSError as e:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"The metadata file {self._path} could not be written: {e}") from None

    def claim_producer_id_block(self, size: int) -> int:
        """The file holds the end of the last block claimed, so ids never repeat across restarts."""
        start = int(self._producer_id_path.read_text()) if self._producer_id_path.exists() else 0
        try:
            write_json(self._producer_id_path, start + size)
        except OSError as e:   # as Kafka's ProducerIdManager while no block is ready: the client retries
            raise KafkaError(ErrorCode.coordinator_load_in_progress,
                             f"No producer id block: {self._producer_id_path} could not be written: {e}") from None
        return start

    def reassignments(self) -> Reassignments:
        return {}

    def adding_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        return ()

    def alter_reassignments(self, targets: Mapping[tuple[str, int], Sequence[int] | None],
                            allow_replication_factor_change: bool = True) -> PartitionResults:
        """As a single-broker cluster answers: moving a partition onto this broker, where its one replica already
        is, is done at once (kafka-reassign-partitions.sh --execute then --verify); other brokers are not alive."""
        me = self._me.node_id
        results: PartitionResults = {}
        for (t, p), target in targets.items():
            if self.partition_state(t, p) is None:
                results[(t, p)] = (ErrorCode.unknown_topic_or_partition, None)
            elif target is None:
                results[(t, p)] = (ErrorCode.no_reassignment_in_progress, None)
            elif list(target) == [me]:
                results[(t, p)] = (ErrorCode.none, None)
            else:
                results[(t, p)] = (ErrorCode.invalid_replica_assignment, "Replica assignment has brokers that are not "
                                   f"alive. Replica list: {', '.join(map(str, target))}, live broker list: {me}")
        return results

    async def elect_leaders(self, election_type: int, partitions: Sequence[tuple[str, int]] | None,
                            timeout_s: float) -> PartitionResults:
        """One replica per partition: its leader is always the preferred one, and never offline."""
        return {(t, p): ((ErrorCode.election_not_needed, None) if self.partition_state(t, p) is not None
                         else (ErrorCode.unknown_topic_or_partition, None)) for t, p in partitions or []}

    def set_leader_election_hook(self, hook: Callable[[float, bool], None]) -> None:
        return None  # a standalone broker never elects

    def close(self) -> None:
        return None

    def topics(self) -> dict[str, TopicInfo]:
        return self._topics

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str],
                     assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo:
        """`assignment` can only name this broker here."""
        validate_topic_name(name)
        self._check_assignment(assignment)
        if name in self._topics:
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        if partitions < 1:
            raise KafkaError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
        if replication_factor < 1:
            raise KafkaError(ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
        if replication_factor > len(self.brokers()):
            raise KafkaError(ErrorCode.invalid_replication_factor,
                             f"Replication factor: {replication_factor} larger than available brokers: "
                             f"{len(self.brokers())}.")
        info = TopicInfo(name, uuid.uuid4(), partitions, replication_factor, dict(configs))
        self._topics[name] = info
        self._save_or_undo(lambda: self._topics.pop(name))
        self._changed(name)
        self._announce(name)
        return info

    def delete_topic(self, name: str) -> TopicInfo:
        info = self._topics.pop(name, None)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        self._changed(name)
        try:
            self._save()
        except OSError as e:
            # A full disk: deleting a topic is how an operator makes room, so its logs go first and the file is
            # written after. Should that fail too, the deletion stands (its data is gone) and the next change
            # writes the file; a restart before that brings the topic back empty.
            log.warning("metadata file not written (%s): deleting %s's logs first to make room", e, name)
            self._deleted(name)
            try:
                self._save()
            except OSError as again:
                log.error("metadata file still not written (%s): %s is deleted, but comes back empty if the "
                          "broker restarts before the next topic change", again, name)
            return info
        self._deleted(name)
        return info

    def _deleted(self, name: str) -> None:
        if self._listener is not None:
            self._listener.on_topic_deleted(name)

    def add_partitions(self, name: str, total: int,
                       assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo:
        self._check_assignment(assignment)
        info = self._require(name)
        if total <= info.partitions:
            raise KafkaError(ErrorCode.invalid_partitions,
                             f"Topic currently has {info.partitions} partitions, {total} would not be an increase.")
        before, info.partitions = info.partitions, total
        self._save_or_undo(lambda: setattr(info, "partitions", before))
        self._changed(name)
        self._announce(name)
        return info

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        info = self._require(name)
        before, info.configs = info.configs, dict(configs)
        self._save_or_undo(lambda: setattr(info, "configs", before))
        if self._listener is not None:
            self._listener.on_topic_config_changed(name)
        return info

    def _check_assignment(self, assignment: Mapping[int, Sequence[int]] | None) -> None:
        if assignment and any(list(r) != [self._me.node_id] for r in assignment.values()):
            raise KafkaError(ErrorCode.invalid_replica_assignment,
                             f"A standalone broker can only assign replicas to itself ({self._me.node_id})")

    def _require(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        return info


def new_cluster_id() -> str:
    import base64
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
