"""The broker: wires configuration, metadata, logs, the group coordinator and the network server."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from broker.broker_configs import DEFAULT as DEFAULT_BROKER
from broker.broker_configs import PRODUCER_ID_EXPIRATION, dynamic_topic_defaults, dynamic_value
from broker.config import BrokerConfig, LogConfig
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.coordinator.transaction.broker_io import (
    BrokerMarkerWriter,
    PendingTxnOffsets,
    TxnStateTopicLog,
    read_keyed,
)
from broker.coordinator.transaction.coordinator import TXN_STATE_TOPIC, TransactionCoordinator
from broker.errors import ErrorCode, KafkaError
from broker.fetch_session import FetchManager, FetchSessionCache
from broker.fetch_session import register_metrics as register_fetch_session_metrics
from broker.log.dir_failure import LogDirFailureChannel
from broker.log.manager import LogManager
from broker.log.records import Record, build_batch
from broker.metadata import (
    OFFSETS_TOPIC,
    BrokerInfo,
    LocalMetadata,
    MetadataStore,
    TopicInfo,
    validate_topic_name,
)
from broker.network.client_security import configure_inter_broker
from broker.network.listener_reconfig import ListenerReconfiguration
from broker.network.listeners import ServerSecurity, registered_listeners
from broker.protocol.authz import AuthorizerMetrics, build_authorizer
from broker.protocol.routes import handler_table
from broker.purgatory import Purgatory
from broker.quota.connection_limits import ConnectionLimits, broker_creation_rate, listener_creation_rates
from broker.quota.manager import QuotaSettings
from broker.quota.replication import ReplicationQuotas, ReplicationQuotaSettings
from broker.quota.throttle import ClientQuotas
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ReplicaManager
from broker.server import KafkaServer
from common.clock import Clock, SystemClock

if TYPE_CHECKING:
    from broker.metrics import BrokerMetrics

log = logging.getLogger(__name__)


class ProducerIdManager:
    """Hands out producer ids from blocks claimed through the metadata (`MetadataStore.claim_producer_id_block`):
    standalone from a file, so ids never repeat across restarts; in cluster mode from ZooKeeper, so ids never
    repeat across brokers either."""

    BLOCK = 1000

    def __init__(self, claim_block: Callable[[int], int]) -> None:
        self._claim_block = claim_block
        self._next = self._block_end = 0

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._next = self._claim_block(self.BLOCK)
            self._block_end = self._next + self.BLOCK
        pid = self._next
        self._next += 1
        return pid


class OffsetsTopicLog:
    """The group coordinator's view of `__consumer_offsets`: keyed records appended as one batch."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], topic_stats: bool = True) -> None:
        """Appended as leader; followers replicate it like any partition (callers wait with `replicated`).

        Counted in BrokerTopicMetrics like a produce, as Kafka's coordinator appends go through
        ReplicaManager.appendRecords; `topic_stats` False for the cleanup tombstones, which Kafka writes to the
        partition directly (GroupMetadataManager.cleanupGroupMetadata), uncounted."""
        now = self._broker.clock.now_ms()
        batch = build_batch([Record(timestamp=now, key=k, value=v) for k, v in records])
        metrics = self._broker.metrics if topic_stats else None
        try:
            self._broker.replicas.append(OFFSETS_TOPIC, partition, batch, required_acks=1)
        except KafkaError as e:
            if metrics is not None:
                metrics.produce_failed(OFFSETS_TOPIC, e.code, len(batch))
            raise
        if metrics is not None:
            metrics.produced(OFFSETS_TOPIC, len(batch), len(records))

    async def replicated(self, partition: int) -> ErrorCode:
        """Until the high watermark passes what the coordinator appended so far (Kafka 4's CoordinatorRuntime:
        acks=1 appends, completed at the high watermark). NOT_ENOUGH_REPLICAS_AFTER_APPEND counts as written: the
        records are in every ISR member's log (the ISR is below min.insync.replicas)."""
        replicas = self._broker.replicas
        try:
            part = replicas.leader_partition(OFFSETS_TOPIC, partition)
        except KafkaError as e:
            return e.code
        error = await replicas.wait_for_replication(part, part.log.log_end_offset - 1,
                                                    self._broker.config.offsets_commit_timeout_ms / 1000)
        return ErrorCode.none if error == ErrorCode.not_enough_replicas_after_append else error

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        plog = self._broker.logs.get(OFFSETS_TOPIC, partition)
        # Transactional offsets count at their COMMIT marker; those of open transactions wait for theirs.
        return iter(()) if plog is None else read_keyed(plog, self._broker.txn_offsets.restore)


