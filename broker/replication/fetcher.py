"""Follower side of replication: one fetcher per leader broker pulls every partition this broker follows
from it with the Fetch API (replica id set), after truncating to the leader's epoch boundary (KIP-101)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from broker.errors import ErrorCode, KafkaError
from broker.replication.client import Answer, BrokerConnection, decode_response
from broker.replication.fetch_request import FETCH, FETCH_VERSION, encode_follower_fetch
from broker.replication.fetch_session_handler import FetchPlan, FetchSessionHandler
from common.log_budget import LogBudget

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.network.client_security import ClientSecurity
    from broker.quota.replication import ReplicationQuota
    from broker.replication.replica_manager import Partition

log = logging.getLogger(__name__)
OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION = 23, 4
_RETRIABLE_PARTITION_ERRORS = {ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch,
                               ErrorCode.unknown_leader_epoch, ErrorCode.unknown_topic_or_partition}


@dataclass
class FetchTarget:
    partition: Partition
    leader_epoch: int
    truncated: bool = False
    leader_high_watermark: int = -1


def _in_sync(target: FetchTarget) -> bool:
    """PartitionFetchState.isReplicaInSync: the last answer's high watermark reached by our log (no lag)."""
    return 0 <= target.leader_high_watermark <= target.partition.log.log_end_offset


