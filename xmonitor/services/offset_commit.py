"""Offset-commit service: every `offset.commit.interval.ms`, commit an offset for a probe group to its
coordinator and count success and failure and time the commit (counts, not Xinfra's averaged 1.0/NaN flags).

Xinfra sends a raw empty OffsetCommit; with confluent-kafka we commit offset 0 of partition 0 of the monitor
topic synchronously under `<group id>-offset-commit`, which exercises the same path (FindCoordinator + OffsetCommit).
"""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition

from common.clock import SYSTEM, Clock
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.services.base import Service, client_base, error_name, log


class OffsetCommitService(Service):
    name = "offset-commit"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, clock: Clock = SYSTEM) -> None:
        super().__init__(cfg, rec, clock)
        self.group_id = f"{cfg.group_id}-offset-commit"
        self.consumer = Consumer({**client_base(cfg), "group.id": self.group_id, "enable.auto.commit": False,
                                  "socket.timeout.ms": 10000, **cfg.consume_consumer_props})

    def commit_once(self) -> bool:
        t0 = self.clock.monotonic()
        try:
            self.consumer.commit(offsets=[TopicPartition(self.cfg.topic, 0, 0)], asynchronous=False)
        except KafkaException as e:
            log.warning("offset-commit: commit failed: %s", error_name(e))
            self.rec.record_commit("probe", False)
            return False
        self.rec.record_commit("probe", True, self.clock.monotonic() - t0)
        return True

    def run(self) -> None:
        if self.wait(min(1.0, self.cfg.offset_commit_interval_ms / 1000.0)):
            return
        while not self.stopping:
            if self.commit_once():
                self.rec.cycle_ok(self.name)
            if self.wait(self.cfg.offset_commit_interval_ms / 1000.0):
                return

    def close(self) -> None:
        self.consumer.close()
