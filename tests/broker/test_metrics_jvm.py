"""broker/metrics/jvm.py: the JVM dashboard series mapped onto the Python process."""

import resource

from broker.metrics.jvm import cgroup_memory_limit, heap_limit, jvm_families, parse_status

STATUS = """Name:\tpython
Threads:\t7
VmRSS:\t   41000 kB
RssAnon:\t   30000 kB
RssFile:\t   10000 kB
RssShmem:\t    1000 kB
"""


def test_status_fields_in_bytes():
    st = parse_status(STATUS)
    assert st["Threads"] == 7 and st["RssAnon"] == 30000 * 1024
    assert st["RssAnon"] + st["RssFile"] + st["RssShmem"] == st["VmRSS"]


def test_heap_max_is_the_smallest_limit_or_minus_one():
    inf = resource.RLIM_INFINITY
    assert heap_limit(inf, inf, None) == -1
    assert heap_limit(inf, inf, 9223372036854771712) == -1          # cgroup v1's "no limit"
    assert heap_limit(8 << 30, inf, 2 << 30) == 2 << 30
    assert heap_limit(inf, 1 << 30, 2 << 30) == 1 << 30


def test_cgroup_limit_v1_and_v2(tmp_path):
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "memory.max").write_text("536870912\n")
    assert cgroup_memory_limit("0::/kafka\n", tmp_path) == 536870912
    (tmp_path / "kafka" / "memory.max").write_text("max\n")
    assert cgroup_memory_limit("0::/kafka\n", tmp_path) is None
    v1 = tmp_path / "memory" / "pod"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("1073741824\n")
    assert cgroup_memory_limit("4:memory:/pod\n2:cpu:/\n", tmp_path) == 1073741824
    assert cgroup_memory_limit("4:memory:/elsewhere\n", tmp_path) is None   # nothing readable


def test_this_process_has_heap_threads_and_a_max():
    fams = {f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples} for f in jvm_families()}
    heap, nonheap = fams["jvm_memory_used_bytes"][(("area", "heap"),)], fams["jvm_memory_used_bytes"][(("area",
                                                                                                         "nonheap"),)]
    assert heap > 1 << 20 and nonheap > 0
    assert fams["jvm_memory_bytes_used"] == fams["jvm_memory_used_bytes"]
    top = fams["jvm_memory_max_bytes"][(("area", "heap"),)]
    assert top == -1 or top > heap
    assert fams["jvm_threads_current"][()] >= 1
