"""The per-partition ``kafka.log:type=Log`` gauges (Kafka's UnifiedLog: Size, LogEndOffset, LogStartOffset,
NumLogSegments, tagged topic and partition), one value per local log, read at scrape time as columns.

Why columns: with 10,000 partitions the four families were a fifth of a scrape, each building a fresh
``(tags, value)`` pair (and the tags) per log. The tags of the current set of logs are built once and handed out as
the same tuple until that set changes (:class:`exporter.registry.Columns`); a scrape then only reads the values.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
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


LOG_STEP = 1000  # logs read between two yields when the columns are made before a scrape (~3 ms)


class LogColumns:
    """The tags of `logs()`'s logs, rebuilt only when the list holds other logs (or in another order) than
    last time: comparing two lists of the same objects by identity is a C loop over pointers, building 10,000 tags
    is not.

    A read of the registry first makes every column in steps of `LOG_STEP` logs (`prepare_steps`, a
    Registry.before_read hook), and each family then takes its own: at 10,000 partitions the four columns took
    35 ms of a broker's loop in one piece, Size (a sum over the segments, under the log's lock) 24 of them."""

    def __init__(self, logs: Callable[[], Sequence[Any]]) -> None:
        self._source = logs
        self._logs: Sequence[Any] = ()
        self._tags: tuple[Tags, ...] = ()
        self._ready: dict[str, Columns] = {}

    def current(self) -> tuple[Sequence[Any], tuple[Tags, ...]]:
        logs = self._source()
        if len(logs) != len(self._logs) or any(map(is_not, logs, self._logs)):
            self._tags = tuple(map(log_tags, logs))
            self._logs = logs
        return self._logs, self._tags

    def prepare_steps(self) -> Generator[None, None, None]:
        """Every column, made `LOG_STEP` logs at a time; the next `column` of each attribute takes it."""
        logs, tags = self.current()
        made: dict[str, list[float]] = {attr: [] for _, attr in LOG_GAUGES}
        for start in range(0, len(logs), LOG_STEP):
            chunk = logs[start:start + LOG_STEP]
            for attr, values in made.items():
                values.extend(map(attrgetter(attr), chunk))
            yield
        self._ready = {attr: Columns(tags, values) for attr, values in made.items()}

    def column(self, attr: str) -> Columns:
        """The column `prepare_steps` made for this read, else read now."""
        ready = self._ready.pop(attr, None)
        if ready is not None:
            return ready
        logs, tags = self.current()
        return Columns(tags, list(map(attrgetter(attr), logs)))


def define_log_gauges(reg: Registry, logs: Callable[[], Sequence[Any]]) -> LogColumns:
    cols = LogColumns(logs)
    for name, attr in LOG_GAUGES:
        def column(attr: str = attr) -> Columns:
            return cols.column(attr)
        reg.gauge_family("kafka.log", "Log", name, column)
    reg.before_read(cols.prepare_steps)
    return cols
