"""Real Apache Kafka as a local "reference peer" for benchmarks and compatibility tests.

The broker is not downloaded as a release tarball: its jars are resolved from Maven Central
(``org.apache.kafka:kafka_2.13:VERSION`` plus runtime dependencies and a log4j2 binding) with
Maven into ``~/.cache/kafkascope/apache-kafka-VERSION/libs`` and started straight from the
class path as a single-node KRaft broker+controller bound to 127.0.0.1 only.

    from kafkascope.local.apache_kafka import ApacheKafka, ensure_kafka

    libs = ensure_kafka()                  # idempotent; fast when cached
    with ApacheKafka() as k:
        k.bootstrap                        # "127.0.0.1:PORT"

What is fetched per version is pinned in ``apache_kafka_artifacts.txt`` next to this file (kafka_dist.py fetches it).  Apache Kafka
``ZK_VERSION`` (3.9.x, the last line with ZooKeeper mode) also brings its tools (``kafka-tools``) and the
Prometheus JMX exporter java agent; ``broker_command()`` builds the JVM command line of a ZooKeeper-mode broker
with that agent and ``write_jmx_rules()`` writes the Strimzi rules file we ship (used by the cluster
launcher's ``--impl apache-kafka``).  ``tool_command()`` runs one of Kafka's own tools by main class.

Java (>= 17) and Maven are installed with apt-get when missing and we are root (or have
passwordless sudo).  ``python -m benchmarks.reference_kafka`` is the command-line front end.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import exporter

# The distribution (Java, Maven, the jars) lives in kafka_dist; re-exported here, the module callers import.
from kafkascope.local.kafka_dist import (
    ARTIFACTS_FILE,
    DEFAULT_VERSION,
    MAVEN_CENTRAL,
    ZK_VERSION,
    ApacheKafkaError,
    _is_complete,  # noqa: F401  (tests/interop/conftest.py checks the cache through this module)
    _kafka_home,  # noqa: F401
    _run,
    _tail,
    artifacts,
    cache_root,
    ensure_java_and_maven,
    ensure_kafka,
    jmx_agent_jar,
    maven_central_reachable,
)

__all__ = [
    "ARTIFACTS_FILE",
    "DEFAULT_VERSION",
    "MAVEN_CENTRAL",
    "ZK_VERSION",
    "ApacheKafka",
    "ApacheKafkaError",
    "artifacts",
    "broker_command",
    "cache_root",
    "ensure_java_and_maven",
    "ensure_kafka",
    "jmx_agent_jar",
    "maven_central_reachable",
    "tool_command",
    "write_jmx_rules",
    "write_logging_config",
]

LOOPBACK = "127.0.0.1"

_HEAP_OPTS = "-Xmx1g -Xms256m"
# The performance options kafka-run-class.sh uses by default.
_JVM_PERF_OPTS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
]

_LOG4J2_PROPERTIES = """\
# Written by kafkascope kafkascope/local/apache_kafka.py: everything to stdout, which is
# redirected to the server log file.
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""

# The same for log4j 1 (reload4j), which is what Kafka 3.x logs through.
_LOG4J1_PROPERTIES = """\
log4j.rootLogger={level}, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.authorizer.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.state.change.logger=WARN
"""


