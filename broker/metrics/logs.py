"""The per-partition ``kafka.log:type=Log`` gauges (Kafka's UnifiedLog: Size, LogEndOffset, LogStartOffset,
NumLogSegments, tagged topic and partition), one value per local log, read at scrape time as columns.

Why columns: with 10,000 partitions the four families were a fifth of a scrape, each building a fresh
``(tags, value)`` pair (and the tags) per log. The tags of the current set of logs are built once and handed out as
the same tuple until that set changes (:class:`exporter.registry.Columns`); a scrape then only reads the values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter, is_not
from typing import Any

from exporter.registry import Columns, Registry, Tags

# (Kafka's gauge name, the PartitionLog attribute it reads)
LOG_GAUGES: tuple[tuple[str, str], ...] = (("Size", "size_bytes"), ("LogEndOffset", "log_end_offset"),
                                           ("LogStartOffset", "log_start_offset"), ("NumLogSegments", "segment_count"))


def partition_tags(topic: str, partition: int) -> Tags:
    """The tags of a per-partition gauge (kafka.log Log, kafka.cluster Partition)."""
    return (("topic", topic), ("partition", str(partition)))


def log_tags(log: Any) -> Tags:
    return partition_tags(log.topic, log.partition)


class LogColumns:
    """The tags of `logs()`'s logs, rebuilt only when the list holds other logs (or in another order) than
    last time: comparing two lists of the same objects by identity is a C loop over pointers, building 10,000 tags
    is not."""

    def __init__(self, logs: Callable[[], Sequence[Any]]) -> None:
        self._source = logs
        self._logs: Sequence[Any] = ()
        self._tags: tuple[Tags, ...] = ()

    def current(self) -> tuple[Sequence[Any], tuple[Tags, ...]]:
        logs = self._source()
        if len(logs) != len(self._logs) or any(map(is_not, logs, self._logs)):
            self._tags = tuple(map(log_tags, logs))
            self._logs = logs
        return self._logs, self._tags

    def column(self, read: Callable[[Any], float]) -> Columns:
        logs, tags = self.current()
        return Columns(tags, list(map(read, logs)))


def define_log_gauges(reg: Registry, logs: Callable[[], Sequence[Any]]) -> LogColumns:
    cols = LogColumns(logs)
    for name, attr in LOG_GAUGES:
        def column(read: Callable[[Any], float] = attrgetter(attr)) -> Columns:
            return cols.column(read)
        reg.gauge_family("kafka.log", "Log", name, column)
    return cols
