"""Telling commit markers from lag (docs/lag-monitor.md §6.2): a read_committed consumer that commits right after
a transaction's last record commits the offset of the commit marker that follows it (KIP-98 control record),
which it never receives. Its offset is then below the Last Stable Offset with nothing left to read. The only way
to know is to read the range [committed, LSO) with isolation.level=read_committed: no record means caught up."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

log = logging.getLogger(__name__)


class MarkerReader:
    """One read_committed consumer, assigned one range at a time; never commits and joins no group."""

    def __init__(self, conf: dict[str, str], timeout_s: float = 2.0) -> None:
        self.timeout_s = timeout_s
        self.consumer = Consumer({**conf, "group.id": "kafkascope-lag-markers", "enable.auto.commit": False,
                                  "isolation.level": "read_committed", "enable.partition.eof": True,
                                  "fetch.wait.max.ms": 100})

    def nothing_readable(self, topic: str, partition: int, start: int, end: int) -> bool | None:
        """True if [start, end) holds no record a read_committed consumer receives, False if it holds one, None
        if the read did not finish in time (left for the next poll)."""
        self.consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + self.timeout_s
        try:
            while time.monotonic() < deadline:   # bounded: one range, timeout_s at most
                m = self.consumer.poll(0.1)
                if m is None:
                    continue
                err = m.error()
                if err is None:
                    return m.offset() >= end
                if err.code() == KafkaError._PARTITION_EOF:
                    # librdkafka's EOF under read_committed is at the LSO (its fetch end), at or past `end`:
                    # anything readable before it would have come first
                    return m.offset() >= end
                log.debug("reading %s-%d from %d: %s", topic, partition, start, err)
            return None
        finally:
            self.consumer.unassign()

    def close(self) -> None:
        self.consumer.close()
