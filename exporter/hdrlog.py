"""HdrHistogram interval logs (the standard V2 compressed ``.hlog`` format), one file per series.

Uses ``hdrh.log.HistogramLogWriter`` for the interval lines and writes the ``#[StartTime: ...]`` header itself
(rather than through the Python writer's ``output_start_time``). Values are microseconds; the interval
max column is in milliseconds (``max_value_unit_ratio=1000``). Timestamps are absolute seconds since the epoch
(BaseTime 0), so logs from several brokers merge directly.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from hdrh.log import HistogramLogWriter

from common.hdr import record_counts
from exporter.timer import new_hdr


def _file_safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", s)


class IntervalLogWriter:
    """Appends one interval line per call to ``<dir>/<name>.hlog``."""

    def __init__(self, directory: Path, name: str, start_wall_s: float) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{_file_safe(name)}.hlog"
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._f = open(self.path, "a")  # kept open for the broker's lifetime
        self._w = HistogramLogWriter(self._f)
        if new:
            self._w.output_comment(f"kafkascope interval log: {name} (values in microseconds)")
            self._w.output_log_format_version()
            when = dt.datetime.fromtimestamp(start_wall_s, dt.UTC).isoformat()
            self._f.write(f"#[StartTime: {start_wall_s:f} (seconds since epoch), {when}]\n")  # %f as the lines
            self._w.output_legend()
        self._hist = new_hdr()

    def write(self, interval: dict[int, int], start_wall_s: float, end_wall_s: float) -> None:
        h = self._hist
        record_counts(h, interval.items())
        self._w.output_interval_histogram(h, start_wall_s, end_wall_s, max_value_unit_ratio=1000.0)
        self._f.flush()
        self._hist = new_hdr()  # reset() is a 23k-step Python loop; a fresh array is cheaper

    def close(self) -> None:
        self._f.close()
