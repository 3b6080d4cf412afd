"""The JVM series the community dashboards chart, for a broker that has no JVM (docs/metrics-jvm-mapping.md).

jmx_exporter adds ``jvm_*`` series from the JVM's own MXBeans; the Strimzi and Confluent dashboards chart heap
used/max, live threads and GC. Ours is one CPython process, so each series is mapped to the closest honest
quantity of that process, read from /proc at scrape time (Linux):

* ``jvm_memory_used_bytes{area="heap"}``: RssAnon, the resident anonymous memory: every Python object, pymalloc
  arena, malloc'd buffer and anonymous mapping (request frames of 1 MiB and more are anonymous mappings) that is in
  RAM. Like a JVM heap's "used", it includes garbage not yet collected and freed memory the allocator kept.
  ``{area="nonheap"}``: RssFile + RssShmem, the resident file-backed pages: the interpreter, extension modules and
  mapped files (the closest to the JVM's code cache and metaspace). Their sum is the process RSS
  (``process_resident_memory_bytes``), so a panel that sums the areas charts the RSS.
* ``jvm_memory_max_bytes{area="heap"}``: the limit at which allocation fails, the smallest of RLIMIT_AS,
  RLIMIT_DATA and the cgroup memory limit; -1 when there is none (the JVM's "undefined"). ``{area="nonheap"}``: -1.
* The same two under jmx_exporter 0.x's names ``jvm_memory_bytes_used`` / ``jvm_memory_bytes_max``, which the
  Confluent dashboard still queries.
* ``jvm_threads_current``: the process's OS threads (/proc "Threads"): the event loop, kazoo's and executor threads.
* ``jvm_gc_collection_seconds{gc="python-gen<N>"}``: CPython's collections and pauses per generation (runtime.GcStats).

Not exported: committed/init memory and memory pools (nothing in CPython corresponds), class loading, JIT
compilation, buffer pools. ``process_*`` (CPU seconds, open and max fds, resident and virtual memory, start time)
come from prometheus-client's process collector, which the exporter registers next to our registry.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from pathlib import Path

from exporter.registry import RawFamily, RawSample

UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def parse_status(text: str) -> dict[str, int]:
    """/proc/<pid>/status fields that hold numbers, "kB" ones in bytes."""
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def heap_limit(rlimit_as: int, rlimit_data: int, cgroup_max: int | None) -> int:
    """The smallest finite memory limit, or -1 without one."""
    limits = [v for v in (rlimit_as, rlimit_data) if v not in (resource.RLIM_INFINITY, -1) and v < UNLIMITED]
    if cgroup_max is not None and cgroup_max < UNLIMITED:
        limits.append(cgroup_max)
    return min(limits, default=-1)


def cgroup_memory_limit(proc_cgroup: str, root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """This process's cgroup memory limit (v2 memory.max or v1 memory.limit_in_bytes), None when unknown or none.
    The cgroup's own directory is tried first, then the mount's root (what a container sees as its own)."""
    candidates = []
    for line in proc_cgroup.splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        rel = path.strip().lstrip("/")
        if controllers == "":
            candidates += [root / rel / "memory.max", root / "memory.max"]
        elif "memory" in controllers.split(","):
            candidates += [root / "memory" / rel / "memory.limit_in_bytes", root / "memory" / "memory.limit_in_bytes"]
    for f in candidates:
        try:
            text = f.read_text().strip()
        except OSError:
            continue
        return None if text == "max" else int(text)
    return None


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def jvm_families() -> Iterable[RawFamily]:
    """The jvm_memory_* and jvm_threads_current families of this process, now."""
    st = parse_status(_read(f"/proc/{os.getpid()}/status"))
    if not st:
        return
    heap = st.get("RssAnon", 0)
    nonheap = st.get("RssFile", 0) + st.get("RssShmem", 0)
    limit = heap_limit(resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_DATA)[0],
                       cgroup_memory_limit(_read("/proc/self/cgroup")))
    used = [RawSample("", {"area": "heap"}, heap), RawSample("", {"area": "nonheap"}, nonheap)]
    top = [RawSample("", {"area": "heap"}, limit), RawSample("", {"area": "nonheap"}, -1)]
    yield RawFamily("jvm_memory_used_bytes", "gauge", "Resident anonymous (heap) and file-backed (nonheap) bytes", used)
    yield RawFamily("jvm_memory_max_bytes", "gauge", "Smallest memory limit (rlimits, cgroup); -1 for none", top)
    yield RawFamily("jvm_memory_bytes_used", "gauge", "jvm_memory_used_bytes under jmx_exporter 0.x's name", used)
    yield RawFamily("jvm_memory_bytes_max", "gauge", "jvm_memory_max_bytes under jmx_exporter 0.x's name", top)
    yield RawFamily("jvm_threads_current", "gauge", "OS threads of the broker process",
                    [RawSample("", {}, st.get("Threads", 0))])