def _log_report_failure(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("offline replicas not reported to the controller: %r", done.exception())


def zookeeper_metadata(config: BrokerConfig, me: BrokerInfo) -> MetadataStore:
    """Cluster mode: the ZooKeeper client, the cluster-state cache and the controller's event queue are shared by
    the controller and the metadata store built here (imported here: a standalone broker needs no kazoo)."""
    from broker.controller.cache import MetadataCache
    from broker.controller.controller import Controller, ControllerSettings
    from broker.controller.events import ControllerEventQueue
    from broker.controller.store import ZkMetadata
    from broker.controller.zk_session import new_client

    zk = new_client(config.zookeeper_connect, config.zookeeper_session_timeout_ms)
    cache, events = MetadataCache(), ControllerEventQueue()
    controller = Controller(zk, cache, events, me.node_id, ControllerSettings.from_config(config))
    return ZkMetadata(zk, cache, events, controller, me, connect=config.zookeeper_connect,
                      cluster_id=config.cluster_id, session_timeout_ms=config.zookeeper_session_timeout_ms,
                      connection_timeout_ms=config.zookeeper_connection_timeout_ms)


class Broker:
    """A Kafka broker process: standalone, or a cluster member when `zookeeper.connect` is set."""

    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.node_id = config.broker_id if config.broker_id >= 0 else 0
        dirs = config.log_dir_list
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        adv = config.advertised
        self.advertised_host, self.advertised_port = adv.host, adv.port
        me = BrokerInfo(self.node_id, adv.host, adv.port, config.broker_rack or None, registered_listeners(config))
        self.metadata: MetadataStore = (zookeeper_metadata(config, me) if config.zookeeper_connect
                                        else LocalMetadata(dirs[0], me, config.cluster_id))
        self.authorizer = build_authorizer(config, self.metadata)  # None: no ACL checks (authorizer.class.name)
        # In a cluster a failed write takes its log dir offline, as in Kafka (log/dir_failure.py).
        self.log_dir_failures = LogDirFailureChannel(enabled=bool(config.zookeeper_connect))
        self.logs = LogManager(dirs, self.clock, self.log_config, config.log_cleaner_backoff_ms,
                               self.log_dir_failures)
        self.halt: Callable[[], None] = self._halt   # replaced by tests that run brokers in-process
        self.producer_ids = ProducerIdManager(self.metadata.claim_producer_id_block)
        self.purgatory = Purgatory()
        self.fetchers = ReplicaFetcherManager(config.broker_id, config, self._endpoint,
                                              ReplicaManager.on_follower_progress)
        configure_inter_broker(config, self.fetchers)  # inter.broker.listener.name: its endpoints, TLS and SASL
        self.replicas = ReplicaManager(config, self.clock, self.logs, self.metadata, self.purgatory, self.fetchers)
        self.group_coordinator = GroupCoordinator(config, self.clock, OffsetsTopicLog(self), self._topic_table,
                                                  self.metadata.group_configs)
        self.txn_offsets = PendingTxnOffsets()
        self.txn_markers = BrokerMarkerWriter(self, self._endpoint)
        self.txn_coordinator = TransactionCoordinator(config, self.clock, TxnStateTopicLog(self), self.txn_markers,
                                                      self.producer_ids.allocate)
        self.quotas = ClientQuotas(QuotaSettings(config.quota_window_num, float(config.quota_window_size_seconds)),
                                   self.clock)
        # The log config defaults set as dynamic broker configs: topic config name -> (value, source).
        self.dynamic_topic_defaults: dict[str, tuple[str, str]] = {}
        self.replication_quotas = ReplicationQuotas(
            config.broker_id, ReplicationQuotaSettings(config.replication_quota_window_num,
                                                       float(config.replication_quota_window_size_seconds)),
            self.clock, self._topic_configs)
        self.fetchers.quota = self.replication_quotas.follower
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        self.fetch_manager = FetchManager(self.fetch_sessions)
        self.replicas.role_listeners.append(self._on_role_change)
        security = ServerSecurity(config, self.metadata.scram_credentials())
        self.quotas.connections.add_listeners([spec.name for spec in security.listeners])
        handlers = handler_table(sasl=any(spec.sasl for spec in security.listeners))
        self.metrics = None
        self.authorizer_metrics: AuthorizerMetrics | None = None
        if config.prometheus_listener or config.hdr_log_dir:
            from broker.metrics import BrokerMetrics
            from broker.metrics.quotas import register_quota_metrics, register_replication_metrics

            self.metrics = BrokerMetrics(self, handlers)
            self.replicas.on_isr_change = self.metrics.isr_changed
            register_fetch_session_metrics(self.metrics.registry, self.fetch_sessions)
            register_quota_metrics(self.metrics.registry, self.quotas.managers, self.quotas.connections)
            register_replication_metrics(self.metrics.registry, self.replication_quotas)
            if self.authorizer is not None:
                self.authorizer_metrics = AuthorizerMetrics(self.metrics.registry, self.authorizer)
        self.server = KafkaServer(self, handlers, security, self.metrics, self.metrics)
        self.listener_reconfig = ListenerReconfiguration(config, security, self.fetchers)
        self._tasks: list[asyncio.Task] = []

    @property
    def clustered(self) -> bool:
        return self.metadata.clustered

    def _topic_table(self) -> dict[str, tuple[uuid.UUID, int]]:
        """Every topic's (id, partition count), for the consumer-protocol group records (KIP-848)."""
        return {name: (info.topic_id, info.partitions) for name, info in self.metadata.topics().items()}

    def _topic_configs(self, topic: str) -> dict[str, str] | None:
        info = self.metadata.topic(topic)
        return None if info is None else info.configs

    def _apply_broker_configs(self, entity: str | None = None) -> None:
        """A dynamic broker config changed (any broker's or the default, as Kafka's BrokerConfigHandler updates
        the replication bounds on each); at start, only when one is stored."""
        store = self.metadata.broker_configs()
        own, default = store.get(str(self.node_id)), store.get(DEFAULT_BROKER)
        if entity is not None or own or default:
            self.replication_quotas.apply(own, default)
        if entity in (None, str(self.node_id)):
            self.listener_reconfig.on_change(own)
        layers, names = [own, default, self.config.static], self.listener_names()
        self.quotas.connections.broker_bound = broker_creation_rate(layers)
        self.quotas.connections.set_listener_bounds(listener_creation_rates(layers, names))
        self.server.apply_connection_limits(ConnectionLimits.of(layers, names))
        dynamic = dynamic_topic_defaults(own, default)
        if dynamic != self.dynamic_topic_defaults:   # DynamicLogConfig: every log without its own value follows
            self.dynamic_topic_defaults = dynamic
            for topic in {plog.topic for plog in self.logs.logs()}:
                self.logs.update_config(topic)

    def listener_names(self) -> list[str]:
        """The configured listeners' names, the registered (first) one first."""
        return [spec.name for spec in self.server.security.listeners]

    def _endpoint(self, node_id: int) -> tuple[str, int] | None:
        """A live broker's (host, port), for the replica fetchers."""
        b = next((b for b in self.metadata.brokers() if b.node_id == node_id), None)
        if b is None:
            return None
        return b.endpoint(self.fetchers.inter_broker_listener) or (b.host, b.port)

    # ------------------------------------------------------------ topics and logs

    def log_config(self, topic: str) -> LogConfig:
        info = self.metadata.topic(topic)
        return self.config.log_config(info.configs if info else None, self.dynamic_topic_defaults)

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None,
                     assignment: dict[int, tuple[int, ...]] | None = None) -> TopicInfo:
        """Register the topic; its replicas appear as the partition states arrive (at once standalone).
        `assignment` (partition -> replicas) replaces the partition count and replication factor."""
        if assignment:
            partitions, replication_factor = len(assignment), len(next(iter(assignment.values())))
        return self.metadata.create_topic(
            name,
            self.config.num_partitions if partitions in (None, -1) else partitions,
            self.config.default_replication_factor if replication_factor in (None, -1) else replication_factor,
            configs or {},
            assignment,
        )

    def auto_create(self, name: str) -> TopicInfo | None:
        """Metadata/Produce auto-creation (auto.create.topics.enable)."""
        if not self.config.auto_create_topics_enable:
            return None
        validate_topic_name(name)
        return self.create_topic(name, replication_factor=min(self.config.default_replication_factor,
                                                              len(self.metadata.brokers())))

    def delete_topic(self, name: str) -> None:
        self.metadata.delete_topic(name)

    def add_partitions(self, name: str, total: int, assignment: dict[int, tuple[int, ...]] | None = None) -> None:
        self.metadata.add_partitions(name, total, assignment)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.metadata.set_topic_configs(name, configs)  # the listener applies them to the logs

    def ensure_offsets_topic(self) -> bool:
        """Create `__consumer_offsets` once enough brokers are alive for its replication factor (Kafka does
        this on the first FindCoordinator). False while that is not yet possible."""
        return self._ensure_internal_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
                                           self.config.offsets_topic_replication_factor,
                                           "offsets.topic.replication.factor", {})

    def ensure_txn_state_topic(self) -> bool:
        """Create `__transaction_state` as Kafka does on the first FindCoordinator for a transactional id: its
        replication factor is transaction.state.log.replication.factor (1 lets a standalone broker work, as in
        Kafka), min.insync.replicas transaction.state.log.min.isr."""
        rf = self.config.transaction_state_log_replication_factor if self.clustered else 1
        # A min ISR above the replication factor (a standalone broker's one replica) is capped when written to, as
        # Kafka's Partition.effectiveMinIsr caps it (replica_manager.effective_min_isr).
        return self._ensure_internal_topic(TXN_STATE_TOPIC, self.config.transaction_state_log_num_partitions,
                                           rf, "transaction.state.log.replication.factor",
                                           {"min.insync.replicas": str(self.config.transaction_state_log_min_isr)})

    def _ensure_internal_topic(self, name: str, partitions: int, replication_factor: int, rf_key: str,
                               configs: dict[str, str]) -> bool:
        if self.metadata.topic(name) is not None:
            return True
        live = len(self.metadata.brokers())
        rf = replication_factor if self.clustered else 1
        if live < rf:
            log.info("not creating %s yet: %d live brokers < %s %d", name, live, rf_key, rf)
            return False
        try:
            self.create_topic(name, partitions, rf, {"cleanup.policy": "compact",
                                                     "segment.bytes": str(100 * 1024 * 1024), **configs})
        except KafkaError as e:
            if e.code != ErrorCode.topic_already_exists:
                raise
        return True

    def _on_role_change(self, topic: str, partition: int, is_leader: bool) -> None:
        """The group coordinator serves the groups of the offsets partitions this broker leads, the transaction
        coordinator the ids of the `__transaction_state` partitions (its coordinator epoch: the leader epoch)."""
        if topic == TXN_STATE_TOPIC:
            if is_leader:
                self.txn_coordinator.load_partition(partition, self.replicas.partition(topic, partition).state
                                                    .leader_epoch)
            else:
                self.txn_coordinator.unload_partition(partition)
            return
        if topic != OFFSETS_TOPIC:
            return
        if is_leader:
            self.group_coordinator.load_partition(partition)
        else:
            self.group_coordinator.unload_partition(partition)

    # ------------------------------------------------------------ lifecycle

    async def start(self, listen: bool = True) -> int:
        """Recover logs, join the cluster (or load standalone metadata), start listening; returns the port.
        listen=False opens no socket (port 0): an in-process harness hands `server` its own connections."""
        loop_start = self.clock.monotonic()
        loop = asyncio.get_running_loop()
        self.log_dir_failures.listeners.append(lambda d: loop.call_soon_threadsafe(self._log_dir_failed, d))
        self.logs.load_all()
        self.metadata.start(self.replicas)
        self.quotas.subscribe_to(self.metadata.client_quotas())
        self.metadata.broker_configs().subscribe(self._apply_broker_configs)
        self._apply_broker_configs()
        if not self.clustered:
            self.ensure_offsets_topic()
        self.logs.start()
        if self.metrics is not None:
            self._observe(self.metrics)
            await self.metrics.start()  # before the Kafka port opens, so /metrics is up once clients can connect
        port = await self.server.start() if listen else 0
        self._tasks.append(asyncio.create_task(self.group_coordinator.run(), name="group-coordinator"))
        self._tasks.append(asyncio.create_task(self._retention_loop(), name="log-retention"))
        self._tasks.append(asyncio.create_task(self._txn_timers(), name="transaction-timers"))
        self._tasks.append(asyncio.create_task(self.replicas.run(), name="isr-check"))
        self._tasks.append(asyncio.create_task(self._expire_quota_sensors(), name="quota-sensor-expiry"))
        self._tasks.append(asyncio.create_task(self._expire_producers(), name="producer-id-expiration"))
        log.info("broker %d started on port %d in %.2fs (%d partitions)", self.node_id, port,
                 self.clock.monotonic() - loop_start, len(self.logs.partitions()))
        return port

    async def _expire_quota_sensors(self, every_s: float = 30.0) -> None:
        """Drop quota sensors idle for an hour, checked every 30 s (Kafka's Metrics expiration thread)."""
        while True:
            await asyncio.sleep(every_s)
            self.quotas.expire()
            self.replication_quotas.expire()

    async def _expire_producers(self) -> None:
        """producer.id.expiration.ms (dynamic) checked at start and every producer.id.expiration.check.interval.ms,
        as Kafka's LogManager does."""
        while True:
            expiration = int(dynamic_value(self.metadata.broker_configs(), self.node_id, PRODUCER_ID_EXPIRATION)
                             or self.config.producer_id_expiration_ms)
            removed = self.logs.remove_expired_producers(self.clock.now_ms(), expiration)
            if removed:
                log.info("Removed %d expired producer ids (producer.id.expiration.ms=%d)", removed, expiration)
            await asyncio.sleep(self.config.producer_id_expiration_check_interval_ms / 1000)

    def _log_dir_failed(self, log_dir: Path) -> None:
        """A log dir went offline: its replicas go offline here and the controller is told, so it moves their
        leaderships (Kafka's ReplicaManager.handleLogDirFailure and log dir event). With every log dir offline the
        broker halts (Kafka's LogManager.handleLogDirFailure): the controller moves all its leaderships."""
        self.replicas.on_log_dir_failure(log_dir)
        dirs = self.config.log_dir_list
        if self.log_dir_failures.all_offline(dirs):
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(map(str, dirs)))
            self.halt()
            return
        offline = sorted(self.replicas.offline)   # the controller moves their leaderships (Kafka: log dir event)
        task = asyncio.get_running_loop().run_in_executor(None, self.metadata.report_offline_replicas, offline)
        task.add_done_callback(_log_report_failure)

    def _halt(self) -> None:
        """Exit at once, as Kafka's Exit.halt(1): no controlled shutdown, no log flush (the disk failed). The
        ZooKeeper session is closed first, bounded, so the controller elects new leaders now rather than after
        zookeeper.session.timeout.ms."""
        closer = threading.Thread(target=self.metadata.close, name="halt-zk-close", daemon=True)
        closer.start()
        closer.join(timeout=5.0)
        logging.shutdown()
        os._exit(1)

    def _observe(self, metrics: BrokerMetrics) -> None:
        """Hand the metrics the components' public hooks; they read nothing else of them."""
        self.fetchers.on_bytes_in = metrics.on_replication_bytes_in
        self.fetchers.on_fetch_request = metrics.fetcher_metrics.on_fetch_request
        metrics.watch_fetchers(self.fetchers)
        self.metadata.set_leader_election_hook(metrics.cluster.on_leader_election)
        if self.clustered:
            from broker.controller.store import ZkMetadata

            assert isinstance(self.metadata, ZkMetadata)
            metrics.cluster.watch_zookeeper(self.metadata.zk)  # connected by metadata.start

    async def _retention_loop(self) -> None:
        interval = self.config.log_retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.logs.run_retention()
            except Exception:
                log.exception("retention check failed")

    async def _txn_timers(self) -> None:
        """Abort timed-out transactions and expire idle transactional ids at Kafka's two intervals."""
        cfg = self.config
        abort_s = cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000
        remove_every = max(1, cfg.transaction_remove_expired_transaction_cleanup_interval_ms
                           // cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms)
        ticks = 0
        while True:
            await asyncio.sleep(abort_s)
            ticks += 1
            try:
                await self.txn_coordinator.abort_timed_out()
                if ticks % remove_every == 0:
                    await self.txn_coordinator.remove_expired()
            except Exception:
                log.exception("transaction timers failed")

    async def stop(self) -> None:
        """Controlled shutdown: leadership moves to other brokers before this one stops serving. Each phase's
        time is logged (issue 20: where a shutdown at thousands of partitions spends its seconds)."""
        phases: list[tuple[str, float]] = []
        mark = self.clock.monotonic()

        def done(phase: str) -> None:
            nonlocal mark
            now = self.clock.monotonic()
            phases.append((phase, now - mark))
            mark = now
        if self.config.controlled_shutdown_enable:  # standalone: returns at once
            try:
                await self.metadata.controlled_shutdown(timeout_s=30)
            except Exception:
                log.exception("controlled shutdown failed; stopping anyway")
            done("controlled shutdown")
        await self.server.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        done("server and tasks")
        self.fetchers.stop()
        done("fetchers")
        self.metadata.close()
        done("metadata")
        self.group_coordinator.close()
        done("group coordinator")
        self.logs.close()
        done("logs")
        log.info("broker %d stopped in %.2fs (%s)", self.node_id, sum(s for _, s in phases),
                 ", ".join(f"{name} {s:.2f}s" for name, s in phases))
