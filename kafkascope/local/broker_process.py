"""Run our broker as a real subprocess on a free loopback port (the I/O edge tests talk to)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from common.polling import wait_for_port
from kafkascope.local.process import SOURCE_ROOT, child_env, free_port

ROOT = SOURCE_ROOT  # the checkout in a development tree: tests run `python -m kafkascope` from it


def proc_status_kb(pid: int, field: str) -> int:
    """A memory figure of a process from /proc/PID/status in kB (VmRSS: resident now, VmHWM: its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(f"{field} not in /proc/{pid}/status")


class BrokerProcess:
    """`python -m broker` with a generated server.properties; restartable over the same log dirs."""

    def __init__(self, data_dir: Path, port: int | None = None, **props: object) -> None:
        self.data_dir = Path(data_dir).resolve()  # the broker runs in it: log.dirs and config must not be relative
        self.port = port or free_port()
        self.props = {
            "broker.id": 0,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": 1,
            "offsets.topic.num.partitions": 5,
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 1000,
        }
        self.props.update({k.replace("_", "."): v for k, v in props.items()})
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "broker.log"
        self.preexec_fn: Callable[[], object] | None = None  # run in the child before exec, e.g. to set rlimits

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        return path

    def start(self, timeout_s: float = 30.0) -> BrokerProcess:
        cfg = self.write_config()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "broker", str(cfg)], cwd=self.data_dir, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=child_env(), preexec_fn=self.preexec_fn)
        try:
            proc = self.proc
            wait_for_port("127.0.0.1", self.port, lambda: proc.poll() is None, timeout_s)
        except Exception as e:
            self.kill()
            raise RuntimeError(f"{e}\n--- broker log ---\n{self.log_tail()}") from None
        return self

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 20.0) -> int | None:
        """SIGTERM (clean shutdown) and wait."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
