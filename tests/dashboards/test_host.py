"""Host metrics: the node exporter part of `kafkascope up` (kafkascope/local/node_exporter.py) and the Hosts dashboard.

* the log-dir textfile maps each broker log dir to the mount point holding it (longest prefix, node exporter's
  spelling);
* a missing node exporter is reported and the stack starts without it;
* on a real Prometheus scraping a real node exporter (and the three brokers, for their CPU and GC panels) every
  Hosts dashboard query returns a number (disk reads and writes are caused for real: an fsync'd write and an
  O_DIRECT read), and the log-dir join picks the filesystem that statvfs says holds the log dirs.
"""

from __future__ import annotations

import math
import mmap
import os
import shutil
from pathlib import Path

import pytest

from dashboards import build, grafana
from kafkascope.local import node_exporter
from kafkascope.local.stack.local import Stack
from kafkascope.local.stack.procs import prometheus_query
from tests.e2e.helpers import wait_until

needs_binaries = pytest.mark.skipif(
    shutil.which("prometheus") is None or node_exporter.binary() is None,
    reason="Debian packages `prometheus` and `prometheus-node-exporter` needed")

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
/dev/vdb /data xfs rw 0 0
/dev/vdc /data/kafka\\040logs ext4 rw 0 0
tmpfs /data/kafka-ram tmpfs rw 0 0
"""


def test_mountpoint_of_is_the_longest_mount_prefix():
    assert node_exporter.mountpoint_of("/data/kafka logs/b1", MOUNTS) == "/data/kafka logs"
    assert node_exporter.mountpoint_of("/data/kafka logs", MOUNTS) == "/data/kafka logs"
    assert node_exporter.mountpoint_of("/data/kafka-ram/b2", MOUNTS) == "/data/kafka-ram"
    assert node_exporter.mountpoint_of("/data/kafka/b3", MOUNTS) == "/data"  # a prefix of a name is no parent
    assert node_exporter.mountpoint_of("/srv/kafka", MOUNTS) == "/"
    assert node_exporter.mountpoint_of("/srv/kafka", "") == "/"


def test_logdir_textfile():
    text = node_exporter.logdir_textfile({2: ["/data/kafka logs/b2"], 1: ["/srv/a", '/srv/"b"']}, MOUNTS)
    lines = [x for x in text.splitlines() if not x.startswith("#")]
    assert lines == [
        'kafkascope_logdir_mount_info{broker_id="1",logDir="/srv/a",mountpoint="/"} 1',
        'kafkascope_logdir_mount_info{broker_id="1",logDir="/srv/\\"b\\"",mountpoint="/"} 1',
        'kafkascope_logdir_mount_info{broker_id="2",logDir="/data/kafka logs/b2",mountpoint="/data/kafka logs"} 1']
    assert "# TYPE kafkascope_logdir_mount_info gauge" in text


@pytest.mark.timeout(120)
def test_up_without_a_node_exporter_says_so_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(node_exporter, "BINARIES", ("kafkascope-test-no-such-node-exporter",))
    said: list[str] = []
    s = Stack(tmp_path, parts=["node-exporter"])
    try:
        s.start(progress=said.append)
        assert "node-exporter" not in s.children and "node" not in s.targets()
        assert not any("node exporter" in label for label, _ in s.urls())
    finally:
        s.stop()
    assert any("node exporter not installed" in m and "apt-get install prometheus-node-exporter" in m
               for m in said), said
    assert said[-1].endswith("ready"), said


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("host"), parts=["node-exporter", "prometheus"], scrape_interval="1s")
    s.start(progress=print)
    yield s
    s.stop()


def _disk_io(directory: Path) -> None:
    """An fsync'd write and an O_DIRECT read of it: I/Os the disk itself completes (not the page cache)."""
    path = directory / "io-probe"
    size = 4 << 20
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:  # tmpfs and some overlays refuse O_DIRECT: no disk below to measure
        pytest.skip(f"O_DIRECT read impossible in {directory}: {e}")
    buf = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT needs
    try:
        for _ in range(size >> 20):
            if os.readv(fd, [buf]) <= 0:
                break
    finally:
        os.close(fd)
        buf.close()
        path.unlink()


def _numbers(prom: str, expr: str) -> list[float]:
    return [v for r in prometheus_query(prom, expr) if math.isfinite(v := float(r["value"][1]))]


@needs_binaries
@pytest.mark.timeout(180)
def test_every_host_query_has_a_number(stack):
    prom = stack.children["prometheus"].url
    assert "node" in stack.targets() and stack.children["node-exporter"].popen.poll() is None
    wait_until(lambda: _numbers(prom, f'up{{job="{build.JOB_NODE}"}}') == [1.0], 30, 0.5, "node exporter scraped")
    _disk_io(stack.data_dir)
    queries = [(t, e) for d, t, e in grafana.queries() if d == "host"]
    assert len(queries) > 20

    left = queries

    def all_have_numbers() -> bool:
        nonlocal left
        left = [(t, e) for t, e in left if not _numbers(prom, e)]
        return not left

    try:
        wait_until(all_have_numbers, 60, 1.0, "a number for every host query")
    except AssertionError:
        raise AssertionError("host queries without a number:\n" + "\n".join(f"{t}: {e}" for t, e in left)) from None


@needs_binaries
def test_log_dir_join_picks_the_filesystem_holding_the_log_dirs(stack):
    prom = stack.children["prometheus"].url
    info = wait_until(lambda: prometheus_query(prom, build.M.logdir_mount_info), 30, 0.5, "the log-dir textfile")
    dirs = {str(b): d for b, ds in stack.launcher.log_dirs.items() for d in ds}
    assert {(r["metric"]["broker_id"], r["metric"]["logDir"]) for r in info} == set(dirs.items())
    mounts = {r["metric"]["mountpoint"] for r in info}
    assert len(mounts) == 1, mounts  # every log dir lives under one data dir here
    [free] = wait_until(lambda: prometheus_query(prom, build.logdir_fs_free_ratio()), 30, 0.5, "the join")
    assert free["metric"]["mountpoint"] in mounts
    st = os.statvfs(next(iter(dirs.values())))
    size = prometheus_query(prom, f'{build.M.node_fs_size}{{mountpoint="{free["metric"]["mountpoint"]}"}}')
    assert [float(r["value"][1]) for r in size] == [st.f_blocks * st.f_frsize]
    assert float(free["value"][1]) == pytest.approx(st.f_bavail / st.f_blocks, abs=0.01)
