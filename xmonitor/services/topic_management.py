"""Topic management service: one pass at start and every `topic-management.rebalance.interval.ms`.

Reads the cluster (live brokers, the topic's partitions, replicas and leaders, ongoing reassignments), asks
`topic_logic.plan` what to do, and does it: create the topic (an "already exists" from a racing creator is
fine), add partitions (an "already has that many" from a racer is fine), reassign (never while any reassignment
runs), preferred leader election (deferred while a reassignment runs; checked every
`preferred.leader.election.check.interval.ms`). Kafka errors are logged and retried on the next pass.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from common.clock import SYSTEM, Clock
from xmonitor import topic_logic
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.reassign import ReassignClient, ReassignError
from xmonitor.services.base import Service, client_base, error_name, log

TIMEOUT_S = 10.0
_BENIGN = {KafkaError.TOPIC_ALREADY_EXISTS, KafkaError.INVALID_PARTITIONS}


def policy_of(cfg: MonitorConfig) -> topic_logic.Policy:
    return topic_logic.Policy(ratio=cfg.partitions_to_brokers_ratio, min_partitions=cfg.min_partition_num,
                              replication_factor=cfg.replication_factor, create=cfg.topic_creation_enabled,
                              add_partitions=cfg.topic_add_partition_enabled,
                              reassign_and_elect=cfg.topic_reassign_and_elect_enabled)


class TopicManagementService(Service):
    name = "topic-management"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, clock: Clock = SYSTEM) -> None:
        super().__init__(cfg, rec, clock)
        self.admin = AdminClient(client_base(cfg))
        self.policy = policy_of(cfg)
        self.elect_pending = False
        self.last_plan: topic_logic.Plan | None = None
        proto = str(cfg.client_props.get("security.protocol", "PLAINTEXT")).upper()
        self.wire_ok = proto == "PLAINTEXT"
        self.manual_assignment = True

    # ---- reading the cluster -----------------------------------------------------------------------------
    def live_brokers(self) -> tuple[list[int], Any]:
        cluster = self.admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        return sorted(n.id for n in cluster.nodes), cluster

    def topic_state(self) -> dict[int, topic_logic.PartitionState] | None:
        fut = self.admin.describe_topics(TopicCollection([self.cfg.topic]), request_timeout=TIMEOUT_S)[self.cfg.topic]
        try:
            desc = fut.result(TIMEOUT_S)
        except KafkaException as e:
            if e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise
        return {p.id: topic_logic.PartitionState(tuple(r.id for r in p.replicas),
                                                 p.leader.id if p.leader is not None else -1)
                for p in desc.partitions}

    def _reassign_client(self, cluster) -> ReassignClient | None:
        ctrl = cluster.controller
        if not self.wire_ok or ctrl is None:
            return None
        return ReassignClient(ctrl.host, ctrl.port, TIMEOUT_S)

    def propagated(self) -> bool:
        """Every live broker knows every partition of the topic and its leader.  Kafka creates a topic on the
        controller and tells the other brokers asynchronously; until then they refuse produce requests and offset
        commits for it (UNKNOWN_TOPIC_OR_PARTITION).  Xinfra sleeps 2 s after topic management starts for this.
        Not checkable without the PLAINTEXT wire client: then true."""
        if not self.wire_ok:
            return True
        state = self.topic_state()
        if not state:
            return False
        _, cluster = self.live_brokers()
        for node in cluster.nodes:
            leaders = ReassignClient(node.host, node.port, TIMEOUT_S).topic_leaders(self.cfg.topic)
            if leaders is None or set(leaders) != set(state) or min(leaders.values()) < 0:
                return False
        return True

    def propagated_safely(self) -> bool:
        try:
            return self.propagated()
        except (KafkaException, OSError, ReassignError, concurrent.futures.TimeoutError) as e:
            log.info("topic-management: topic not yet known everywhere (%s)", e)
            return False

    # ---- one pass ----------------------------------------------------------------------------------------
    def run_pass(self) -> topic_logic.Plan:
        brokers, cluster = self.live_brokers()
        state = self.topic_state()
        wire = self._reassign_client(cluster)
        in_progress = False
        can_reassign = wire is not None
        if wire is not None and state is not None:
            try:
                in_progress = bool(wire.list_reassignments())
            except (OSError, ReassignError) as e:
                log.warning("topic-management: ListPartitionReassignments failed (%s); not reassigning", e)
                can_reassign = False
        p = topic_logic.plan(brokers, state, self.policy, in_progress, can_reassign)
        self.last_plan = p
        for note in p.notes:
            log.info("topic-management: %s", note)
        if p.create is not None:
            self._create(p.create)
        if p.add:
            self._add_partitions(len(state or {}), p.add)
        if p.reassign and wire is not None:
            log.info("topic-management: reassigning %s", p.reassign)
            failed = wire.alter(self.cfg.topic, p.reassign)
            if failed:
                log.warning("topic-management: reassignment failed for %s", failed)
        if p.elect:
            self._elect(p.elect)
        self.elect_pending = p.elect_deferred
        return p

    def _create(self, assignment: list[list[int]]) -> None:
        props = {str(k): str(v) for k, v in self.cfg.topic_props.items()}
        if self.cfg.min_insync_replicas is not None:
            props["min.insync.replicas"] = str(self.cfg.min_insync_replicas)
        log.info("topic-management: creating %s with %d partitions, RF %d", self.cfg.topic, len(assignment),
                 len(assignment[0]))
        if self.manual_assignment:
            nt = NewTopic(self.cfg.topic, num_partitions=len(assignment), replica_assignment=assignment, config=props)
            if self._result(self.admin.create_topics([nt], request_timeout=TIMEOUT_S)[self.cfg.topic]):
                return
        nt = NewTopic(self.cfg.topic, num_partitions=len(assignment), replication_factor=len(assignment[0]),
                      config=props)
        self._result(self.admin.create_topics([nt], request_timeout=TIMEOUT_S)[self.cfg.topic])

    def _add_partitions(self, current: int, assignments: list[list[int]]) -> None:
        log.info("topic-management: adding partitions %d..%d: %s", current, current + len(assignments) - 1,
                 assignments)
        total = current + len(assignments)
        if self.manual_assignment:
            np = NewPartitions(self.cfg.topic, total, replica_assignment=assignments)
            if self._result(self.admin.create_partitions([np], request_timeout=TIMEOUT_S)[self.cfg.topic]):
                return
        np = NewPartitions(self.cfg.topic, total)
        self._result(self.admin.create_partitions([np], request_timeout=TIMEOUT_S)[self.cfg.topic])

    def _elect(self, partitions: list[int]) -> None:
        log.info("topic-management: preferred leader election on %s", partitions)
        tps = [TopicPartition(self.cfg.topic, p) for p in partitions]
        result = self.admin.elect_leaders(ElectionType.PREFERRED, tps, request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        for tp, err in (result or {}).items():
            if err is not None and err.code() != KafkaError.ELECTION_NOT_NEEDED:
                log.warning("topic-management: election for %s failed: %s", tp.partition, err.name())

    def _result(self, fut: concurrent.futures.Future) -> bool:
        """True when done (or a racing creator did it); False when the cluster refuses explicit replica
        assignments (then we fall back to the broker's own placement plus reassignment and election)."""
        try:
            fut.result(TIMEOUT_S)
        except KafkaException as e:
            code = e.args[0].code()
            if code == KafkaError.INVALID_REPLICA_ASSIGNMENT and self.manual_assignment:
                log.warning("topic-management: explicit replica assignment refused (%s); using the broker's "
                            "placement, then reassignment", e.args[0].str())
                self.manual_assignment = False
                return False
            if code not in _BENIGN:    # a racing creator got there first
                raise
        return True

    def run_pass_safely(self) -> bool:
        try:
            self.run_pass()
            self.rec.cycle_ok(self.name)
            return True
        except (KafkaException, OSError, ReassignError, concurrent.futures.TimeoutError) as e:
            log.warning("topic-management: pass failed (%s); retrying next pass", error_name(e) if
                        isinstance(e, KafkaException) else e)
            return False

    def run(self) -> None:
        interval = self.cfg.rebalance_interval_ms / 1000.0
        check = min(self.cfg.preferred_leader_election_check_interval_ms / 1000.0, interval)
        next_pass = self.clock.monotonic() + interval
        while not self.wait(min(check, max(next_pass - self.clock.monotonic(), 0.0))):
            if self.clock.monotonic() >= next_pass or self.elect_pending:
                self.run_pass_safely()
                if self.clock.monotonic() >= next_pass:
                    next_pass = self.clock.monotonic() + interval