class ReplicaFetcher:
    """Replicates the partitions led by one broker; a task that lives while there is something to follow."""

    def __init__(self, manager: ReplicaFetcherManager, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.targets: dict[tuple[str, int], FetchTarget] = {}
        self._conn: BrokerConnection | None = None
        self.session = FetchSessionHandler()  # KIP-227, as Kafka's followers fetch
        self._append_failures = LogBudget()
        self.endpoint: tuple[str, int] | None = None  # the leader's (host, port) once connected
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replica-fetcher-{leader_id}")

    def add(self, part: Partition, leader_epoch: int) -> None:
        self.targets[(part.topic, part.index)] = FetchTarget(part, leader_epoch)
        self._changed.set()

    def remove(self, key: tuple[str, int]) -> None:
        self.targets.pop(key, None)

    def reconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def stop(self) -> None:
        self._task.cancel()
        self.reconnect()

    async def _connection(self) -> BrokerConnection:
        if self._conn is None or not self._conn.connected:
            endpoint = self.manager.endpoint(self.leader_id)
            if endpoint is None:
                raise ConnectionError(f"broker {self.leader_id} is not registered")
            conn = BrokerConnection(*endpoint, f"replica-fetcher-{self.manager.broker_id}",
                                    self.manager.client_security)
            await conn.connect(timeout_s=5)
            self.session.reset()  # a new connection may be to a restarted leader: open a new session
            self._conn = conn
            self.endpoint = endpoint
        return self._conn

    async def _run(self) -> None:
        backoff = self.manager.config.replica_fetch_backoff_ms / 1000
        while True:
            if not self.targets:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                conn = await self._connection()
                await self._truncate(conn)
                if not await self._fetch(conn):
                    await asyncio.sleep(backoff)
            except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as e:
                log.info("fetcher for broker %d: %s; retrying", self.leader_id, e)
                self.reconnect()
                await asyncio.sleep(backoff)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("fetcher for broker %d failed; retrying", self.leader_id)
                self.reconnect()
                await asyncio.sleep(backoff)

    async def _truncate(self, conn: BrokerConnection) -> None:
        pending = [t for t in self.targets.values() if not t.truncated]
        if not pending:
            return
        topics: dict[str, list[dict]] = {}
        for t in pending:
            topics.setdefault(t.partition.topic, []).append({
                "partition": t.partition.index, "current_leader_epoch": t.leader_epoch,
                "leader_epoch": t.partition.log.leader_epochs.latest_epoch})
        resp = await conn.request(OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, {
            "replica_id": self.manager.broker_id,
            "topics": [{"topic": name, "partitions": parts} for name, parts in topics.items()]},
            timeout_s=30)
        for topic in resp.topics:
            for p in topic.partitions:
                target = self.targets.get((topic.topic, p.partition))
                if target is None or target.truncated or p.error_code != ErrorCode.none:
                    continue
                plog = target.partition.log
                if p.leader_epoch < 0:
                    offset = plog.high_watermark  # the leader knows no epoch of ours: keep what was committed
                else:
                    mine, my_end = plog.end_offset_for_epoch(p.leader_epoch)
                    offset = min(p.end_offset, my_end) if mine == p.leader_epoch else p.end_offset
                if offset < plog.log_end_offset:
                    log.info("truncating %s-%d from %d to %d (leader epoch %d)", topic.topic, p.partition,
                             plog.log_end_offset, offset, target.leader_epoch)
                    plog.truncate_to(offset)
                target.truncated = True

    async def _fetch(self, conn: BrokerConnection) -> bool:
        """Fetch round trips while they bring something: each answer is applied, and the next Fetch sent, inside
        the connection's `data_received` (BrokerConnection.send_then), as Kafka's ReplicaFetcherThread loops in a
        thread of its own; no task resumes between them. Back to the task when a partition waits for its
        truncation; False when nothing could be fetched (back off)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        timeout_s = self.manager.config.replica_fetch_wait_max_ms / 1000 + 30
        late = f"no Fetch answer from broker {self.leader_id} in {timeout_s} s"

        def send(chained: bool) -> bool:
            """Send the next Fetch for the truncated partitions; False when there are none or, `chained`, when one
            waits for its truncation (the task truncates, then fetches again)."""
            ready = [t for t in self.targets.values() if t.truncated]
            if not ready or (chained and len(ready) != len(self.targets)):
                return False
            targets = self.manager.unthrottled(ready)
            if not targets:   # every one held by the replication throttle: back off, as Kafka with no fetch to send
                return False
            plan, frame, correlation_id = self._request(conn, targets)
            timer = loop.call_later(timeout_s, expired, plan, correlation_id)
            conn.send_then(frame, partial(answered, plan, correlation_id, timer))
            return True

        def expired(plan: FetchPlan, correlation_id: int) -> None:
            answered(plan, correlation_id, None, TimeoutError(late))

        def answered(plan: FetchPlan, correlation_id: int, timer: asyncio.TimerHandle | None, answer: Answer) -> None:
            if timer is not None:
                timer.cancel()
            if done.done():   # the task moved on (timed out, cancelled); the connection is being replaced
                return
            self.manager.on_fetch_request(self)   # counted answered or not, as Kafka's fetcherStats.requestRate
            try:
                progressed = self._apply(plan, decode_response(answer, correlation_id, FETCH, FETCH_VERSION))
                if not (progressed and send(chained=True)):
                    done.set_result(progressed)
            except Exception as e:   # never into data_received: the task decides (reconnect, back off)
                done.set_exception(e)

        if not send(chained=False):
            return False
        return await done

    def _request(self, conn: BrokerConnection, targets: list[FetchTarget]) -> tuple[FetchPlan, bytes, int]:
        """The next Fetch for `targets`: its session plan, frame and correlation id."""
        cfg = self.manager.config
        wanted = {(t.partition.topic, t.partition.index): (
            t.partition.index, t.leader_epoch, t.partition.log.log_end_offset, t.partition.log.log_start_offset,
            cfg.replica_fetch_max_bytes) for t in targets}
        plan = self.session.plan(wanted)
        correlation_id = conn.next_correlation_id()
        frame = encode_follower_fetch(correlation_id, conn.client_id, self.manager.broker_id,
                                      cfg.replica_fetch_wait_max_ms, 1, cfg.replica_fetch_response_max_bytes,
                                      plan.topics, plan.session_id, plan.epoch, plan.forgotten)
        return plan, frame, correlation_id

    def _apply(self, plan: FetchPlan, resp) -> bool:
        """Append what a Fetch answer brought; False when every partition it named failed (back off)."""
        if not self.session.on_response(plan, resp.error_code, resp.session_id):
            log.info("fetch session with broker %d: %s; fetching in full", self.leader_id,
                     ErrorCode(resp.error_code).name)
            return True  # no backoff: the full fetch that follows cannot fail this way
        # An incremental answer without partitions is "nothing new yet" (the long poll ran out): fetch again at once,
        # as a sessionless answer of unchanged partitions did. Back off only when every named partition failed.
        progressed = not resp.responses
        for topic in resp.responses:
            for p in topic.partitions:
                target = self.targets.get((topic.topic, p.partition_index))
                if target is None:
                    continue
                part = target.partition
                if p.error_code == ErrorCode.none:
                    if p.records:
                        try:
                            part.log.append_as_follower(p.records)
                        except KafkaError as e:   # a full disk fails every round: a budget, not a line each
                            if (left_out := self._append_failures.take()) is not None:
                                log.warning("%s-%d: follower append failed: %s%s", part.topic, part.index, e,
                                            f" ({left_out} such failures not logged before)" if left_out else "")
                            target.truncated = False
                            continue
                        self.manager.on_bytes_in(part.topic, part.index, len(p.records))
                    self.manager.record_throttled(part, len(p.records or b""))
                    target.leader_high_watermark = p.high_watermark
                    self.manager.on_progress(part, p.high_watermark)
                    if p.log_start_offset > part.log.log_start_offset:  # DeleteRecords/retention on the leader
                        part.log.delete_records_before(min(p.log_start_offset, part.log.high_watermark))
                    progressed = True
                elif p.error_code == ErrorCode.offset_out_of_range:
                    self._out_of_range(target, p.log_start_offset)
                elif p.error_code not in _RETRIABLE_PARTITION_ERRORS:
                    log.warning("%s-%d: fetch from broker %d failed: %s", part.topic, part.index,
                                self.leader_id, ErrorCode(p.error_code).name)
        return progressed

    def _out_of_range(self, target: FetchTarget, leader_log_start: int) -> None:
        plog = target.partition.log
        if plog.log_end_offset < leader_log_start:
            log.info("%s-%d is behind the leader's log start %d; restarting the replica there",
                     target.partition.topic, target.partition.index, leader_log_start)
            plog.truncate_fully_and_start_at(leader_log_start)
        else:
            target.truncated = False  # ahead of the leader: truncate again by epoch


class ReplicaFetcherManager:
    """One ReplicaFetcher per leader broker (Kafka's ReplicaFetcherManager with num.replica.fetchers=1).

    Built with what the fetchers need and nothing more: this broker's id, the replica.fetch.* settings, a lookup
    of a broker's (host, port), and `on_progress(partition, leader_high_watermark)` after every fetched
    partition (the follower's high watermark rule, ReplicaManager.on_follower_progress)."""

    def __init__(self, broker_id: int, config: BrokerConfig, endpoint: Callable[[int], tuple[str, int] | None],
                 on_progress: Callable[[Partition, int], None]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.endpoint = endpoint
        self.on_progress = on_progress
        self.client_security: ClientSecurity | None = None  # the inter-broker listener's TLS/SASL, if any
        self.inter_broker_listener = "PLAINTEXT"  # whose endpoints the fetchers connect to
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[tuple[str, int], int] = {}
        # Bytes of every batch appended as follower (the metrics set it: ReplicationBytesInPerSec).
        self.on_bytes_in: Callable[[str, int, int], None] = lambda topic, partition, n: None
        # Every Fetch a fetcher sends (the metrics set it: FetcherStats RequestsPerSec, MinFetchRate).
        self.on_fetch_request: Callable[[ReplicaFetcher], None] = lambda fetcher: None
        self.quota: ReplicationQuota | None = None   # the follower side's replication throttle (the broker's)

    def unthrottled(self, targets: list[FetchTarget]) -> list[FetchTarget]:
        """The targets to fetch now: a throttled replica that has not reached the leader's high watermark waits
        while the follower side is over its rate (RemoteLeaderEndPoint.shouldFollowerThrottle)."""
        quota = self.quota
        if quota is None:
            return targets
        return [t for t in targets if _in_sync(t) or not quota.is_throttled(t.partition.topic, t.partition.index)
                or not quota.is_quota_exceeded()]

    def record_throttled(self, part: Partition, nbytes: int) -> None:
        """Count a fetched partition's bytes against the follower side's rate when it is throttled, in sync or not
        (ReplicaFetcherThread.processPartitionData)."""
        quota = self.quota
        if quota is not None and quota.is_throttled(part.topic, part.index):
            quota.record(nbytes)

    def follow(self, part: Partition, leader_id: int, leader_epoch: int) -> None:
        key = (part.topic, part.index)
        self.unfollow(key)
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self._fetchers[leader_id] = ReplicaFetcher(self, leader_id)
        fetcher.add(part, leader_epoch)
        self._leader_of[key] = leader_id

    def unfollow(self, key: tuple[str, int]) -> None:
        leader_id = self._leader_of.pop(key, None)
        if leader_id is not None and leader_id in self._fetchers:
            self._fetchers[leader_id].remove(key)

    def on_brokers_changed(self) -> None:
        for fetcher in self._fetchers.values():
            fetcher.reconnect()

    def max_lag(self) -> int:
        """ReplicaFetcherManager MaxLag: the largest lag over every followed partition, a partition's lag being
        max(0, leader high watermark - our log end offset) as AbstractFetcherThread sets it; 0 with none, never
        negative (a follower is often ahead of the high watermark the leader last told it)."""
        return max((max(0, t.leader_high_watermark - t.partition.log.log_end_offset)
                    for f in self._fetchers.values() for t in f.targets.values()), default=0)

    def active(self) -> list[ReplicaFetcher]:
        """The fetchers following something (Kafka shuts the others down)."""
        return [f for f in self._fetchers.values() if f.targets]

    def stop(self) -> None:
        for fetcher in self._fetchers.values():
            fetcher.stop()
        self._fetchers.clear()
