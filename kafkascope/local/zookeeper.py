"""Run a real ZooKeeper (Debian's `zookeeper` package) on a free loopback port with its own data dir.

    with ZooKeeperServer(tmp_path / "zk") as zk:
        zk.connect("/kafkascope")   # "127.0.0.1:PORT/kafkascope"
        zk.mntr()["zk_server_state"]  # "standalone"

The server is `org.apache.zookeeper.server.ZooKeeperServerMain` (standalone, no quorum) with a generated
zoo.cfg (four-letter words mntr,ruok,srvr,stat allowed, admin server off) and log4j.properties (console to
DIR/zookeeper.log). Readiness is `ruok` answering `imok`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from common.polling import wait_until
from kafkascope.local import process as proc

JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
# zookeeper.jar's manifest Class-Path names most of these too; listing them keeps the classpath explicit,
# and adds the log4j 1.2 binding for slf4j (without it ZooKeeper logs nothing).
CLASSPATH_JARS = (
    "zookeeper.jar", "zookeeper-jute.jar",
    "netty-handler.jar", "netty-common.jar", "netty-buffer.jar", "netty-transport.jar", "netty-resolver.jar",
    "netty-codec.jar", "netty-transport-native-epoll.jar", "netty-transport-native-unix-common.jar",
    "slf4j-api.jar", "slf4j-log4j12.jar", "log4j-1.2.jar",
    "commons-cli.jar", "metrics-core.jar", "snappy-java.jar",
)
FOUR_LETTER_WORDS = "mntr,ruok,srvr,stat"
LOG4J = """\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
"""


class ZooKeeperUnavailable(RuntimeError):
    """Java or the zookeeper package is missing."""


def java_binary() -> str:
    java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
    if not Path(java).exists():
        raise ZooKeeperUnavailable("java not found (install openjdk-17-jre-headless)")
    return java


def classpath(conf_dir: Path | None = None) -> str:
    """The classpath: the conf dir (for log4j.properties) then the jars from /usr/share/java that exist."""
    if not (JAVA_DIR / "zookeeper.jar").exists():
        raise ZooKeeperUnavailable(f"{JAVA_DIR / 'zookeeper.jar'} not found (apt-get install zookeeper)")
    parts = [str(conf_dir)] if conf_dir else []
    parts += [str(JAVA_DIR / j) for j in CLASSPATH_JARS if (JAVA_DIR / j).exists()]
    return ":".join(parts)


def available() -> bool:
    try:
        java_binary()
        classpath()
        return True
    except ZooKeeperUnavailable:
        return False


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a four-letter command and return the whole answer ("" if nobody answers in time)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode(errors="replace")


def parse_mntr(text: str) -> dict[str, int | float | str]:
    out: dict[str, int | float | str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if not sep:
            continue
        value = value.strip()
        for conv in (int, float):
            try:
                out[key] = conv(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


class ZooKeeperServer:
    """One standalone ZooKeeper server: DIR/zoo.cfg, DIR/data, DIR/zookeeper.log."""

    def __init__(self, data_dir: Path | str, port: int | None = None, tick_time_ms: int = 500,
                 extra_cfg: dict[str, object] | None = None, heap_mb: int = 256) -> None:
        self.data_dir = Path(data_dir)
        self.host = "127.0.0.1"
        self.port = port or proc.free_port()
        self.tick_time_ms = tick_time_ms
        self.extra_cfg = dict(extra_cfg or {})
        self.heap_mb = heap_mb
        self.log_path = self.data_dir / "zookeeper.log"
        self.cfg_path = self.data_dir / "zoo.cfg"
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self.started: int | None = None  # /proc start time, guards against pid reuse

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self, chroot: str = "") -> str:
        """Connect string, e.g. connect("/kafkascope") -> "127.0.0.1:PORT/kafkascope"."""
        return self.host_port + chroot

    def config(self) -> dict[str, object]:
        cfg: dict[str, object] = {
            "tickTime": self.tick_time_ms,
            "dataDir": self.data_dir / "data",
            "clientPort": self.port,
            "clientPortAddress": self.host,
            "maxClientCnxns": 0,
            "minSessionTimeout": 2 * self.tick_time_ms,
            "maxSessionTimeout": 60_000,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": FOUR_LETTER_WORDS,
            "forceSync": "no",  # test clusters: no fsync per transaction
        }
        cfg.update(self.extra_cfg)
        return cfg

    def write_config(self) -> Path:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.cfg_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        (self.data_dir / "log4j.properties").write_text(LOG4J)
        return self.cfg_path

    def command(self) -> list[str]:
        return [java_binary(), f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.net.preferIPv4Stack=true", "-Dzookeeper.admin.enableServer=false",
                "-Dzookeeper.jmx.log4j.disable=true",
                "-cp", classpath(self.data_dir), MAIN_CLASS, str(self.cfg_path.resolve())]

    def start(self, timeout_s: float = 30.0) -> ZooKeeperServer:
        self.write_config()
        self.proc = proc.spawn(self.command(), self.log_path, cwd=self.data_dir)
        self.pid = self.proc.pid
        self.started = proc.start_time(self.pid)
        try:
            self.wait_ready(timeout_s)
        except Exception as e:
            self.kill()
            raise RuntimeError(f"ZooKeeper did not start: {e}\n--- {self.log_path} ---\n"
                               f"{proc.log_tail(self.log_path)}") from None
        return self

    def is_alive(self) -> bool:
        if self.proc is not None:
            self.proc.poll()
        return self.pid is not None and proc.alive(self.pid, self.started)

    def four_letter(self, word: str, timeout_s: float = 2.0) -> str:
        return four_letter_word(self.host, self.port, word, timeout_s)

    def ruok(self, timeout_s: float = 2.0) -> bool:
        return self.four_letter("ruok", timeout_s) == "imok"

    def mntr(self, timeout_s: float = 2.0) -> dict[str, int | float | str]:
        """`mntr` as a dict (zk_server_state, zk_num_alive_connections, zk_znode_count, ...); {} if no answer."""
        return parse_mntr(self.four_letter("mntr", timeout_s))

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        def ready() -> bool:
            if not self.is_alive():
                raise RuntimeError(f"ZooKeeper exited (code {self.proc.returncode if self.proc else '?'})")
            return self.ruok(0.5) and bool(self.mntr(0.5).get("zk_server_state"))
        wait_until(ready, timeout_s, interval_s=0.1, what=f"ZooKeeper imok on {self.host_port}")

    def pause(self) -> None:
        if self.pid:
            proc.signal_group(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.pid:
            proc.signal_group(self.pid, signal.SIGCONT)

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM and wait (SIGKILL after timeout_s)."""
        if self.pid:
            proc.terminate(self.pid, self.started, timeout_s)
        if self.proc is not None:
            self.proc.poll()

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.pid:
            proc.kill_group(self.pid, self.started)
        if self.proc is not None:
            self.proc.poll()

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
