"""ZooKeeper to cache: the watches every cluster member sets, and explicit re-reads of a znode.

Watch callbacks run on kazoo's callback thread: they decode the znode, put it into the `MetadataCache` (which
tells this broker's listener), and put an event on the controller's queue; they never wait on the controller.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from broker.controller import election
from broker.controller import zk_paths as zp
from broker.controller.cache import MetadataCache
from broker.controller.events import ControllerEventQueue
from broker.controller.state import PartitionState
from broker.controller.state_watches import StateWatches
from broker.metadata import BrokerInfo

log = logging.getLogger(__name__)


def refresh_state(zk: KazooClient, cache: MetadataCache, t: str, p: int) -> PartitionState | None:
    """Read a state znode now (after a conditional write lost) and cache it. Blocking; not on the loop."""
    try:
        data, stat = zk.get(zp.state_path(t, p))
    except NoNodeError:
        return None
    a = cache.assignment(t)
    if a is None:
        return None
    cache.put_state(t, p, zp.decode_state(data, a.partitions.get(p, ()), stat.version), topic_id=a.topic_id)
    return cache.partition_state(t, p)


def refresh_topic(zk: KazooClient, cache: MetadataCache, t: str) -> zp.TopicAssignment | None:
    """Read a topic znode now (before a conditional write of it) and cache it. Blocking; not on the loop."""
    try:
        data, stat = zk.get(zp.topic_path(t))
    except NoNodeError:
        return None
    cache.put_assignment(t, zp.decode_topic(data, stat.version))
    return cache.assignment(t)


class ZkWatcher:
    """Keeps the cache in step with ZooKeeper (Kafka's znodes, zk_paths.py) and feeds the controller's queue."""

    def __init__(self, zk: KazooClient, cache: MetadataCache, events: ControllerEventQueue) -> None:
        self.zk = zk
        self.cache = cache
        self.events = events
        self._lock = threading.Lock()
        self._watched_topics: set[str] = set()
        self._watched_offline: set[str] = set()
        self._watched_groups: set[str] = set()
        self._states = StateWatches(zk, self._on_state)
        cache.on_new_partitions(self._states.watch)

    def start(self) -> None:
        """Set the watches (each fires once at once with the current data)."""
        zk = self.zk
        zk.DataWatch(zp.CONTROLLER, self._on_controller)
        zk.ChildrenWatch(zp.BROKER_IDS, self._on_broker_ids)
        zk.ChildrenWatch(zp.TOPICS, self._on_topic_names)
        zk.ChildrenWatch(zp.DELETE_TOPICS, self._on_delete_requests)
        zk.ChildrenWatch(zp.CONTROLLED_SHUTDOWN, self._on_shutdown_requests)
        zk.ChildrenWatch(zp.OFFLINE_REPLICAS, self._on_offline_brokers)
        zk.ChildrenWatch(zp.CONFIG_GROUPS, self._on_group_config_names)
        zk.DataWatch(zp.REASSIGN_PARTITIONS, lambda d, s, e=None: self.events.put("reassign"))
        zk.DataWatch(zp.PREFERRED_REPLICA_ELECTION, lambda d, s, e=None: self.events.put("preferred"))

    def _on_controller(self, data: bytes | None, stat, event=None) -> None:
        cid = zp.decode_controller(data) if data else -1
        self.cache.controller_id = cid
        self.events.put("elect" if cid == -1 else "controller_changed")

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
            found[b] = BrokerInfo(b, reg.host, reg.port, reg.rack, reg.listeners)
            czxids[b] = stat.czxid
        self.cache.set_brokers(found, czxids)
        self.events.put("brokers")

    def _on_topic_names(self, children: list[str]) -> None:
        for t in children:
            if t not in self._watched_topics:
                self.watch_topic(t)

    def watch_topic(self, t: str) -> None:
        """Watch a topic's assignment and config znodes (once)."""
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
                self.cache.drop_topic(t)
            self.events.put("topics")
            return False  # stop watching: a re-created topic gets a new watch
        try:
            a = zp.decode_topic(data, stat.version)
        except (ValueError, KeyError):
            log.exception("bad topic znode %s", t)
            return None
        self.cache.put_assignment(t, a)
        self.events.put("topics")
        return None

    def _on_topic_config(self, t: str, data: bytes | None, stat) -> bool | None:
        if data is None:
            with self._lock:
                return False if t not in self._watched_topics else None
        configs = zp.decode_entity_config(data)
        self.cache.put_configs(t, configs, notify=True)
        if election.unclean_enabled(configs, False):   # KafkaController.enableTopicUncleanLeaderElection
            self.events.put("unclean", t)
        return None

    def _on_state(self, t: str, p: int, tid: uuid.UUID, data: bytes | None, stat) -> bool | None:
        a = self.cache.known_partition(t, p, tid)
        if a is None:
            return False  # the topic went (or was re-created): a newer watch owns this path
        if data is None:
            return None
        try:
            s = zp.decode_state(data, a.partitions.get(p, ()), stat.version)
        except (ValueError, KeyError):
            log.exception("bad state znode %s/%d", t, p)
            return None
        if self.cache.put_state(t, p, s, topic_id=tid):  # not already known (the controller's own write)
            self.events.put("state", t, p)
        return None

    def _on_delete_requests(self, children: list[str]) -> None:
        self.cache.set_pending_deletes(children)
        self.events.put("delete")

    def _watch_each_child(self, children: list[str], watched: set[str], path_of: Callable[[str], str],
                          on_data: Callable[[str, bytes | None], None]) -> None:
        """A DataWatch on each new child; it ends when the child's znode goes (a later one gets a new watch)."""
        for child in children:
            with self._lock:
                if child in watched:
                    continue
                watched.add(child)
            self.zk.DataWatch(path_of(child), lambda d, s, e=None, c=child: self._child_data(watched, c, d, on_data))

    def _child_data(self, watched: set[str], child: str, data: bytes | None,
                    on_data: Callable[[str, bytes | None], None]) -> bool | None:
        on_data(child, data)
        if data is None:
            with self._lock:
                watched.discard(child)
            return False
        return None

    def _on_group_config_names(self, children: list[str]) -> None:
        self._watch_each_child(children, self._watched_groups, zp.group_config_path, self._on_group_config)

    def _on_group_config(self, g: str, data: bytes | None) -> None:
        """A group's config overrides (KIP-848's dynamic group configs), for the coordinator of the group."""
        try:
            self.cache.put_group_configs(g, zp.decode_entity_config(data) if data else {})
        except (ValueError, AttributeError):
            log.exception("bad group config znode %s", g)

    def _on_offline_brokers(self, children: list[str]) -> None:
        self._watch_each_child([c for c in children if c.isdigit()], self._watched_offline,
                               lambda b: zp.offline_replicas_path(int(b)), self._on_offline_replicas)

    def _on_offline_replicas(self, b: str, data: bytes | None) -> None:
        """A broker's offline replicas (its ephemeral znode; gone with its session, when it restarts)."""
        try:
            keys = zp.decode_offline_replicas(data) if data else frozenset()
        except (ValueError, KeyError, TypeError):
            log.exception("bad offline-replicas znode of broker %s", b)
            return
        self.cache.set_offline_replicas(int(b), keys)
        self.events.put("offline_replicas")

    def _on_shutdown_requests(self, children: list[str]) -> None:
        self.cache.set_shutdown_requests(int(c) for c in children if c.isdigit())
        self.events.put("shutdown")
