"""The Kafka edge (confluent-kafka): tail `__consumer_offsets` from the beginning, poll log-end offsets, and (in a
thread of its own) topic metadata and oldest offsets for kafka_exporter's series."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from common.clock import SYSTEM
from lagmonitor import owners, topics
from lagmonitor.markers import MarkerReader
from lagmonitor.monitor import LagMonitor

log = logging.getLogger(__name__)

wall_ms = SYSTEM.now_ms   # the collector's default time source (ms), shared with the CLI and tests


class Collector:
    """Feeds a LagMonitor; `run` loops until `stop` is set. Time comes from `clock` (ms)."""

    def __init__(self, bootstrap: str, monitor: LagMonitor, clock: Callable[[], int] = wall_ms,
                 client_props: dict[str, str] | None = None) -> None:
        self.monitor = monitor
        self.cfg = monitor.config.collector
        self.clock = clock
        self.bootstrap = bootstrap
        self.client_props = dict(client_props or {})   # security.protocol, sasl.*, ssl.* (--command-config)
        conf = {"bootstrap.servers": bootstrap, "client.id": f"kafkascope-lag-{monitor.config.cluster}",
                **self.client_props}
        self.admin = AdminClient(conf)
        self.consumer = Consumer({**conf, "group.id": "kafkascope-lag-unused", "enable.auto.commit": False,
                                  "enable.partition.eof": False, "allow.auto.create.topics": False})
        self.markers = MarkerReader(conf) if self.cfg.marker_check_max > 0 else None
        self.partitions: dict[str, int] = {}   # topic → partition count, from the last metadata refresh
        self._next_poll = 0
        self._next_topics = 0
        self._assigned = False

    def _metadata(self) -> dict[str, int]:
        """All topics' partition counts; if the cluster refuses a full listing, the topics we know of."""
        try:
            md = self.admin.list_topics(timeout=10)
            return {t: len(m.partitions) for t, m in md.topics.items() if m.error is None}
        except KafkaException as e:
            log.warning("full metadata listing failed (%s); polling the topics seen in commits", e)
        out = {}
        for topic in set(self.partitions) | self.monitor.seen_topics:
            m = self.consumer.list_topics(topic, timeout=10).topics.get(topic)
            if m is not None and m.error is None:
                out[topic] = len(m.partitions)
        return out

    def poll_broker_offsets(self, now_ms: int) -> None:
        if now_ms >= self._next_topics or not self.partitions:
            fresh = self._metadata()
            for gone in set(self.partitions) - set(fresh):
                log.info("topic %s disappeared; deleting it", gone)
                self.monitor.delete_topic(gone, now_ms)
            self.partitions = fresh
            self._next_topics = now_ms + int(self.cfg.topic_refresh_s * 1000)
        request = {TopicPartition(t, p): OffsetSpec.latest() for t, n in self.partitions.items() for p in range(n)}
        if not request:
            return
        offsets = self._list_offsets(request, IsolationLevel.READ_UNCOMMITTED, "log-end")
        # The Last Stable Offset: ListOffsets(LATEST) with read_committed answers it (KIP-98), one more request
        # per leader per poll. docs/lag-monitor.md §6.
        stable = self._list_offsets(request, IsolationLevel.READ_COMMITTED, "last stable")
        with self.monitor.lock:
            self.monitor.broker_offsets(offsets, self.partitions, self.clock(), stable)
        self.check_markers()

    def check_markers(self) -> None:
        """Read the gaps between commits and the LSO that may hold only markers (lagmonitor/markers.py)."""
        if self.markers is None:
            return
        with self.monitor.lock:
            gaps = self.monitor.storage.marker_candidates(self.cfg.marker_check_max)
        for topic, partition, start, end in sorted(gaps):
            if self.markers.nothing_readable(topic, partition, start, end):
                with self.monitor.lock:
                    self.monitor.storage.set_markers_only(topic, partition, start, end)
                    self.monitor.evaluator.invalidate()

    def _list_offsets(self, request: dict, isolation: IsolationLevel, what: str) -> dict[tuple[str, int], int]:
        out = {}
        for tp, fut in self.admin.list_offsets(request, isolation_level=isolation, request_timeout=10).items():
            try:
                out[(tp.topic, tp.partition)] = fut.result().offset
            except KafkaException as e:
                log.warning("%s offset of %s-%d: %s", what, tp.topic, tp.partition, e)
                self._next_topics = 0   # refresh metadata on the next poll, as Burrow does after an error
        return out

    def refresh_owners(self) -> None:
        """Owners of the consumer-protocol groups seen in __consumer_offsets, from ConsumerGroupDescribe
        (lagmonitor/owners.py); a group the coordinator no longer knows keeps what it had until its tombstone."""
        with self.monitor.lock:
            groups = list(self.monitor.consumer_groups)
        found, failed = owners.describe(self.admin, groups)
        for group, error in failed.items():
            log.debug("describing consumer group %s: %s", group, error)
        with self.monitor.lock:
            for group, members in found.items():
                if group in self.monitor.consumer_groups:   # not deleted meanwhile
                    self.monitor.storage.set_owners(group, members)

    def _assign(self) -> None:
        topic = self.cfg.offsets_topic
        md = self.consumer.list_topics(topic, timeout=10).topics[topic]
        if md.error is not None:
            raise KafkaException(md.error)
        pos = self.monitor.positions
        self.consumer.assign([TopicPartition(topic, p, pos.get(p, OFFSET_BEGINNING)) for p in md.partitions])
        self._assigned = True

    def _try_assign(self) -> None:
        """Kafka creates the offsets topic at the first FindCoordinator, so a cluster where no group has been used
        yet has none: retried at every log-end poll instead of ending the collector."""
        try:
            self._assign()
        except KafkaException as e:
            log.warning("cannot read %s yet (%s); retrying at the next log-end poll", self.cfg.offsets_topic, e)

    def consume(self, timeout_s: float) -> int:
        """Apply up to one batch of __consumer_offsets messages; returns how many."""
        if not self._assigned:
            self._assign()
        msgs = [m for m in self.consumer.consume(500, timeout_s) if m.error() is None]
        if msgs:
            with self.monitor.lock:
                for m in msgs:
                    self.monitor.apply_record(m.partition(), m.offset(), m.key(), m.value(), self.clock())
        return len(msgs)

    def run(self, stop: threading.Event) -> None:
        cfg = self.monitor.config
        next_save = self.clock() + int(cfg.snapshot_interval_s * 1000)
        meta = MetadataPoller(self.bootstrap, self.monitor, self.clock, client_props=self.client_props)
        poller = threading.Thread(target=meta.run, args=(stop,), daemon=True, name="lag-metadata")
        poller.start()
        try:
            while not stop.is_set():
                now = self.clock()
                if now >= self._next_poll:
                    self._next_poll = now + int(self.cfg.offset_refresh_s * 1000)
                    if not self._assigned:
                        self._try_assign()
                    try:
                        self.poll_broker_offsets(now)
                    except KafkaException as e:
                        log.warning("log-end offset poll failed: %s", e)
                        self._next_topics = 0
                    try:
                        self.refresh_owners()
                    except KafkaException as e:   # owners stay as they were until the next poll
                        log.warning("describing consumer-protocol groups failed: %s", e)
                if now >= next_save:
                    next_save = now + int(cfg.snapshot_interval_s * 1000)
                    with self.monitor.lock:
                        self.monitor.save()
                wait = max(0.0, min(0.2, (self._next_poll - self.clock()) / 1000))
                if self._assigned:
                    self.consume(wait)
                else:
                    stop.wait(wait)
        finally:
            with self.monitor.lock:
                self.monitor.save()
            self.consumer.close()
            if self.markers is not None:
                self.markers.close()
            poller.join(30)   # a poll in flight ends within its request timeouts


