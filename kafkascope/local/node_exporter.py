"""The Prometheus node exporter in the local stack (`kafkascope up`, part node-exporter): host CPU, memory,
network, disk I/O and filesystems, and which filesystem holds each broker's log dir.

node_exporter knows mount points, brokers know log dirs; PromQL cannot match a path to its longest mount-point
prefix, so the mapping is written as an info metric into node_exporter's textfile directory:

    kafkascope_logdir_mount_info{broker_id="1",logDir="/data/broker-1/logs",mountpoint="/data"} 1

The host dashboard and KafkaRunningOutOfSpace join node_filesystem_* on (instance, mountpoint) with it. On a
production host any script that writes the same lines (atomically) into the textfile directory does the same.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from dashboards.metrics import M

BINARIES = ("prometheus-node-exporter", "node_exporter")  # Debian's name, upstream's
DEBIAN_PACKAGE = "prometheus-node-exporter"
TEXTFILE = "kafkascope_logdirs.prom"
# Upstream's defaults, which Debian's build widens to /mnt, /media and /run: a --data-dir there must still show.
MOUNT_POINTS_EXCLUDE = "^/(dev|proc|run/credentials/.+|sys|var/lib/docker/.+|var/lib/containers/storage/.+)($|/)"
# Upstream's defaults without overlay: inside a container the data dir usually sits on the overlay root.
FS_TYPES_EXCLUDE = ("^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|iso9660"
                    "|mqueue|nsfs|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|tracefs)$")


def binary() -> str | None:
    """The node exporter on PATH, None when it is not installed."""
    for name in BINARIES:
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def command(exe: str, port: int, textfile_dir: Path, web_config: Path | None = None) -> list[str]:
    """node_exporter on 127.0.0.1:port with the log-dir textfile; loopback included (the stack's traffic);
    with `web_config`, TLS and basic auth from that exporter-toolkit file (node_exporter reads it natively)."""
    return [exe, f"--web.listen-address=127.0.0.1:{port}", f"--collector.textfile.directory={textfile_dir}",
            "--collector.netdev.device-exclude=",
            f"--collector.filesystem.mount-points-exclude={MOUNT_POINTS_EXCLUDE}",
            f"--collector.filesystem.fs-types-exclude={FS_TYPES_EXCLUDE}",
            *([f"--web.config.file={web_config}"] if web_config is not None else [])]


def read_mounts() -> str:
    """The mount table node_exporter reads: /proc/1/mounts, else /proc/self/mounts."""
    for path in ("/proc/1/mounts", "/proc/self/mounts"):
        try:
            return Path(path).read_text()
        except OSError:
            continue
    return ""


def mountpoints(mounts: str) -> list[str]:
    """Mount points of a /proc/<pid>/mounts text, spelt as node_exporter labels them (only \\040 and \\011
    decoded, as it does)."""
    out = []
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append(parts[1].replace("\\040", " ").replace("\\011", "\t"))
    return out


def mountpoint_of(path: str | Path, mounts: str) -> str:
    """The mount point holding `path`: the longest mount-point prefix of its resolved path."""
    p = os.path.realpath(path)
    best = "/"
    for m in mountpoints(mounts):
        if (p == m or p.startswith(m.rstrip("/") + "/")) and len(m) >= len(best):
            best = m
    return best


def _label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def logdir_textfile(log_dirs: Mapping[int, Sequence[str]], mounts: str) -> str:
    """The textfile: one kafkascope_logdir_mount_info line per broker log dir."""
    name = M.logdir_mount_info
    lines = [f"# HELP {name} The filesystem (node_filesystem_* mountpoint) holding a Kafka broker log dir.",
             f"# TYPE {name} gauge"]
    for broker_id, dirs in sorted(log_dirs.items()):
        for d in dirs:
            lines.append(f'{name}{{broker_id="{broker_id}",logDir="{_label(str(d))}",'
                         f'mountpoint="{_label(mountpoint_of(d, mounts))}"}} 1')
    return "\n".join(lines) + "\n"


def write_textfile(directory: Path, log_dirs: Mapping[int, Sequence[str]]) -> Path:
    """Write the textfile atomically (node_exporter may read the directory at any moment)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / TEXTFILE
    tmp = directory / f".{TEXTFILE}.tmp"  # node_exporter only reads *.prom
    tmp.write_text(logdir_textfile(log_dirs, read_mounts()))
    os.replace(tmp, path)
    return path