def write_logging_config(directory: Path, level: str = "INFO") -> list[str]:
    """Write log4j 1 (reload4j, Kafka 3.x) and log4j2 (Kafka 4.x) configs to stdout; the -D options for both."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "log4j2.properties").write_text(_LOG4J2_PROPERTIES.format(level=level))
    (directory / "log4j.properties").write_text(_LOG4J1_PROPERTIES.format(level=level))
    return [f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
            f"-Dlog4j.configuration=file:{directory / 'log4j.properties'}"]


def broker_command(
    server_properties: Path,
    *,
    version: str = ZK_VERSION,
    metrics_port: int | None = None,
    heap_opts: str = "-Xmx512m -Xms128m",
    log_level: str = "INFO",
) -> list[str]:
    """The JVM command line of an Apache Kafka broker (kafka.Kafka server.properties), fetching the jars first.

    heap_opts: this launcher's small default fits several clusters on a test machine; KAFKA_HEAP_OPTS in the
    environment, as kafka-server-start.sh reads it, replaces it (Kafka's own default is -Xmx1G -Xms1G: a
    10,000-partition broker needs it to serve its JMX exporter's scrape).

    metrics_port: serve the JMX exporter's /metrics on 127.0.0.1:metrics_port with the rules of
    write_jmx_rules() (written next to server.properties as jmx_exporter.yml).
    """
    libs = ensure_kafka(version)
    java, _ = ensure_java_and_maven(need_maven=False)
    conf_dir = server_properties.parent
    opts = write_logging_config(conf_dir, log_level)
    if metrics_port is not None:
        agent = jmx_agent_jar(version)
        if agent is None:
            raise ApacheKafkaError(f"no JMX exporter agent is fetched with Apache Kafka {version}")
        rules = write_jmx_rules(conf_dir / "jmx_exporter.yml")
        opts.append(f"-javaagent:{agent}={LOOPBACK}:{metrics_port}:{rules}")
    heap = os.environ.get("KAFKA_HEAP_OPTS", "").strip() or heap_opts
    return [java, *heap.split(), *_JVM_PERF_OPTS, *opts, "-cp", f"{libs}/*",
            "kafka.Kafka", str(server_properties)]


def tool_command(main_class: str, *args: str, version: str = ZK_VERSION, heap_opts: str = "-Xmx512m") -> list[str]:
    """`java -cp libs/* MAIN ARGS` for one of Kafka's own tools (kafka-topics = org.apache.kafka.tools.TopicCommand,
    ...), quiet logging (WARN to stderr)."""
    libs = ensure_kafka(version)
    java, _ = ensure_java_and_maven(need_maven=False)
    conf = cache_root() / "tools-logging"
    if not (conf / "log4j.properties").is_file():
        write_logging_config(conf, "WARN")
    opts = [f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}",
            f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}"]
    return [java, *heap_opts.split(), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *opts,
            "-cp", f"{libs}/*", main_class, *args]


# The reference broker's jmx_exporter rules: the Strimzi file our brokers are named by by default
# (prometheus.naming=strimzi, exporter/rules/), so both sides of a comparison go through the same rules.
STRIMZI_RULES = Path(exporter.__file__).parent / "rules" / "strimzi-kafka-metrics.yaml"
# Rules for Kafka 4 MBeans no Strimzi pattern matches (the group coordinator), appended for KRaft nodes.
KRAFT_ADDITIONS = Path(exporter.__file__).parent / "rules" / "kafkascope-kraft-additions.yaml"


def write_jmx_rules(path: Path, kraft: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = STRIMZI_RULES.read_text()
    if kraft:   # Strimzi's file ends inside its top-level `rules:` list, so the additions extend that list
        text = text.rstrip("\n") + "\n" + KRAFT_ADDITIONS.read_text()
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- broker


def _free_ports(n: int, exclude: set[int]) -> list[int]:
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((LOOPBACK, 0))
            port = s.getsockname()[1]
            if port not in exclude:
                ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


def _random_cluster_id() -> str:
    # Same shape as org.apache.kafka.common.Uuid.randomUuid(): 22 chars of url-safe base64,
    # never starting with '-' (it would look like a CLI flag).
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _prop_value(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


_LIVE: weakref.WeakSet[ApacheKafka] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for k in list(_LIVE):
        with contextlib.suppress(Exception):
            k.stop()


class ApacheKafka:
    """A single-node KRaft (combined broker+controller) Apache Kafka on 127.0.0.1.

    ``port``: PLAINTEXT port (a free one if None).  ``log_dir``: Kafka's data dir (``log.dirs``);
    if given it is kept on exit and reused on the next start (formatting is skipped when it is
    already formatted), otherwise a temp dir is used and removed.  ``extra_props`` override or
    extend the generated server.properties.  The server's own log (stdout+stderr of the JVM) is
    ``server_log``, inside ``work_dir``, which is removed on exit.  ``metrics_port``: run the JMX exporter
    agent there (Strimzi rules plus KRAFT_ADDITIONS unless ``jmx_rules`` names another file).
    """

    def __init__(
        self,
        port: int | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        extra_props: Mapping[str, Any] | None = None,
        *,
        version: str = DEFAULT_VERSION,
        heap_opts: str = _HEAP_OPTS,
        startup_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        log_level: str = "INFO",
        metrics_port: int | None = None,
        jmx_rules: Path | None = None,
    ) -> None:
        self.version = version
        # The JMX exporter agent (fetched with ZK_VERSION; it runs on any Kafka) on 127.0.0.1:metrics_port, with
        # jmx_rules or, by default, the Strimzi rules of write_jmx_rules().
        self.metrics_port = metrics_port
        self.jmx_rules = jmx_rules
        self.requested_port = port
        self.requested_log_dir = Path(log_dir) if log_dir is not None else None
        self.extra_props = dict(extra_props or {})
        self.heap_opts = heap_opts
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.log_level = log_level
        self.port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None
        self.work_dir: Path | None = None
        self.log_dir: Path | None = None
        self.server_log: Path | None = None
        self.properties: dict[str, str] = {}
        self.process: subprocess.Popen | None = None
        self.startup_seconds: float | None = None

    # ---- public API

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise ApacheKafkaError("ApacheKafka is not started")
        return f"{LOOPBACK}:{self.port}"

    def __enter__(self) -> ApacheKafka:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ApacheKafka:
        if self.process is not None:
            raise ApacheKafkaError("already started")
        libs = ensure_kafka(self.version)
        java, _ = ensure_java_and_maven(need_maven=False)
        t0 = time.monotonic()
        self.work_dir = Path(tempfile.mkdtemp(prefix="kafkascope-apache-kafka-"))
        _LIVE.add(self)
        try:
            self._configure()
            classpath = f"{libs}/*"
            self.server_log = self.work_dir / "server.log"
            common = [*write_logging_config(self.work_dir, self.log_level), "-cp", classpath]
            self._format(java, common)
            with open(self.server_log, "ab") as out:
                self.process = subprocess.Popen(
                    [java, *self.heap_opts.split(), *_JVM_PERF_OPTS, *self._agent_opts(), *common,
                     "kafka.Kafka", str(self.work_dir / "server.properties")],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    cwd=self.work_dir, start_new_session=True,
                )  # fmt: skip
            self._wait_ready(t0 + self.startup_timeout)
            self.startup_seconds = time.monotonic() - t0
        except BaseException as e:
            report = self._failure_report()
            self.stop()
            if isinstance(e, ApacheKafkaError):
                raise ApacheKafkaError(f"{e}\n{report}") from None
            raise
        return self

    def _agent_opts(self) -> list[str]:
        if self.metrics_port is None:
            return []
        ensure_kafka(ZK_VERSION)
        agent = jmx_agent_jar(ZK_VERSION)
        assert agent is not None and self.work_dir is not None
        rules = self.jmx_rules or write_jmx_rules(self.work_dir / "jmx_exporter.yml", kraft=True)
        return [f"-javaagent:{agent}={LOOPBACK}:{self.metrics_port}:{rules}"]

    def stop(self) -> None:
        """Stop the broker (SIGTERM to its process group, SIGKILL after stop_timeout), clean up."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None
        _LIVE.discard(self)

    def log_tail(self, lines: int = 60) -> str:
        try:
            assert self.server_log is not None
            data = self.server_log.read_bytes()[-200_000:]
        except (AssertionError, OSError):
            return "(no server log)"
        return _tail(data.decode("utf-8", "replace"), lines)

    # ---- internals

    def _failure_report(self) -> str:
        """First ERROR lines (the cause; the tail is mostly shutdown noise) plus the log tail."""
        try:
            assert self.server_log is not None
            text = self.server_log.read_text("utf-8", "replace")
        except (AssertionError, OSError):
            return "(no server log)"
        lines = text.splitlines()
        first = [
            i for i, line in enumerate(lines) if " ERROR " in line or line.startswith(("Error", "Exception"))
        ]
        parts = []
        if first:
            i = first[0]
            parts.append("--- first error in server log ---\n" + "\n".join(lines[i : i + 12]))
        parts.append("--- server log tail ---\n" + _tail(text, 40))
        return "\n".join(parts)

    def _configure(self) -> None:
        assert self.work_dir is not None
        self.port = self.requested_port or _free_ports(1, set())[0]
        self.controller_port = _free_ports(1, {self.port})[0]
        if self.requested_log_dir is not None:
            self.log_dir = self.requested_log_dir.resolve()
            self.log_dir.mkdir(parents=True, exist_ok=True)
        else:
            self.log_dir = self.work_dir / "data"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"{LOOPBACK}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{LOOPBACK}:{self.port},CONTROLLER://{LOOPBACK}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{self.port},CONTROLLER://{LOOPBACK}:{self.controller_port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
        }
        props.update({k: _prop_value(v) for k, v in self.extra_props.items()})
        self.properties = props
        (self.work_dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _format(self, java: str, common: list[str]) -> None:
        assert self.work_dir is not None and self.log_dir is not None
        meta = self.log_dir / "meta.properties"
        if meta.is_file():
            m = re.search(r"^cluster\.id=(\S+)", meta.read_text(), re.M)
            self.cluster_id = m.group(1) if m else None
            return
        self.cluster_id = _random_cluster_id()
        # Short-lived tool: small heap, C1 only -> ~1 s faster than the defaults.
        cmd = [java, "-Xmx256m", "-XX:TieredStopAtLevel=1", *common, "kafka.tools.StorageTool", "format",
               "--cluster-id", self.cluster_id, "--config", str(self.work_dir / "server.properties"),
               "--standalone", "--ignore-formatted"]  # fmt: skip
        res = _run(cmd, timeout=120, cwd=self.work_dir)
        assert self.server_log is not None
        with open(self.server_log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{res.stdout}{res.stderr}\n")
        if res.returncode != 0:
            raise ApacheKafkaError(f"kafka.tools.StorageTool format failed (exit {res.returncode})")

    def _wait_ready(self, deadline: float) -> None:
        assert self.process is not None and self.port is not None
        while not _port_open(self.port):
            self._check_alive()
            if time.monotonic() > deadline:
                raise ApacheKafkaError(
                    f"Apache Kafka did not open {self.bootstrap} within {self.startup_timeout:.0f}s"
                )
            time.sleep(0.1)
        from confluent_kafka.admin import AdminClient

        # log_level 0: librdkafka would print "Connection refused" etc. to stderr while the broker
        # comes up (and after it dies); failures surface as exceptions here anyway.
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        try:
            self._wait_metadata(admin, deadline)
        finally:
            # AdminClient has no close(); drop the only reference so the librdkafka handle is
            # destroyed now, not whenever a traceback cycle holding this frame gets collected.
            del admin

    def _wait_metadata(self, admin: Any, deadline: float) -> None:
        last: Exception | None = None
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ApacheKafkaError(
                    f"Apache Kafka at {self.bootstrap} not answering metadata within "
                    f"{self.startup_timeout:.0f}s (last error: {last})"
                )
            try:
                md = admin.list_topics(timeout=min(5.0, max(remaining, 0.5)))
                if md.brokers:
                    return
            except Exception as e:  # KafkaException: transport / timeout while the broker comes up
                last = e
            time.sleep(0.1)

    def _check_alive(self) -> None:
        assert self.process is not None
        rc = self.process.poll()
        if rc is not None:
            raise ApacheKafkaError(f"Apache Kafka exited during startup with code {rc}")