class MetadataPoller:
    """Every offset-refresh: one Metadata request (brokers, leaders, replicas, ISR) and one ListOffsets for the
    earliest offsets, published to `monitor.cluster_meta`. Its own thread and client, so a slow or paused broker
    delays only this, never the collector's reading of `__consumer_offsets` and log ends."""

    def __init__(self, bootstrap: str, monitor: LagMonitor, clock: Callable[[], int] = wall_ms,
                 admin: AdminClient | None = None, client_props: dict[str, str] | None = None) -> None:
        self.monitor = monitor
        self.clock = clock
        self.admin = admin or AdminClient({"bootstrap.servers": bootstrap,
                                           "client.id": f"kafkascope-lag-meta-{monitor.config.cluster}",
                                           **(client_props or {})})

    def _publish(self, meta: topics.ClusterMeta) -> None:
        with self.monitor.lock:
            self.monitor.cluster_meta = meta

    def poll(self) -> None:
        """Metadata first, published at once with the previous oldest offsets (so a shrunk ISR shows without
        waiting for a ListOffsets a dead leader may hold up), then the fresh oldest offsets."""
        meta = topics.from_metadata(self.admin.list_topics(timeout=10), self.clock())
        prev = self.monitor.cluster_meta
        self._publish(meta.with_oldest(prev.oldest if prev else {}))
        request = {TopicPartition(t, p): OffsetSpec.earliest() for t, p in meta.led()}
        if not request:
            return
        oldest = {}
        for tp, fut in self.admin.list_offsets(request, request_timeout=10).items():
            try:
                oldest[(tp.topic, tp.partition)] = fut.result().offset
            except KafkaException as e:   # no series for it, as kafka_exporter skips an offset it cannot get
                log.debug("oldest offset of %s-%d: %s", tp.topic, tp.partition, e)
        self._publish(meta.with_oldest(oldest))

    def run(self, stop: threading.Event) -> None:
        interval = self.monitor.config.collector.offset_refresh_s
        offset = interval / 2   # it starts with the collector: later polls fall between its log-end polls
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.poll()
            except KafkaException as e:   # the last snapshot stays, as kafka_exporter keeps its cached metadata
                log.warning("topic metadata poll failed: %s", e)
            stop.wait(max(0.0, interval + offset - (time.monotonic() - started)))
            offset = 0.0
