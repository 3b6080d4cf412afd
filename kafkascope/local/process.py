"""Subprocess plumbing shared by the ZooKeeper runner and the cluster launcher.

Every process runs in its own session (process group), so a signal reaches the whole tree. A process is
identified by its pid *and* its start time (from /proc), so a recycled pid is never mistaken for ours.
"""

from __future__ import annotations

import os
import random
import signal
import site
import socket
import subprocess
from pathlib import Path

import kafkascope
from common.polling import wait_until

# The directory holding our top-level packages (broker, exporter, kafkascope, ...): the checkout when run from
# one, site-packages when installed.
SOURCE_ROOT = Path(kafkascope.__file__).resolve().parents[1]
RUNNING, PAUSED, STOPPED, DEAD = "running", "paused", "stopped", "dead"


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_PORTS_BELOW_EPHEMERAL = 12_000
_handed_out: set[int] = set()


def free_port(rng: random.Random | None = None, ephemeral_range: Path = _EPHEMERAL_RANGE) -> int:
    """A port on 127.0.0.1 that is free now, below the kernel's ephemeral range when it is known. A port from
    bind(0) lies inside that range, so a client connection elsewhere could take it as its local port before our
    server binds it (seen: a broker dying with EADDRINUSE at cluster start); below the range only another server
    can. Ports already handed out by this process are not handed out again."""
    try:
        low = int(ephemeral_range.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    first = max(1024, low - _PORTS_BELOW_EPHEMERAL)
    rng = rng or random.SystemRandom()
    for _ in range(100 if low > first else 0):
        port = rng.randrange(first, low)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as s:   # no range known, or nothing free below it: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(root: Path = SOURCE_ROOT) -> dict[str, str]:
    """The environment for a Python child (`sys.executable -m ...`): ours, unbuffered, and able to import our
    packages whatever its cwd. An installed package is on every interpreter's site path already; a checkout
    run without installing (found through cwd or PYTHONPATH) goes on the child's PYTHONPATH."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not _on_site_path(root):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


def _on_site_path(root: Path) -> bool:
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return any(Path(d).resolve() == root for d in dirs)


def spawn(cmd: list[str], log_path: Path, cwd: Path | str | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `cmd` in a new session with stdout+stderr appended to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces or parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2:].split()


def start_time(pid: int) -> int | None:
    """Process start time in clock ticks since boot (field 22 of /proc/PID/stat), None if there is no such pid."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def os_state(pid: int | None, started: int | None = None) -> str:
    """running / paused / dead for a pid as the kernel sees it (a zombie counts as dead)."""
    if not pid:
        return DEAD
    fields = _stat_fields(pid)
    if fields is None or (started is not None and int(fields[19]) != started):
        return DEAD
    code = fields[0]
    if code in ("Z", "X", "x"):
        return DEAD
    if code in ("T", "t"):
        return PAUSED
    return RUNNING


def alive(pid: int | None, started: int | None = None) -> bool:
    return os_state(pid, started) != DEAD


def signal_group(pid: int, sig: int) -> bool:
    """Send `sig` to the process group led by `pid` (falls back to the pid alone). False if nothing was there."""
    try:
        os.killpg(pid, sig)
        return True
    except ProcessLookupError:
        pass
    except PermissionError:
        return False
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def reap(pid: int) -> None:
    """Collect the exit status if `pid` is our child (no-op otherwise)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_dead(pid: int, started: int | None, timeout_s: float) -> bool:
    """Wait for the process to exit (reaping it if it is our child); True if it did."""
    def gone() -> bool:
        reap(pid)
        return not alive(pid, started)
    try:
        wait_until(gone, timeout_s, what=f"exit of pid {pid}")
        return True
    except TimeoutError:
        return False


def terminate(pid: int, started: int | None, timeout_s: float = 20.0) -> str:
    """SIGTERM the group (resuming it first if paused, or it could never handle the signal) and wait;
    SIGKILL after `timeout_s`. Returns "stopped" on a clean exit, "killed" if SIGKILL was needed, "gone" if
    nothing was running."""
    if not alive(pid, started):
        reap(pid)
        return "gone"
    signal_group(pid, signal.SIGTERM)
    signal_group(pid, signal.SIGCONT)
    if wait_dead(pid, started, timeout_s):
        return "stopped"
    signal_group(pid, signal.SIGKILL)
    wait_dead(pid, started, 10.0)
    return "killed"


def kill_group(pid: int, started: int | None, timeout_s: float = 10.0) -> None:
    if alive(pid, started):
        signal_group(pid, signal.SIGKILL)
    wait_dead(pid, started, timeout_s)


def log_tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""
