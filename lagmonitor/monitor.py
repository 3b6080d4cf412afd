"""The live monitor's state: storage + evaluator + history sink + snapshots, fed by the collector.

Every method takes `now_ms`; the collector and HTTP threads share it under `lock`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from pathlib import Path

from common.clock import SYSTEM, Clock
from common.log_budget import LogBudget
from lagmonitor import decode, history
from lagmonitor.config import LagConfig
from lagmonitor.evaluator import Evaluator
from lagmonitor.storage import GroupFilter, LagStorage
from lagmonitor.topics import ClusterMeta

log = logging.getLogger(__name__)
SNAPSHOT = "lag-state.json"
UNDECODABLE = "undecodable"          # a record cut short or malformed (skip reasons: kafkascope_lag_records_skipped_total)
OTHER_REASONS = "other"
MAX_SKIP_REASONS = 64


class LagMonitor:
    def __init__(self, config: LagConfig, clock: Clock = SYSTEM) -> None:
        self.config = config
        # Damaged or forged records in bulk must not flood the log: the broker's budget for peer-caused lines.
        self._undecodable_log = LogBudget(clock)
        self.lock = threading.RLock()
        self.storage = LagStorage(config.storage)
        self.evaluator = Evaluator(config.cluster, self.storage, config.evaluator)
        self.accept = GroupFilter(config.collector.group_allowlist, config.collector.group_denylist)
        self.positions: dict[int, int] = {}   # __consumer_offsets partition → next offset to read
        self.seen_topics: set[str] = set()    # topics named in commits and assignments
        # Consumer-protocol groups (KIP-848) → member id → client id; their owners come from ConsumerGroupDescribe
        # (the collector), since their assignment records name topics by id only.
        self.consumer_groups: dict[str, dict[str, str]] = {}
        self.skipped: Counter[str] = Counter()   # records skipped, by reason (kafkascope_lag_records_skipped_total)
        self.sink = history.HistorySink(config.history_dir) if config.history_dir else None
        # The last topic metadata (kafka_exporter's series); never snapshotted: a restart asks the cluster again.
        self.cluster_meta: ClusterMeta | None = None
        self.load_snapshot()

    # ---------------------------------------------------------------- inputs

    def _skip(self, reason: str) -> int:
        """Count a skipped record; past MAX_SKIP_REASONS distinct reasons (forged records can carry any version
        number) new ones count as OTHER_REASONS, so the series stay bounded. Returns that reason's count."""
        if reason not in self.skipped and len(self.skipped) >= MAX_SKIP_REASONS:
            reason = OTHER_REASONS
        self.skipped[reason] += 1
        return self.skipped[reason]

    def apply_record(self, partition: int, offset: int, key: bytes | None, value: bytes | None, now_ms: int) -> None:
        """One __consumer_offsets message: decode, filter, store, record. Bad records are logged and skipped."""
        self.positions[partition] = offset + 1
        try:
            rec = decode.decode_record(key, value)
        except decode.DecodeError as e:
            n = self._skip(UNDECODABLE)
            if (left_out := self._undecodable_log.take()) is not None:
                log.warning("__consumer_offsets %d@%d: cannot decode (%s); skipped (%d so far, %d not logged)",
                            partition, offset, e, n, left_out)
            return
        if isinstance(rec, decode.Skipped):
            if self._skip(rec.reason) == 1 and rec.unknown:   # once per kind: a newer Kafka writes it often
                log.warning("__consumer_offsets %d@%d: skipped (%s)", partition, offset, rec.reason)
            return
        if not self.accept(rec.group):
            return
        if isinstance(rec, decode.ConsumerGroupRecord):
            self._consumer_group_record(rec, now_ms)
            return
        if isinstance(rec, decode.OffsetCommit):
            self.commit(rec.group, rec.topic, rec.partition, rec.offset, rec.timestamp, offset, now_ms)
        elif isinstance(rec, decode.OffsetTombstone):
            # Recorded either way: the history replay applies the same storage option.
            self._record(now_ms, history.OFFSET_DELETE, rec.group, rec.topic, rec.partition)
            if self.storage.delete_offset(rec.group, rec.topic, rec.partition):
                self.evaluator.invalidate(rec.group)
        elif isinstance(rec, decode.GroupTombstone):
            self.delete_group(rec.group, now_ms)
        else:
            self.seen_topics.update(t for m in rec.members for t, _ in m.assignment)
            self.storage.set_owners(rec.group, [(m.client_id, m.client_host, m.assignment) for m in rec.members])

    def _consumer_group_record(self, rec: decode.ConsumerGroupRecord, now_ms: int) -> None:
        """KIP-848 records: the group's existence and its members (kafka_consumergroup_members); the rest (target
        and current assignments by topic id, epochs) is decoded but not needed for Burrow's evaluation."""
        members = self.consumer_groups.setdefault(rec.group, {})
        if isinstance(rec, decode.ConsumerGroupMember):
            members[rec.member_id] = rec.client_id
        elif isinstance(rec, decode.ConsumerGroupTombstone):
            if rec.record == "ConsumerGroupMetadata":   # Kafka deletes the group's own record last
                del self.consumer_groups[rec.group]
                self.delete_group(rec.group, now_ms)
                return
            if rec.record == "ConsumerGroupMemberMetadata":
                members.pop(rec.member_id or "", None)
        else:
            return
        self.storage.members[rec.group] = len(members)

    def commit(self, group: str, topic: str, partition: int, offset: int, timestamp: int, order: int,
               now_ms: int) -> None:
        self.seen_topics.add(topic)
        self._record(now_ms, history.COMMIT, group, topic, partition, offset, order, timestamp)
        self.storage.add_commit(group, topic, partition, offset, timestamp, order, now_ms)

    def broker_offsets(self, offsets: dict[tuple[str, int], int], counts: dict[str, int], now_ms: int,
                       stable: dict[tuple[str, int], int] | None = None) -> None:
        """One log-end poll: {(topic, partition): offset}, {topic: partition count} and the Last Stable Offsets
        {(topic, partition): offset} of the same poll. The LSOs stay out of the history (a replay evaluates
        against the log end, Burrow's way)."""
        for (topic, partition), offset in sorted(offsets.items()):
            if self.sink:
                self.sink.broker(now_ms, history.BROKER_OFFSET, topic, partition, offset, counts[topic])
            self.storage.set_broker_offset(topic, partition, offset, now_ms, counts[topic])
        for (topic, partition), offset in sorted((stable or {}).items()):
            if topic in counts:
                self.storage.set_broker_offset(topic, partition, offset, now_ms, counts[topic], stable=True)

    def delete_topic(self, topic: str, now_ms: int) -> None:
        if self.sink:
            self.sink.broker(now_ms, history.TOPIC_DELETE, topic)
        self.storage.delete_topic(topic)
        self.evaluator.invalidate()

    def delete_group(self, group: str, now_ms: int, topic: str | None = None) -> bool:
        """Group tombstone or HTTP DELETE (of the whole group, or of one of its topics)."""
        if topic is None:
            self._record(now_ms, history.GROUP_DELETE, group)
            found = self.storage.delete_group(group)
        else:
            self._record(now_ms, history.GROUP_TOPIC_DELETE, group, topic)
            found = self.storage.delete_group_topic(group, topic)
        self.evaluator.invalidate(group)
        return found

    def _record(self, now_ms: int, kind: str, group: str, *rest) -> None:
        if self.sink:
            self.sink.commit(now_ms, kind, group, *rest)

    # ---------------------------------------------------------------- persistence

    def save(self) -> None:
        """Flush the history, then snapshot storage + read positions atomically (so a restart re-reads nothing)."""
        if self.sink:
            self.sink.flush()
        if not self.config.state_dir:
            return
        state = {"version": 1, "storage": self.storage.to_state(),
                 "positions": {str(p): o for p, o in self.positions.items()},
                 "consumer_groups": self.consumer_groups,
                 "seq": self.sink.seq if self.sink else 0}
        path = Path(self.config.state_dir) / SNAPSHOT
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, separators=(",", ":")))
        os.replace(tmp, path)

    def load_snapshot(self) -> bool:
        if not self.config.state_dir:
            return False
        path = Path(self.config.state_dir) / SNAPSHOT
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable snapshot %s: %s", path, e)
            return False
        self.storage.load_state(state["storage"])
        self.positions = {int(p): o for p, o in state["positions"].items()}
        self.consumer_groups = state.get("consumer_groups", {})   # absent from snapshots before Kafka 4 support
        self.seen_topics = set(self.storage.broker) | {t for g in self.storage.groups.values() for t in g.topics}
        if self.sink:
            self.sink.seq = state["seq"]
        log.info("restored %d groups and %d topics from %s", len(self.storage.groups), len(self.storage.broker),
                 path)
        return True
