"""`ZkMetadata`: the cluster-mode MetadataStore, backed by ZooKeeper through kazoo.

Its parts, each in its own module: the `MetadataCache` (cache.py) it shares with the controller, the
`ZkWatcher` (watches.py) that keeps that cache in step with ZooKeeper, the controller (controller.py) and its
event queue (events.py). The broker builds the client, the cache, the queue and the controller, and hands
them over here; this class joins the cluster (zk_session.py), answers the MetadataStore calls and writes
what a broker may write itself (topics, configs, its own ISRs, reassignment requests).

Threads:
- the broker's event loop calls the MetadataStore methods; reads come from the cache and never block;
  writes (create/delete topic, add partitions, configs, update_isr) are short synchronous ZooKeeper calls
  with a bounded wait;
- kazoo's callback thread runs the watches and the session listener: they only update the cache and queue
  controller events;
- the controller runs on its own thread and writes leaders/ISRs with conditional updates fenced by the
  /controller_epoch version.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.broker_configs import ZkBrokerConfigs, dynamic_unclean_default
from broker.config_entity import ConfigChangeListener
from broker.controller import zk_paths as zp
from broker.controller.acl_watch import ZkAclStorage
from broker.controller.assignment import assign_new_partitions, assign_replicas, validate_manual_assignment
from broker.controller.cache import MetadataCache
from broker.controller.controller import Controller
from broker.controller.events import ControllerEventQueue
from broker.controller.reassignment import alter_reassignments
from broker.controller.state import NO_LEADER, ClusterListener, PartitionState
from broker.controller.watches import ZkWatcher, refresh_topic
from broker.controller.zk_session import ensure_chroot, init_cluster_id, register_broker
from broker.errors import ErrorCode, KafkaError
from broker.metadata import BrokerInfo, PartitionResults, Reassignments, TopicInfo, validate_topic_name
from broker.quota.store import ZkClientQuotas
from broker.scram_storage import ZkScramCredentials

log = logging.getLogger(__name__)


class ZkMetadata:
    """Cluster metadata in ZooKeeper (Kafka's layout, see zk_paths.py); implements MetadataStore."""

    clustered = True

    def __init__(self, zk: KazooClient, cache: MetadataCache, events: ControllerEventQueue, controller: Controller,
                 me: BrokerInfo, *, connect: str, cluster_id: str = "", session_timeout_ms: int = 18_000,
                 connection_timeout_ms: int | None = None, write_timeout_s: float = 10.0) -> None:
        """`zk`: a client for `connect` (chroot included), not yet started (zk_session.new_client)."""
        self.me = me
        self.connect = connect
        self.cache = cache
        self.events = events
        self.controller = controller
        self._zk = zk
        self._watcher = ZkWatcher(zk, cache, events)
        self._acls = ZkAclStorage(zk)
        self._config_changes = ConfigChangeListener(zk)   # one watch of /config/changes for SCRAM, quotas, brokers
        self._scram = ZkScramCredentials(zk, self._config_changes)
        self._quotas = ZkClientQuotas(zk, self._config_changes)
        self._broker_configs = ZkBrokerConfigs(zk, self._config_changes)
        # A dynamic unclean.leader.election.enable (this broker's, else the cluster default's) is the controller's
        # broker default; any broker config change asks it to reconcile, as Kafka's DynamicLogConfig enables
        # the default unclean election at once (enableDefaultUncleanLeaderElection).
        controller.unclean_default = partial(dynamic_unclean_default, self._broker_configs, me.node_id,
                                             controller.settings.unclean_leader_election_enable)
        self._broker_configs.subscribe(lambda entity: controller.enqueue("broker_config", entity))
        self._session_timeout_s = session_timeout_ms / 1000
        self._connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        self._write_timeout_s = write_timeout_s
        self._wanted_cluster_id = cluster_id
        self.cluster_id = cluster_id
        self._connected = False
        self._session_lost = False
        self._closed = False
        self._offline_replicas: list[tuple[str, int]] = []   # what report_offline_replicas last wrote

    @property
    def controller_id(self) -> int:
        return self.cache.controller_id

    @property
    def zk(self) -> KazooClient:
        return self._zk

    # ------------------------------------------------------------ connection

    def connect_zk(self) -> None:
        """Connect (creating the chroot if missing), create the persistent paths and /cluster/id. Blocking."""
        if self._connected:
            return
        ensure_chroot(self.connect, self._session_timeout_s, self._connection_timeout_s)
        zk = self._zk
        zk.add_listener(self._on_connection_state)
        zk.start(timeout=self._connection_timeout_s)
        self._connected = True
        for path in zp.PERSISTENT_PATHS:
            zk.ensure_path(path)
        self.cluster_id = init_cluster_id(zk, self._wanted_cluster_id, self.connect)

    def _on_connection_state(self, state: str) -> None:
        # Runs on kazoo's connection thread: never block here.
        if state == KazooState.LOST:
            log.warning("broker %d: ZooKeeper session lost", self.me.node_id)
            self._session_lost = True
            self.events.put("resign")
        elif state == KazooState.SUSPENDED:
            log.warning("broker %d: ZooKeeper connection suspended; serving from the cache", self.me.node_id)
        elif state == KazooState.CONNECTED and self._session_lost and not self._closed:
            self._session_lost = False
            threading.Thread(target=self._after_new_session, name=f"zk-reregister-{self.me.node_id}",
                             daemon=True).start()

    def _after_new_session(self) -> None:
        try:
            register_broker(self.zk, self.me, deadline_s=self._session_timeout_s * 2)
            log.info("broker %d re-registered after session expiry", self.me.node_id)
            if self._offline_replicas:   # the ephemeral report went with the old session
                self.report_offline_replicas(self._offline_replicas)
        except Exception:
            log.exception("broker %d: re-registration failed", self.me.node_id)
        self.events.put("elect")

    def report_offline_replicas(self, partitions: list[tuple[str, int]]) -> None:
        """An ephemeral /admin/offline_replicas/<id> (zk_paths.py): the controller takes these replicas as
        offline until this broker's session ends, as Kafka's controller does after a log dir event."""
        self._offline_replicas = sorted(partitions)
        path, body = zp.offline_replicas_path(self.me.node_id), zp.encode_offline_replicas(self.me.node_id,
                                                                                          self._offline_replicas)
        try:
            self.zk.create(path, body, ephemeral=True, makepath=True)
        except NodeExistsError:
            self.zk.set(path, body)

    # ------------------------------------------------------------ lifecycle (MetadataStore)

    def start(self, listener: ClusterListener) -> None:
        """Register this broker, load the cluster state into the cache (blocking, at startup), start the
        watches and the controller thread. Call from the event loop: listener calls are delivered there."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self.cache.attach(listener, loop)
        self.connect_zk()
        register_broker(self.zk, self.me, deadline_s=self._session_timeout_s + 5)
        self._watcher.start()
        self._acls.start()
        self._config_changes.snapshot()   # before loading: a change made meanwhile is delivered after
        self._scram.load()
        self._quotas.load(loop)
        self._broker_configs.load(loop)
        self._config_changes.watch()
        self.controller.start()

    def acl_storage(self) -> ZkAclStorage:
        """The ACLs in /kafka-acl[-extended], loaded by `start` and kept current by change notifications."""
        return self._acls

    def scram_credentials(self) -> ZkScramCredentials:
        """SCRAM credentials under /config/users, loaded by `start` and kept current by change notifications."""
        return self._scram

    def client_quotas(self) -> ZkClientQuotas:
        """Quota configs under /config/users and /config/clients, loaded by `start`, kept current by notifications."""
        return self._quotas

    def broker_configs(self) -> ZkBrokerConfigs:
        """Dynamic broker configs under /config/brokers, loaded by `start`, kept current by notifications."""
        return self._broker_configs

    def close(self) -> None:
        """Stop the controller and close the session (our ephemeral znodes disappear at once)."""
        if self._closed:
            return
        self._closed = True
        self.controller.stop()
        if self._connected:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                log.exception("closing the ZooKeeper client")

    def set_leader_election_hook(self, hook: Callable[[float, bool], None]) -> None:
        self.controller.on_leader_election = hook

    # ------------------------------------------------------------ reads (cache)

    def brokers(self) -> list[BrokerInfo]:
        return self.cache.brokers()

    def live_broker_ids(self) -> set[int]:
        return self.cache.live_broker_ids()

    def topics(self) -> dict[str, TopicInfo]:
        return self.cache.topics()

    def topic(self, name: str) -> TopicInfo | None:
        return self.cache.topic(name)

    def topic_generation(self, name: str) -> int:
        return self.cache.topic_generation(name)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        return self.cache.partition_state(topic, partition)

    def assignment(self, topic: str) -> zp.TopicAssignment | None:
        return self.cache.assignment(topic)

    def assignments(self) -> dict[str, zp.TopicAssignment]:
        return self.cache.assignments()

    def partition_states(self) -> dict[tuple[str, int], PartitionState]:
        return self.cache.partition_states()

    def shutting_down_brokers(self) -> set[int]:
        return self.cache.shutting_down_brokers()

    def offline_replicas(self) -> dict[tuple[str, int], set[int]]:
        return self.cache.offline_replicas()

    def reassignments(self) -> Reassignments:
        return self.cache.reassignments()

    def adding_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        return self.cache.adding_replicas(topic, partition)

    # ------------------------------------------------------------ writes (short, synchronous)

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str],
                     assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo:
        """Write /config/topics/<t> and /brokers/topics/<t> (one transaction); the controller then elects the
        leaders (`wait_online`). `assignment` is an explicit replica assignment (CreateTopics assignments)."""
        validate_topic_name(name)
        if self.topic(name) is not None:
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        racks = self.cache.live_racks()
        if assignment:
            validate_manual_assignment(assignment, set(racks))
            if sorted(assignment) != list(range(len(assignment))):
                raise KafkaError(ErrorCode.invalid_replica_assignment,
                                 "Partitions should be consecutive and start from 0.")
            parts = {int(p): tuple(r) for p, r in assignment.items()}
        else:
            if partitions < 1:
                raise KafkaError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
            parts = assign_replicas(racks, partitions, replication_factor)
        zk = self.zk
        if zk.exists(zp.delete_topic_path(name)):
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' is marked for deletion.")
        a = zp.TopicAssignment(uuid.uuid4(), parts)
        tx = zk.transaction()
        if zk.exists(zp.topic_config_path(name)):
            tx.set_data(zp.topic_config_path(name), zp.encode_entity_config(dict(configs)))
        else:
            tx.create(zp.topic_config_path(name), zp.encode_entity_config(dict(configs)))
        tx.create(zp.topic_path(name), zp.encode_topic(a))
        res = tx.commit()
        if any(isinstance(r, NodeExistsError) for r in res):
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        for r in res:
            if isinstance(r, Exception):
                raise KafkaError(ErrorCode.unknown_server_error, f"ZooKeeper: {r!r}")
        self.cache.put_configs(name, configs, notify=False)
        self._watcher.watch_topic(name)
        self.cache.put_assignment(name, replace(a, version=0))
        info = self.topic(name)
        assert info is not None
        return info

    def delete_topic(self, name: str) -> TopicInfo:
        """Mark for deletion (/admin/delete_topics/<t>); the controller removes the znodes and every broker's
        listener gets on_topic_deleted. The topic stays in the cache until then (`wait_deleted`)."""
        info = self.topic(name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        try:
            self.zk.create(zp.delete_topic_path(name), b"", makepath=True)
        except NodeExistsError:
            pass
        return info

    def add_partitions(self, name: str, total: int,
                       assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo:
        """Extend /brokers/topics/<t> (conditional on its version); the controller creates the new states.
        `assignment` optionally gives replicas for the new partitions (CreatePartitions assignments)."""
        for _ in range(5):
            a = refresh_topic(self.zk, self.cache, name)
            if a is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition)
            if a.reassigning(0) or any(a.reassigning(p) for p in a.partitions):
                raise KafkaError(ErrorCode.reassignment_in_progress,
                                 f"A partition reassignment is in progress for the topic '{name}'.")
            if total <= len(a.partitions):
                raise KafkaError(ErrorCode.invalid_partitions,
                                 f"Topic currently has {len(a.partitions)} partitions, "
                                 f"{total} would not be an increase.")
            if assignment:
                added = {int(p): tuple(r) for p, r in assignment.items()}
                validate_manual_assignment({**{k: v for k, v in a.partitions.items()}, **added},
                                           set(self.cache.live_racks()) | {r for rs in a.partitions.values()
                                                                       for r in rs})
                if sorted(added) != list(range(len(a.partitions), total)):
                    raise KafkaError(ErrorCode.invalid_replica_assignment,
                                     f"Increasing the number of partitions by {total - len(a.partitions)} "
                                     f"but {len(added)} assignments provided.")
            else:
                added = assign_new_partitions(self.cache.live_racks(), a.partitions, total)
            new = replace(a, partitions={**a.partitions, **added})
            try:
                stat = self.zk.set(zp.topic_path(name), zp.encode_topic(new), version=a.version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise KafkaError(ErrorCode.unknown_topic_or_partition) from None
            self.cache.put_assignment(name, replace(new, version=stat.version))
            info = self.topic(name)
            assert info is not None
            return info
        raise KafkaError(ErrorCode.unknown_server_error, "concurrent changes to the topic; retry")

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        if self.topic(name) is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        self.zk.set(zp.topic_config_path(name), zp.encode_entity_config(dict(configs)))
        info = self.cache.put_configs(name, configs, notify=False)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        return info

    def group_configs(self, group: str) -> dict[str, str]:
        return self.cache.group_configs(group)

    def configured_groups(self) -> list[str]:
        return self.cache.configured_groups()

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        """Replace a group's overrides (none: the znode goes); every broker's watch puts them in its cache."""
        path, configs = zp.group_config_path(group), dict(configs)
        if configs:
            try:
                self.zk.create(path, zp.encode_entity_config(configs), makepath=True)
            except NodeExistsError:
                self.zk.set(path, zp.encode_entity_config(configs))
        else:
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        self.cache.put_group_configs(group, configs)

    def claim_producer_id_block(self, size: int) -> int:
        """Kafka's ZkProducerIdManager: claim the next `size` producer ids cluster-wide with a conditional write
        of /latest_producer_id_block (retried on a race); returns the block's first id."""
        for _ in range(20):
            try:
                data, stat = self.zk.get(zp.PRODUCER_ID_BLOCK)
            except NoNodeError:
                try:
                    self.zk.create(zp.PRODUCER_ID_BLOCK, b"", makepath=True)
                except NodeExistsError:
                    pass
                continue
            start = zp.decode_producer_id_block_end(data) + 1
            try:
                self.zk.set(zp.PRODUCER_ID_BLOCK, zp.encode_producer_id_block(self.me.node_id, start,
                                                                               start + size - 1),
                            version=stat.version)
            except BadVersionError:
                continue
            return start
        raise KafkaError(ErrorCode.coordinator_load_in_progress, "could not claim a producer id block; retry")

    def update_isr(self, topic: str, partition: int, current: PartitionState,
                   isr: tuple[int, ...]) -> PartitionState | None:
        """Leader-only conditional ISR write (setData with current.version). Returns the new state (also put in
        the cache; the listener is NOT called for it), or None when `current` is stale (version or leader epoch
        moved, or no answer within the write timeout): re-read `partition_state` and decide again."""
        cached = self.partition_state(topic, partition)
        if cached is None or cached.leader_epoch != current.leader_epoch or cached.version > current.version:
            return None
        new = replace(current, isr=tuple(isr))
        try:
            stat = self.zk.set_async(zp.state_path(topic, partition), zp.encode_state(new),
                                     version=current.version).get(timeout=self._write_timeout_s)
        except (BadVersionError, NoNodeError):
            return None
        except Exception as e:  # connection loss, timeout: the caller retries later
            log.warning("ISR update %s-%d failed: %r", topic, partition, e)
            return None
        new = replace(new, version=stat.version)
        if self.cache.put_state(topic, partition, new, deliver=False):
            self.events.put("state", topic, partition)  # the controller reacts to ISR changes (reassignments)
        return new

    def submit_isr_update(self, topic: str, partition: int, current: PartitionState, isr: tuple[int, ...],
                          done: Callable[[PartitionState | None], None]) -> None:
        """`update_isr` without blocking the event loop: the conditional write is sent now and `done` runs on
        the loop when ZooKeeper answers. A round trip per partition on the loop, as `update_isr` waits, stalled
        every fetch while a restarted broker rejoined thousands of ISRs (or while thousands shrank), so followers
        fell behind replica.lag.time.max.ms and ISRs flapped (issue 20, 10,000 partitions). Kafka's leaders
        likewise send ISR changes asynchronously (AlterPartitionManager, KIP-497)."""
        loop = asyncio.get_running_loop()
        cached = self.partition_state(topic, partition)
        if cached is None or cached.leader_epoch != current.leader_epoch or cached.version > current.version:
            loop.call_soon(done, None)
            return
        new = replace(current, isr=tuple(isr))

        def answered(result: Any) -> None:  # kazoo's completion thread
            state: PartitionState | None = None
            try:
                stat = result.get_nowait()
            except (BadVersionError, NoNodeError):
                pass
            except Exception as e:  # connection loss: the leader decides again later
                log.warning("ISR update %s-%d failed: %r", topic, partition, e)
            else:
                state = replace(new, version=stat.version)
                if self.cache.put_state(topic, partition, state, deliver=False):
                    self.events.put("state", topic, partition)
            try:  # behind the states already queued for the loop: an older one must not land after this answer
                self.cache.call_in_order(loop, done, state)
            except RuntimeError:  # the loop closed (shutting down)
                pass
        try:
            self.zk.set_async(zp.state_path(topic, partition), zp.encode_state(new),
                              version=current.version).rawlink(answered)
        except Exception as e:  # not connected
            log.warning("ISR update %s-%d not sent: %r", topic, partition, e)
            loop.call_soon(done, None)

    def alter_reassignments(self, targets: Mapping[tuple[str, int], Sequence[int] | None],
                            allow_replication_factor_change: bool = True) -> PartitionResults:
        """AlterPartitionReassignments: start (replicas) or cancel (None) reassignments by writing the topic
        znode's adding/removing replicas (KIP-455); the controller completes them."""
        return alter_reassignments(self.zk, self.cache, targets, allow_replication_factor_change)

    # ------------------------------------------------------------ waiting for the controller (async)

    async def wait_online(self, topic: str, timeout_s: float) -> bool:
        def online() -> bool:
            info = self.topic(topic)
            if info is None:
                return False
            for p in range(info.partitions):
                s = self.partition_state(topic, p)
                if s is None or s.leader == NO_LEADER:
                    return False
            return True
        return await self.cache.wait_until(online, timeout_s)

    async def wait_deleted(self, topic: str, timeout_s: float) -> bool:
        return await self.cache.wait_until(lambda: self.topic(topic) is None, timeout_s)

    async def controlled_shutdown(self, timeout_s: float) -> int:
        """Ask the controller to move leadership off this broker and drop it from ISRs (an ephemeral
        /admin/controlled_shutdown/<id> the controller answers with status "done"). Returns the number of
        partitions this broker still leads (-1: no answer within `timeout_s`)."""
        loop = asyncio.get_running_loop()
        path = zp.controlled_shutdown_path(self.me.node_id)
        done: asyncio.Future[int] = loop.create_future()

        def watch(data: bytes | None, stat, event=None) -> bool | None:
            d = zp.decode_shutdown(data) if data else {}
            if d.get("status") == "done":
                n = int(d.get("partitions_remaining", 0))
                loop.call_soon_threadsafe(lambda: None if done.done() else done.set_result(n))
                return False
            return None

        def request() -> None:
            body = zp.encode_shutdown(self.me.node_id, "requested")
            try:
                self.zk.create(path, body, ephemeral=True, makepath=True)
            except NodeExistsError:
                self.zk.set(path, body)
            self.zk.DataWatch(path, watch)

        started = loop.time()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, request), timeout_s)
            requested = loop.time()
            n = await asyncio.wait_for(done, timeout_s)
            log.info("broker %d: controlled shutdown requested in %.2fs, answered %.2fs later", self.me.node_id,
                     requested - started, loop.time() - requested)
            return n
        except (TimeoutError, Exception) as e:
            log.warning("broker %d: controlled shutdown not acknowledged: %r", self.me.node_id, e)
            return -1

    async def elect_leaders(self, election_type: int, partitions: Sequence[tuple[str, int]] | None,
                            timeout_s: float) -> PartitionResults:
        """ElectLeaders on the controller thread (0 preferred, 1 unclean). Raises NOT_CONTROLLER elsewhere."""
        if not self.controller.active:
            raise KafkaError(ErrorCode.not_controller)
        fut = self.controller.submit(lambda: self.controller.elect(election_type, partitions))
        return await asyncio.wait_for(asyncio.wrap_future(fut), timeout_s)
