"""Consume service: reads every partition of the monitor topic back and accounts for each probe record.

Partitions are assigned directly (no group rebalances: a rebalance replays or skips records, Xinfra #303) under
the monitor's own group id, which its async offset commits use (Xinfra's commit-availability/-latency metrics).
A partition first seen at start is read from its end (records of an earlier run are not ours to judge); one added
later is read from its beginning (it only holds this run's records). Delay = consume time − send time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from common.clock import SYSTEM, Clock
from xmonitor import payload
from xmonitor.accounting import ConsumeAccounting
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.services.base import Service, client_base, error_name, log


class ConsumeService(Service):
    name = "consume"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, clock: Clock = SYSTEM) -> None:
        super().__init__(cfg, rec, clock)
        self.accounting = ConsumeAccounting(cfg.consume_loss_grace_ms)
        self._commit_started: float | None = None
        conf: dict[str, Any] = {**client_base(cfg), "group.id": cfg.group_id, "client.id": f"{cfg.group_id}-consumer",
                                "enable.auto.commit": False, "auto.offset.reset": "latest",
                                "enable.partition.eof": False, "on_commit": self._on_commit,
                                **cfg.consume_consumer_props}
        self.consumer = Consumer(conf)
        self.assigned: set[int] = set()
        self._started = False
        # (partition, index, consumed wall µs) of each decoded probe record: the transactional mode's
        # visibility delay (xmonitor/txn.py)
        self.on_probe: Callable[[int, int, int], None] | None = None

    def _on_commit(self, err, _partitions) -> None:
        started, self._commit_started = self._commit_started, None
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return                                  # nothing consumed yet: not a commit
        latency = self.clock.monotonic() - started if started is not None else None
        self.rec.record_commit("consumer", err is None, latency)

    def refresh_assignment(self) -> None:
        md = self.consumer.list_topics(self.cfg.topic, timeout=5)
        tmd = md.topics.get(self.cfg.topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            return
        new = sorted(set(tmd.partitions) - self.assigned)
        if not new:
            return
        start = OFFSET_BEGINNING if self._started else OFFSET_END
        self.consumer.incremental_assign([TopicPartition(self.cfg.topic, p, start) for p in new])
        self.assigned.update(new)
        self._started = True
        log.info("consume: assigned partitions %s", new)

    def handle(self, msg, now_us: int) -> None:
        """`now_us`: when the record reached us (one reading per batch, so our own accounting of a batch's first
        records never adds to the delay of its last ones)."""
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                self.rec.record_consume_error()
            return
        value = msg.value()
        try:
            probe = payload.decode(value, msg.partition())
        except payload.PayloadError:
            self.rec.record_consume_error()
            return
        if self.on_probe is not None:
            self.on_probe(msg.partition(), probe.index, now_us)
        outcome = self.accounting.observe(probe, msg.partition(), now_us // 1000)
        self.rec.record_consumed(msg.partition(), outcome, (now_us - probe.time_us) / 1e6, len(value or b""))

    def expire(self) -> None:
        for p, n in self.accounting.expire(self.clock.now_ms()).items():
            self.rec.record_lost(p, n)

    def run(self) -> None:
        meta_every = self.cfg.metadata_refresh_interval_ms / 1000.0
        commit_every = self.cfg.consume_commit_interval_ms / 1000.0
        last_meta = last_commit = last_expire = -1e18
        while not self.stopping:
            now = self.clock.monotonic()
            if now - last_meta >= meta_every:
                last_meta = now
                try:
                    self.refresh_assignment()
                except KafkaException as e:
                    log.warning("consume: metadata failed: %s", error_name(e))
            # poll() returns at the first record (consume(n, t) would wait to fill n: latency), then drain
            msg = self.consumer.poll(0.05)
            if msg is not None:
                batch = self.consumer.consume(500, 0)
                now_us = self.clock.wall_us()
                self.handle(msg, now_us)
                for msg in batch:
                    self.handle(msg, now_us)
            now = self.clock.monotonic()
            if now - last_expire >= 0.2:
                last_expire = now
                self.expire()
                self.rec.cycle_ok(self.name)
            if self.assigned and now - last_commit >= commit_every and self._commit_started is None:
                last_commit = now
                self._commit_started = now
                try:
                    self.consumer.commit(asynchronous=True)
                except KafkaException as e:
                    self._commit_started = None
                    if e.args[0].code() != KafkaError._NO_OFFSET:
                        self.rec.record_commit("consumer", False)

    def close(self) -> None:
        self.consumer.close()
