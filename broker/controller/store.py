"""`ZkMetadata`: the cluster-mode MetadataStore, backed by ZooKeeper through kazoo.

Threads:
- the broker's event loop calls the MetadataStore methods; reads come from an in-memory cache and never block;
  writes (create/delete topic, add partitions, configs, update_isr) are short synchronous ZooKeeper calls
  with a bounded wait;
- kazoo's callback thread runs the watches: they update the cache and hand listener calls to the event loop
  with `loop.call_soon_threadsafe` (in cache-update order), and queue events for the controller;
- the controller (broker/controller/controller.py) runs on its own thread and writes leaders/ISRs with
  conditional updates fenced by the /controller_epoch version.

Rule: no ZooKeeper I/O while holding `_lock`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from broker.controller import zk_paths as zp
from broker.controller.assignment import assign_new_partitions, assign_replicas, validate_manual_assignment
from broker.controller.state import NO_LEADER, ClusterListener, PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.metadata import BrokerInfo, TopicInfo, validate_topic_name

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.controller.controller import Controller, ControllerSettings

log = logging.getLogger(__name__)


def split_connect(connect: str) -> tuple[str, str]:
    """"h1:p1,h2:p2/chroot" -> ("h1:p1,h2:p2", "/chroot")."""
    i = connect.find("/")
    if i < 0:
        return connect, ""
    return connect[:i], connect[i:].rstrip("/")


class ZkMetadata:
    """Cluster metadata in ZooKeeper (Kafka's layout, see zk_paths.py); implements MetadataStore."""

    def __init__(self, connect: str, me: BrokerInfo, *, cluster_id: str = "", session_timeout_ms: int = 18_000,
                 connection_timeout_ms: int | None = None, settings: ControllerSettings | None = None,
                 write_timeout_s: float = 10.0) -> None:
        from broker.controller.controller import Controller, ControllerSettings

        self.me = me
        self.connect = connect
        self._hosts, self._chroot = split_connect(connect)
        self._session_timeout_s = session_timeout_ms / 1000
        self._connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        self._write_timeout_s = write_timeout_s
        self._wanted_cluster_id = cluster_id
        self.cluster_id = cluster_id
        self.controller_id = -1
        self.settings = settings or ControllerSettings()
        self._lock = threading.RLock()
        self._brokers: dict[int, BrokerInfo] = {}
        self._assign: dict[str, zp.TopicAssignment] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._raw: dict[tuple[str, int], PartitionState] = {}
        self._delivered: dict[tuple[str, int], PartitionState] = {}
        self._watched_topics: set[str] = set()
        self._state_watched: dict[tuple[str, int], uuid.UUID] = {}
        self.pending_deletes: set[str] = set()
        self.shutdown_requests: set[int] = set()
        self.broker_czxids: dict[int, int] = {}  # registration znode czxid: tells a bounced broker
        self._listener: ClusterListener | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._session_lost = False
        self._closed = False
        self._zk: KazooClient | None = None
        self.controller: Controller = Controller(self, self.settings)

    @classmethod
    def from_config(cls, config: BrokerConfig, me: BrokerInfo) -> ZkMetadata:
        from broker.controller.controller import ControllerSettings

        return cls(config.zookeeper_connect, me, cluster_id=config.cluster_id,
                   session_timeout_ms=config.zookeeper_session_timeout_ms,
                   connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                   settings=ControllerSettings.from_config(config))

    # ------------------------------------------------------------ connection

    @property
    def zk(self) -> KazooClient:
        assert self._zk is not None, "ZkMetadata.connect() first"
        return self._zk

    def connect_zk(self) -> None:
        """Connect (creating the chroot if missing), create the persistent paths and /cluster/id. Blocking."""
        if self._zk is not None:
            return
        if self._chroot:
            boot = KazooClient(hosts=self._hosts, timeout=self._session_timeout_s)
            boot.start(timeout=self._connection_timeout_s)
            try:
                boot.ensure_path(self._chroot)
            finally:
                boot.stop()
                boot.close()
        zk = KazooClient(hosts=self._hosts + self._chroot, timeout=self._session_timeout_s,
                         connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                         command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0))
        zk.add_listener(self._on_connection_state)
        zk.start(timeout=self._connection_timeout_s)
        self._zk = zk
        for path in zp.PERSISTENT_PATHS:
            zk.ensure_path(path)
        self._init_cluster_id()

    def _init_cluster_id(self) -> None:
        try:
            data, _ = self.zk.get(zp.CLUSTER_ID)
        except NoNodeError:
            from broker.metadata import _new_cluster_id

            wanted = self._wanted_cluster_id or _new_cluster_id()
            try:
                self.zk.create(zp.CLUSTER_ID, zp.encode_cluster_id(wanted), makepath=True)
            except NodeExistsError:
                pass
            data, _ = self.zk.get(zp.CLUSTER_ID)
        found = zp.decode_cluster_id(data)
        if self._wanted_cluster_id and found != self._wanted_cluster_id:
            raise RuntimeError(f"cluster.id {self._wanted_cluster_id} does not match the cluster id {found} "
                               f"in ZooKeeper ({self.connect})")
        self.cluster_id = found

    def _on_connection_state(self, state: str) -> None:
        # Runs on kazoo's connection thread: never block here.
        if state == KazooState.LOST:
            log.warning("broker %d: ZooKeeper session lost", self.me.node_id)
            self._session_lost = True
            self.controller.enqueue("resign")
        elif state == KazooState.SUSPENDED:
            log.warning("broker %d: ZooKeeper connection suspended; serving from the cache", self.me.node_id)
        elif state == KazooState.CONNECTED and self._session_lost and not self._closed:
            self._session_lost = False
            threading.Thread(target=self._after_new_session, name=f"zk-reregister-{self.me.node_id}",
                             daemon=True).start()

    def _after_new_session(self) -> None:
        try:
            self._register(deadline_s=self._session_timeout_s * 2)
            log.info("broker %d re-registered after session expiry", self.me.node_id)
        except Exception:
            log.exception("broker %d: re-registration failed", self.me.node_id)
        self.controller.enqueue("elect")

    def _register(self, deadline_s: float) -> None:
        """Create the ephemeral /brokers/ids/<id>; wait out a previous session's node (restart after kill -9)."""
        path = zp.broker_path(self.me.node_id)
        data = zp.encode_broker(zp.BrokerRegistration(self.me.node_id, self.me.host, self.me.port, self.me.rack))
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                self.zk.create(path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                try:
                    _, stat = self.zk.get(path)
                except NoNodeError:
                    continue
                if stat.ephemeralOwner == self.zk.client_id[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"broker id {self.me.node_id} is already registered in ZooKeeper "
                                       f"(session 0x{stat.ephemeralOwner:x})") from None
                ev = threading.Event()
                if self.zk.exists(path, watch=lambda _e, ev=ev: ev.set()):
                    ev.wait(min(1.0, max(0.0, deadline - time.monotonic())))

    # ------------------------------------------------------------ lifecycle (MetadataStore)

    def start(self, listener: ClusterListener) -> None:
        """Register this broker, load the cluster state into the cache (blocking, at startup), start the
        watches and the controller thread. Call from the event loop: listener calls are delivered there."""
        try:
            self._loop = asyncio.get_running_loop()
            self._changed = asyncio.Event()
        except RuntimeError:
            self._loop = None
        self._listener = listener
        self.connect_zk()
        zk = self.zk
        self._register(deadline_s=self._session_timeout_s + 5)
        zk.DataWatch(zp.CONTROLLER, self._on_controller)
        zk.ChildrenWatch(zp.BROKER_IDS, self._on_broker_ids)
        zk.ChildrenWatch(zp.TOPICS, self._on_topic_names)
        zk.ChildrenWatch(zp.DELETE_TOPICS, self._on_delete_requests)
        zk.ChildrenWatch(zp.CONTROLLED_SHUTDOWN, self._on_shutdown_requests)
        zk.DataWatch(zp.REASSIGN_PARTITIONS, lambda d, s, e=None: self.controller.enqueue("reassign"))
        zk.DataWatch(zp.PREFERRED_REPLICA_ELECTION, lambda d, s, e=None: self.controller.enqueue("preferred"))
        self.controller.start()

    def close(self) -> None:
        """Stop the controller and close the session (our ephemeral znodes disappear at once)."""
        if self._closed:
            return
        self._closed = True
        self.controller.stop()
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                log.exception("closing the ZooKeeper client")

    # ------------------------------------------------------------ delivery to the event loop

    def _deliver(self, fn: Callable[..., None], *args: object) -> None:
        """Called with `_lock` held, so deliveries are queued in cache-update order."""
        if self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._run_on_loop, fn, args)
        except RuntimeError:
            pass  # loop closed

    def _run_on_loop(self, fn: Callable[..., None] | None, args: tuple) -> None:
        try:
            if fn is not None:
                fn(*args)
        except Exception:
            log.exception("cluster listener failed")
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()

    def _poke(self) -> None:
        self._deliver(None, )  # type: ignore[arg-type]

    def _emit_state(self, t: str, p: int) -> None:
        s = self._compose(t, p)
        if s is None or self._delivered.get((t, p)) == s:
            return
        self._delivered[(t, p)] = s
        if self._listener is not None:
            self._deliver(self._listener.on_partition_state, t, p, s)
        else:
            self._poke()

    def _compose(self, t: str, p: int) -> PartitionState | None:
        raw = self._raw.get((t, p))
        a = self._assign.get(t)
        if raw is None or a is None or p not in a.partitions:
            return None
        replicas = a.partitions[p]
        return raw if raw.replicas == replicas else replace(raw, replicas=replicas)

    # ------------------------------------------------------------ watches (kazoo callback thread)

    def _on_controller(self, data: bytes | None, stat, event=None) -> None:
        cid = zp.decode_controller(data) if data else -1
        self.controller_id = cid
        self.controller.enqueue("elect" if cid == -1 else "controller_changed")

    def _on_broker_ids(self, children: list[str]) -> None:
        ids = {int(c) for c in children if c.lstrip("-").isdigit()}
        found: dict[int, BrokerInfo] = {}
        czxids: dict[int, int] = {}
        for b in ids:  # re-read every registration: a bounced broker may come back with a new endpoint
            try:
                data, stat = self.zk.get(zp.broker_path(b))
            except NoNodeError:
                continue
            reg = zp.decode_broker(b, data)
            found[b] = BrokerInfo(b, reg.host, reg.port, reg.rack)
            czxids[b] = stat.czxid
        with self._lock:
            changed = found != self._brokers or czxids != self.broker_czxids
            self._brokers = found
            self.broker_czxids = czxids
            if changed and self._listener is not None:
                self._deliver(self._listener.on_brokers_changed)
        self.controller.enqueue("brokers")

    def _on_topic_names(self, children: list[str]) -> None:
        for t in children:
            if t not in self._watched_topics:
                self._watch_topic(t)

    def _watch_topic(self, t: str) -> None:
        with self._lock:
            if t in self._watched_topics:
                return
            self._watched_topics.add(t)
        self.zk.DataWatch(zp.topic_path(t), lambda d, s, e=None: self._on_topic_data(t, d, s))
        self.zk.DataWatch(zp.topic_config_path(t), lambda d, s, e=None: self._on_topic_config(t, d, s))

    def _on_topic_data(self, t: str, data: bytes | None, stat) -> bool | None:
        if data is None:
            with self._lock:
                self._watched_topics.discard(t)
                self._drop_topic(t)
            self.controller.enqueue("topics")
            return False
        try:
            a = zp.decode_topic(data, stat.version)
        except (ValueError, KeyError):
            log.exception("bad topic znode %s", t)
            return None
        self._apply_assignment(t, a)
        self.controller.enqueue("topics")
        return None

    def _drop_topic(self, t: str) -> None:
        """With `_lock` held."""
        if self._assign.pop(t, None) is None:
            return
        self._topics.pop(t, None)
        self._configs.pop(t, None)
        for key in [k for k in self._raw if k[0] == t]:
            del self._raw[key]
        for key in [k for k in self._delivered if k[0] == t]:
            del self._delivered[key]
        for key in [k for k in self._state_watched if k[0] == t]:
            del self._state_watched[key]
        if self._listener is not None:
            self._deliver(self._listener.on_topic_deleted, t)
        else:
            self._poke()

    def _apply_assignment(self, t: str, a: zp.TopicAssignment) -> None:
        new_watches: list[int] = []
        with self._lock:
            old = self._assign.get(t)
            if old is not None and old.topic_id != a.topic_id:
                self._drop_topic(t)  # deleted and re-created between two watch events
                old = None
            if old is not None and old.version >= a.version:
                return
            self._assign[t] = a
            self._rebuild_topic(t)
            for p in a.partitions:
                if self._state_watched.get((t, p)) != a.topic_id:
                    self._state_watched[(t, p)] = a.topic_id
                    new_watches.append(p)
                else:
                    self._emit_state(t, p)
            self._poke()
        for p in new_watches:
            tid = a.topic_id
            self.zk.DataWatch(zp.state_path(t, p), lambda d, s, e=None, p=p, tid=tid: self._on_state(t, p, tid, d, s))

    def _rebuild_topic(self, t: str) -> None:
        a = self._assign[t]
        configs = self._configs.get(t, {})
        rf = len(a.target(0)) if 0 in a.partitions else 0
        self._topics[t] = TopicInfo(t, a.topic_id, len(a.partitions), rf, dict(configs))

    def _on_state(self, t: str, p: int, tid: uuid.UUID, data: bytes | None, stat) -> bool | None:
        with self._lock:
            a = self._assign.get(t)
            if a is None or a.topic_id != tid or self._state_watched.get((t, p)) != tid:
                return False
            if data is None:
                return None
            try:
                s = zp.decode_state(data, a.partitions.get(p, ()), stat.version)
            except (ValueError, KeyError):
                log.exception("bad state znode %s/%d", t, p)
                return None
            self._put_state(t, p, s)
        self.controller.enqueue("state")
        return None

    def _put_state(self, t: str, p: int, s: PartitionState, deliver: bool = True) -> bool:
        """Keep `s` if newer than the cached state (by znode version). With `_lock` held."""
        with self._lock:
            cur = self._raw.get((t, p))
            if cur is not None and cur.version >= s.version:
                return False
            if t not in self._assign:
                return False
            self._raw[(t, p)] = s
            if deliver:
                self._emit_state(t, p)
            else:
                c = self._compose(t, p)
                if c is not None:
                    self._delivered[(t, p)] = c
                self._poke()
            return True

    def _on_topic_config(self, t: str, data: bytes | None, stat) -> bool | None:
        with self._lock:
            if data is None:
                return False if t not in self._watched_topics else None
            configs = zp.decode_topic_config(data)
            if self._configs.get(t) == configs:
                return None
            self._configs[t] = configs
            if t in self._assign:
                self._rebuild_topic(t)
                hook = getattr(self._listener, "on_topic_config_changed", None)
                if hook is not None:
                    self._deliver(hook, t)
        return None

    def _on_delete_requests(self, children: list[str]) -> None:
        self.pending_deletes = set(children)
        self.controller.enqueue("delete")

    def _on_shutdown_requests(self, children: list[str]) -> None:
        self.shutdown_requests = {int(c) for c in children if c.isdigit()}
        self.controller.enqueue("shutdown")

    def refresh_state(self, t: str, p: int) -> PartitionState | None:
        """Read a state znode now (after a conditional write lost) and cache it. Blocking; not on the loop."""
        try:
            data, stat = self.zk.get(zp.state_path(t, p))
        except NoNodeError:
            return None
        with self._lock:
            a = self._assign.get(t)
            if a is None:
                return None
            s = zp.decode_state(data, a.partitions.get(p, ()), stat.version)
            self._put_state(t, p, s)
            return self._compose(t, p)

    def refresh_topic(self, t: str) -> zp.TopicAssignment | None:
        try:
            data, stat = self.zk.get(zp.topic_path(t))
        except NoNodeError:
            return None
        a = zp.decode_topic(data, stat.version)
        self._apply_assignment(t, a)
        with self._lock:
            return self._assign.get(t)

    # ------------------------------------------------------------ reads (cache)

    def brokers(self) -> list[BrokerInfo]:
        with self._lock:
            return [self._brokers[b] for b in sorted(self._brokers)]

    def live_broker_ids(self) -> set[int]:
        with self._lock:
            return set(self._brokers)

    def topics(self) -> dict[str, TopicInfo]:
        with self._lock:
            return dict(self._topics)

    def topic(self, name: str) -> TopicInfo | None:
        with self._lock:
            return self._topics.get(name)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        with self._lock:
            return self._compose(topic, partition)

    def assignment(self, topic: str) -> zp.TopicAssignment | None:
        with self._lock:
            return self._assign.get(topic)

    def assignments(self) -> dict[str, zp.TopicAssignment]:
        with self._lock:
            return dict(self._assign)

    def partition_states(self) -> dict[tuple[str, int], PartitionState]:
        """Every known partition's state (replicas from the assignment)."""
        with self._lock:
            out = {}
            for (t, p) in self._raw:
                s = self._compose(t, p)
                if s is not None:
                    out[(t, p)] = s
            return out

    def shutting_down_brokers(self) -> set[int]:
        """Brokers in controlled shutdown: leaders should not add them back to an ISR."""
        return set(self.shutdown_requests)

    def reassignments(self) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """Ongoing reassignments: (topic, partition) -> (replicas, adding, removing) (ListPartitionReassignments)."""
        with self._lock:
            out = {}
            for t, a in self._assign.items():
                for p in a.partitions:
                    if a.reassigning(p):
                        out[(t, p)] = (a.partitions[p], a.adding.get(p, ()), a.removing.get(p, ()))
            return out

    # ------------------------------------------------------------ writes (short, synchronous)

    def _live_racks(self) -> dict[int, str | None]:
        with self._lock:
            return {b: i.rack for b, i in self._brokers.items()}

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str],
                     assignment: Mapping[int, Sequence[int]] | None = None) -> TopicInfo:
        """Write /config/topics/<t> and /brokers/topics/<t> (one transaction); the controller then elects the
        leaders (`wait_online`). `assignment` is an explicit replica assignment (CreateTopics assignments)."""
        validate_topic_name(name)
        if self.topic(name) is not None:
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        racks = self._live_racks()
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
            tx.set_data(zp.topic_config_path(name), zp.encode_topic_config(dict(configs)))
        else:
            tx.create(zp.topic_config_path(name), zp.encode_topic_config(dict(configs)))
        tx.create(zp.topic_path(name), zp.encode_topic(a))
        res = tx.commit()
        if any(isinstance(r, NodeExistsError) for r in res):
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        for r in res:
            if isinstance(r, Exception):
                raise KafkaError(ErrorCode.unknown_server_error, f"ZooKeeper: {r!r}")
        with self._lock:
            self._configs[name] = dict(configs)
        self._watch_topic(name)
        self._apply_assignment(name, replace(a, version=0))
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
            a = self.refresh_topic(name)
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
                                           set(self._live_racks()) | {r for rs in a.partitions.values()
                                                                       for r in rs})
                if sorted(added) != list(range(len(a.partitions), total)):
                    raise KafkaError(ErrorCode.invalid_replica_assignment,
                                     f"Increasing the number of partitions by {total - len(a.partitions)} "
                                     f"but {len(added)} assignments provided.")
            else:
                added = assign_new_partitions(self._live_racks(), a.partitions, total)
            new = replace(a, partitions={**a.partitions, **added})
            try:
                stat = self.zk.set(zp.topic_path(name), zp.encode_topic(new), version=a.version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise KafkaError(ErrorCode.unknown_topic_or_partition) from None
            self._apply_assignment(name, replace(new, version=stat.version))
            info = self.topic(name)
            assert info is not None
            return info
        raise KafkaError(ErrorCode.unknown_server_error, "concurrent changes to the topic; retry")

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        if self.topic(name) is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        self.zk.set(zp.topic_config_path(name), zp.encode_topic_config(dict(configs)))
        with self._lock:
            self._configs[name] = dict(configs)
            if name in self._assign:
                self._rebuild_topic(name)
            info = self._topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        return info

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
        self._put_state(topic, partition, new, deliver=False)
        return new

    def alter_reassignments(self, targets: Mapping[tuple[str, int], Sequence[int] | None]
                            ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: start (replicas) or cancel (None) reassignments by writing the topic
        znode's adding/removing replicas (KIP-455); the controller completes them."""
        results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
        for (t, p), r in targets.items():
            by_topic.setdefault(t, {})[p] = r
        live = self.live_broker_ids()
        for t, parts in by_topic.items():
            for _ in range(5):
                a = self.refresh_topic(t)
                pending: dict[int, tuple[ErrorCode, str | None]] = {}
                if a is None:
                    pending = {p: (ErrorCode.unknown_topic_or_partition, None) for p in parts}
                    break
                full, adding, removing = dict(a.partitions), dict(a.adding), dict(a.removing)
                for p, target in parts.items():
                    if p not in a.partitions:
                        pending[p] = (ErrorCode.unknown_topic_or_partition, None)
                    elif target is None:
                        if not a.reassigning(p):
                            pending[p] = (ErrorCode.no_reassignment_in_progress, None)
                            continue
                        full[p] = a.origin(p)
                        adding.pop(p, None)
                        removing.pop(p, None)
                        pending[p] = (ErrorCode.none, None)
                    else:
                        target = tuple(int(r) for r in target)
                        try:
                            validate_manual_assignment({p: target}, live)
                        except KafkaError as e:
                            pending[p] = (e.code, e.message)
                            continue
                        if a.reassigning(p):
                            pending[p] = (ErrorCode.reassignment_in_progress,
                                          f"Partition {t}-{p} is already being reassigned.")
                            continue
                        pending[p] = (ErrorCode.none, None)
                        if target == a.partitions[p]:
                            continue
                        orig = a.partitions[p]
                        full[p] = tuple(dict.fromkeys(target + orig))
                        adding[p] = tuple(r for r in target if r not in orig)
                        removing[p] = tuple(r for r in orig if r not in target)
                new = replace(a, partitions=full, adding=adding, removing=removing)
                if new == a:
                    break
                try:
                    stat = self.zk.set(zp.topic_path(t), zp.encode_topic(new), version=a.version)
                except BadVersionError:
                    continue
                self._apply_assignment(t, replace(new, version=stat.version))
                break
            else:
                pending = {p: (ErrorCode.unknown_server_error, "concurrent topic changes; retry") for p in parts}
            for p, r in pending.items():
                results[(t, p)] = r
        return results

    # ------------------------------------------------------------ waiting for the controller (async)

    async def _wait_for(self, cond: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ev = self._changed
            try:
                if ev is None:
                    await asyncio.sleep(min(left, 0.05))
                else:
                    await asyncio.wait_for(ev.wait(), min(left, 0.5))
            except TimeoutError:
                pass
        return True

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
        return await self._wait_for(online, timeout_s)

    async def wait_deleted(self, topic: str, timeout_s: float) -> bool:
        return await self._wait_for(lambda: self.topic(topic) is None, timeout_s)

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
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(n))
                return False
            return None

        def request() -> None:
            body = zp.encode_shutdown(self.me.node_id, "requested")
            try:
                self.zk.create(path, body, ephemeral=True, makepath=True)
            except NodeExistsError:
                self.zk.set(path, body)
            self.zk.DataWatch(path, watch)

        try:
            await asyncio.wait_for(loop.run_in_executor(None, request), timeout_s)
            return await asyncio.wait_for(done, timeout_s)
        except (TimeoutError, Exception) as e:
            log.warning("broker %d: controlled shutdown not acknowledged: %r", self.me.node_id, e)
            return -1

    async def elect_leaders(self, election_type: int, partitions: Sequence[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """ElectLeaders on the controller thread (0 preferred, 1 unclean). Raises NOT_CONTROLLER elsewhere."""
        if not self.controller.active:
            raise KafkaError(ErrorCode.not_controller)
        fut = self.controller.submit(lambda: self.controller.elect(election_type, partitions))
        return await asyncio.wait_for(asyncio.wrap_future(fut), timeout_s)
