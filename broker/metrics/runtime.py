"""Process and runtime metrics: Python's GC, disk I/O, free bytes per log dir (the event loop's idle share is
broker/event_loop.py's)."""

from __future__ import annotations

import gc
import logging
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from exporter.registry import RawFamily, RawSample

log = logging.getLogger(__name__)


class GcStats:
    """Collections and pause time per generation from ``gc.callbacks``."""

    def __init__(self) -> None:
        self._start = 0.0
        self.per_generation = {g: [0, 0.0] for g in range(3)}
        self.longest_s = 0.0   # the longest single collection

    def install(self) -> None:
        gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            took = time.perf_counter() - self._start
            self.longest_s = max(self.longest_s, took)
            g = self.per_generation.get(info.get("generation", 0))
            if g is not None:
                g[0] += 1
                g[1] += took

    def families(self) -> Iterable[RawFamily]:
        py, jvm = [], []
        for gen, (n, secs) in sorted(self.per_generation.items()):
            py += [RawSample("_count", {"generation": str(gen)}, n), RawSample("_sum", {"generation": str(gen)}, secs)]
            lbl = {"gc": f"python-gen{gen}"}
            jvm += [RawSample("_count", lbl, n), RawSample("_sum", lbl, secs)]
        yield RawFamily("python_gc_pause_seconds", "summary", "Python GC pauses per generation (gc.callbacks)", py)
        yield RawFamily("jvm_gc_collection_seconds", "summary",
                        "Python GC pauses, under the JVM GC name the dashboards query", jvm)


def proc_io() -> dict[str, int]:
    try:
        with open("/proc/self/io") as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}
    except OSError:
        return {}


def free_bytes(d: Path) -> int:
    try:
        return shutil.disk_usage(d).free
    except OSError:
        return 0
