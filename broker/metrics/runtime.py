"""Process and runtime metrics: the event loop's idle share, Python's GC, disk I/O, free bytes per log dir."""

from __future__ import annotations

import asyncio
import gc
import logging
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from exporter.registry import Meter, RawFamily, RawSample

log = logging.getLogger(__name__)


class GcStats:
    """Collections and pause time per generation from ``gc.callbacks``."""

    def __init__(self) -> None:
        self._start = 0.0
        self.per_generation = {g: [0, 0.0] for g in range(3)}

    def install(self) -> None:
        gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            g = self.per_generation.get(info.get("generation", 0))
            if g is not None:
                g[0] += 1
                g[1] += time.perf_counter() - self._start

    def families(self) -> Iterable[RawFamily]:
        py, jvm = [], []
        for gen, (n, secs) in sorted(self.per_generation.items()):
            py += [RawSample("_count", {"generation": str(gen)}, n), RawSample("_sum", {"generation": str(gen)}, secs)]
            lbl = {"gc": f"python-gen{gen}"}
            jvm += [RawSample("_count", lbl, n), RawSample("_sum", lbl, secs)]
        yield RawFamily("python_gc_pause_seconds", "summary", "Python GC pauses per generation (gc.callbacks)", py)
        yield RawFamily("jvm_gc_collection_seconds", "summary",
                        "Python GC pauses, under the JVM GC name the dashboards query", jvm)


def install_idle_probe(meter: Meter) -> Callable[[], None] | None:
    """Time the running loop's blocking select() into `meter` (idle ns); returns the undo, None if impossible."""
    loop = asyncio.get_running_loop()
    selector = getattr(loop, "_selector", None)
    if selector is None:
        log.warning("event loop has no selector; idle metrics will read 0")
        return None
    orig = selector.select
    mark = meter.mark
    perf_ns = time.perf_counter_ns

    def select(timeout=None):  # noqa: ANN001, ANN202
        t = perf_ns()
        try:
            return orig(timeout)
        finally:
            mark(perf_ns() - t)

    selector.select = select

    def restore() -> None:
        selector.select = orig

    return restore


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
