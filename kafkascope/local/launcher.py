"""A local cluster: one ZooKeeper and N brokers as subprocesses, driven through a state file.

    launcher = ClusterLauncher(data_dir, brokers=3, racks=["a", "b", "c"]).start_all()
    launcher.bootstrap                 # "127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2"
    launcher.kill(1); launcher.start(1); launcher.pause("zk"); launcher.resume("zk")
    launcher.shutdown()

impl="apache-kafka" runs real Apache Kafka 3.9 brokers (ZooKeeper mode, jars fetched from Maven Central on first
use by kafkascope/local/apache_kafka.py) instead of ours, each with the Prometheus JMX exporter agent serving
/metrics on its own port (Strimzi-convention rules, broker-<id>/jmx_exporter.yml): the reference peer.

Layout under data_dir:
    cluster.json             pids (with /proc start times), ports, last action per process, connect strings
    cluster.lock             flock held around every read-modify-write of cluster.json
    zookeeper/               zoo.cfg, data/, zookeeper.log
    broker-<id>/             server.properties, logs/, broker.log

Every process runs in its own process group. Another `ClusterLauncher.attach(data_dir)` (the CLI in another
terminal, or a test) acts on the same processes through cluster.json. The state shown by `status()` is
checked against the kernel: a pid that is gone is "stopped" if we stopped it, else "dead".
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from broker.network.client_security import ClientSecurity
from broker.replication.client import BrokerConnection
from common.polling import wait_for_port, wait_until
from kafkascope.local import apache_kafka
from kafkascope.local import process as proc
from kafkascope.local import security as seckit
from kafkascope.local.zookeeper import ZooKeeperServer

CHROOT = "/kafkascope"
ZK_ID = "zk"
IMPLS = ("kafkascope", "apache-kafka")
STATE_FILE = "cluster.json"
KRAFT_FILE = "kraft.json"   # written by kraft.KRaftLauncher beside STATE_FILE: the directory holds a KRaft cluster
LOCK_FILE = "cluster.lock"


class ClusterError(RuntimeError):
    """A bad request (unknown id, no cluster on that dir) or a process that would not start."""


@dataclass
class Member:
    """One process of the cluster as recorded in cluster.json."""

    id: str  # "zk" or the broker id
    kind: str  # "zookeeper" | "broker"
    port: int
    config: str
    log: str
    rack: str | None = None
    metrics_port: int | None = None  # /metrics (the JMX exporter agent of an apache-kafka broker)
    pid: int | None = None
    started: int | None = None  # /proc start time of pid (pid-reuse guard)
    last_action: str = "created"  # created | started | stopped | killed | paused | resumed

    def os_state(self) -> str:
        return proc.os_state(self.pid, self.started)

    def state(self) -> str:
        s = self.os_state()
        if s != proc.DEAD:
            return s
        return proc.STOPPED if self.last_action in ("stopped", "created") else proc.DEAD


@dataclass
class MemberStatus:
    id: str
    kind: str
    pid: int | None
    port: int
    state: str
    rack: str | None = None


@dataclass
class _State:
    data_dir: str
    chroot: str = CHROOT
    standalone: bool = False
    impl: str = "kafkascope"
    security: str | None = None  # "sasl_ssl": configs and checks from the kit in data_dir/security
    launcher_pid: int | None = None
    launcher_started: int | None = None
    members: dict[str, Member] = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        zk = self.members.get(ZK_ID)
        d["zookeeper"] = f"127.0.0.1:{zk.port}" if zk else None
        d["zookeeper_connect"] = f"127.0.0.1:{zk.port}{self.chroot}" if zk else None
        d["bootstrap_servers"] = ",".join(f"127.0.0.1:{m.port}" for m in self.members.values()
                                          if m.kind == "broker")
        return d

    @classmethod
    def from_json(cls, d: dict) -> _State:
        members = {k: Member(**v) for k, v in d.get("members", {}).items()}
        return cls(data_dir=d["data_dir"], chroot=d.get("chroot", CHROOT), standalone=d.get("standalone", False),
                   impl=d.get("impl", "kafkascope"), security=d.get("security"), launcher_pid=d.get("launcher_pid"), launcher_started=d.get("launcher_started"), members=members)


def refuse_running(members: Iterable[Member], data_dir: Path) -> None:
    """prepare() on a data dir whose processes of an earlier run still run would start a second cluster on it."""
    for m in members:
        if m.os_state() != proc.DEAD:
            raise ClusterError(f"{m.kind} {m.id} (pid {m.pid}) of an earlier run is still running "
                               f"in {data_dir}; `kafkascope cluster down --data-dir {data_dir}`")


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:`port` can be bound now (to keep a previous run's ports)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


class ClusterLauncher:
    """ZooKeeper + N brokers on free 127.0.0.1 ports under `data_dir`.

    broker_props are extra server.properties for every broker (they win over the generated ones);
    racks are assigned round-robin (broker i gets racks[i % len(racks)]). standalone=True leaves
    zookeeper.connect out of the brokers' configs (independent single-node brokers, for when the cluster
    code is not there); zookeeper=False does not start ZooKeeper at all (implies standalone).
    impl="apache-kafka" starts Apache Kafka 3.9 brokers in ZooKeeper mode instead of ours (needs ZooKeeper).
    security="sasl_ssl": every broker gets only a SASL_SSL listener, ACLs and a super user from the security kit
    (kafkascope/local/security.py, under data_dir/security), and the admin's SCRAM credential once they run.
    """

    def __init__(self, data_dir: Path | str, brokers: int = 3, racks: list[str] | None = None,
                 broker_props: dict[str, object] | None = None, *, standalone: bool = False,
                 zookeeper: bool = True, zk_tick_time_ms: int = 500, first_broker_id: int = 0,
                 impl: str = "kafkascope", security: str | None = None, log_dirs: int = 1) -> None:
        """`log_dirs`: log dirs per broker (JBOD: `logs`, `logs-2`, ... under each broker's directory)."""
        if brokers < 1:
            raise ClusterError("need at least one broker")
        if log_dirs < 1:
            raise ClusterError("need at least one log dir per broker")
        if impl not in IMPLS:
            raise ClusterError(f"unknown impl {impl!r} (known: {', '.join(IMPLS)})")
        if impl == "apache-kafka" and (standalone or not zookeeper):
            raise ClusterError("--impl apache-kafka runs Kafka in ZooKeeper mode: it needs ZooKeeper, not --standalone")
        if security is not None and security not in seckit.MODES:
            raise ClusterError(f"unknown security {security!r} (known: {', '.join(seckit.MODES)})")
        if security is not None and (standalone or not zookeeper):
            raise ClusterError("--security keeps SCRAM credentials and ACLs in ZooKeeper: not with --standalone")
        self.impl = impl
        self.security = security
        self._kit: seckit.SecurityKit | None = None
        self.data_dir = Path(data_dir).resolve()
        self.num_brokers = brokers
        self.log_dirs_per_broker = log_dirs
        self.racks = [r for r in (racks or []) if r]
        self.broker_props = dict(broker_props or {})
        self.with_zookeeper = zookeeper
        self.standalone = standalone or not zookeeper
        self.zk_tick_time_ms = zk_tick_time_ms
        self.first_broker_id = first_broker_id
        self._children: dict[int, subprocess.Popen] = {}  # processes this instance spawned, for reaping
        self._state: _State | None = None
        self._in_lock = False

    # ---- attaching and the state file ---------------------------------------------------------------

    @classmethod
    def attach(cls, data_dir: Path | str) -> ClusterLauncher:
        """A launcher for the cluster already described by data_dir/cluster.json (as a CLI invocation uses); a KRaft
        cluster's directory (kraft.json beside it) is refused with a pointer to kraft.attach."""
        data_dir = Path(data_dir).resolve()
        if cls is ClusterLauncher and (data_dir / KRAFT_FILE).exists():
            # kraft.py builds on this module, so the dispatch is kraft.attach's (what the CLI uses).
            raise ClusterError(f"{data_dir} holds a KRaft cluster ({KRAFT_FILE}): attach it with "
                               "kafkascope.local.kraft.attach")
        path = data_dir / STATE_FILE
        if not path.exists():
            raise ClusterError(f"no cluster in {data_dir} ({STATE_FILE} not found; run `kafkascope cluster up`)")
        state = _State.from_json(json.loads(path.read_text()))
        brokers = [m for m in state.members.values() if m.kind == "broker"]
        self = cls(data_dir, brokers=max(1, len(brokers)), standalone=state.standalone,
                   zookeeper=ZK_ID in state.members, impl=state.impl, security=state.security)
        self._state = state
        return self

    @property
    def state_path(self) -> Path:
        return self.data_dir / STATE_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[_State]:
        """Hold the flock, reload cluster.json, yield the state, write it back atomically."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / LOCK_FILE, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if self.state_path.exists():
                    self._state = _State.from_json(json.loads(self.state_path.read_text()))
                elif self._state is None:
                    self._state = _State(data_dir=str(self.data_dir), standalone=self.standalone)
                self._in_lock = True
                try:
                    yield self._state
                finally:
                    self._in_lock = False
                tmp = self.state_path.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(self._state.to_json(), indent=2) + "\n")
                os.replace(tmp, self.state_path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> _State:
        if not self._in_lock and self.state_path.exists():
            self._state = _State.from_json(json.loads(self.state_path.read_text()))
        if self._state is None:
            raise ClusterError(f"no cluster in {self.data_dir}")
        return self._state

    # ---- addresses ------------------------------------------------------------------------------------

    def _member(self, member_id: object) -> Member:
        key = str(member_id).strip().lower()
        if key in ("zookeeper", "zoo"):
            key = ZK_ID
        state = self._load()
        if key not in state.members:
            known = ", ".join(state.members)
            raise ClusterError(f"unknown process {member_id!r} (known: {known})")
        return state.members[key]

    @property
    def broker_ids(self) -> list[int]:
        return sorted(int(m.id) for m in self._load().members.values() if m.kind == "broker")

    def broker_port(self, broker_id: int) -> int:
        return self._member(broker_id).port

    def pid(self, member_id: object) -> int | None:
        """The live pid (None when the process is not running)."""
        self.reap()
        m = self._member(member_id)
        return m.pid if m.os_state() != proc.DEAD else None

    def metrics_url(self, broker_id: int) -> str | None:
        """The broker's Prometheus endpoint (apache-kafka: the JMX exporter agent), None if it has none."""
        port = self._member(broker_id).metrics_port
        return f"http://127.0.0.1:{port}/metrics" if port else None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.broker_port(b)}" for b in self.broker_ids)

    @property
    def zookeeper_host_port(self) -> str | None:
        zk = self._load().members.get(ZK_ID)
        return f"127.0.0.1:{zk.port}" if zk else None

    @property
    def zookeeper_connect(self) -> str | None:
        """host:port plus the chroot, as brokers get it in zookeeper.connect."""
        hp = self.zookeeper_host_port
        return hp + self._load().chroot if hp else None

    # ---- configuration --------------------------------------------------------------------------------

    def kit(self) -> seckit.SecurityKit:
        """The security kit of a secured cluster (made by prepare(), read as it is by an attached launcher)."""
        if self._kit is None:
            try:
                self._kit = seckit.SecurityKit.load(self.data_dir / "security")
            except seckit.SecurityKitError as e:
                raise ClusterError(str(e)) from None
        return self._kit

    def _make_kit(self) -> seckit.SecurityKit:
        """The kit under data_dir/security, kept from an earlier run or made now, and its client.properties."""
        try:
            self._kit = seckit.SecurityKit.load_or_create(self.data_dir / "security")
        except seckit.SecurityKitError as e:
            raise ClusterError(str(e)) from None
        self._kit.write_client_properties()
        return self._kit

    def client_security(self) -> ClientSecurity | None:
        """How the launcher's own Metadata checks connect (None: PLAINTEXT)."""
        return self.kit().client_security() if self.security else None

    def _broker_config(self, broker_id: int, port: int, rack: str | None, zk_connect: str | None) -> dict:
        rf = min(3, self.num_brokers) if not self.standalone else 1
        props: dict[str, object] = {
            "broker.id": broker_id,
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": ",".join(str(self.data_dir / f"broker-{broker_id}" / ("logs" if i == 1 else f"logs-{i}"))
                                 for i in range(1, self.log_dirs_per_broker + 1)),
            "num.partitions": 1,
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": 10,
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 1000,
        }
        if self.security:
            props.update(self.kit().server_properties(port))
        if zk_connect and not self.standalone:
            props["zookeeper.connect"] = zk_connect
        if rack:
            props["broker.rack"] = rack
        if self.impl == "apache-kafka":
            props.update({
                "advertised.listeners": props["listeners"],
                "transaction.state.log.replication.factor": rf,
                "transaction.state.log.min.isr": min(2, rf),
                "zookeeper.session.timeout.ms": 6000,  # a killed broker's registration goes soon (as ours)
                "auto.create.topics.enable": "true",
            })
        props.update(self.broker_props)
        return props

    def prepare(self) -> ClusterLauncher:
        """Write zoo.cfg and every server.properties and record the members in cluster.json (nothing runs).
        Ports recorded by an earlier run on this dir are kept when they are still free."""
        with self._locked() as state:
            old = dict(state.members)
            refuse_running(old.values(), self.data_dir)

            def port_for(key: str) -> int:
                if key in old and port_free(old[key].port):
                    return old[key].port
                return proc.free_port()

            state.members = {}
            state.standalone = self.standalone
            state.impl = self.impl
            state.security = self.security
            if self.security:
                self._make_kit()
            zk_connect = None
            if self.with_zookeeper:
                zk = ZooKeeperServer(self.data_dir / "zookeeper", port=port_for(ZK_ID),
                                     tick_time_ms=self.zk_tick_time_ms)
                zk.write_config()
                state.members[ZK_ID] = Member(ZK_ID, "zookeeper", zk.port, str(zk.cfg_path), str(zk.log_path))
                zk_connect = zk.connect(state.chroot)
            for i in range(self.num_brokers):
                bid = self.first_broker_id + i
                rack = self.racks[i % len(self.racks)] if self.racks else None
                port = port_for(str(bid))
                bdir = self.data_dir / f"broker-{bid}"
                bdir.mkdir(parents=True, exist_ok=True)
                cfg = bdir / "server.properties"
                props = self._broker_config(bid, port, rack, zk_connect)
                cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
                state.members[str(bid)] = Member(str(bid), "broker", port, str(cfg), str(bdir / "broker.log"),
                                                 rack=rack)
                if self.impl == "apache-kafka":
                    mport = old[str(bid)].metrics_port if str(bid) in old else None
                    state.members[str(bid)].metrics_port = (mport if mport and port_free(mport)
                                                            else proc.free_port())
        return self

    # ---- process control ------------------------------------------------------------------------------

    def _command(self, m: Member) -> list[str]:
        if m.kind == "zookeeper":
            zk = ZooKeeperServer(Path(m.config).parent, port=m.port, tick_time_ms=self.zk_tick_time_ms)
            return zk.command()
        if self._load().impl == "apache-kafka":
            return apache_kafka.broker_command(Path(m.config), metrics_port=m.metrics_port)
        return [sys.executable, "-m", "broker", m.config]

    def _spawn(self, m: Member) -> None:
        try:
            cmd = self._command(m)
        except Exception as e:  # ApacheKafkaError: jars not fetchable, no java
            raise ClusterError(f"cannot start {m.kind} {m.id}: {e}") from None
        # Every member runs in its own config dir: nothing depends on where kafkascope is installed or run from.
        p = proc.spawn(cmd, Path(m.log), cwd=Path(m.config).parent, env=proc.child_env())
        self._children[p.pid] = p
        m.pid, m.started, m.last_action = p.pid, proc.start_time(p.pid), "started"

    def _wait_ready(self, m: Member, timeout_s: float) -> None:
        try:
            if m.kind == "zookeeper":
                zk = ZooKeeperServer(Path(m.config).parent, port=m.port)
                zk.pid, zk.started = m.pid, m.started
                zk.wait_ready(timeout_s)
            else:
                wait_for_port("127.0.0.1", m.port, lambda: self._alive(m), timeout_s)
        except Exception as e:
            raise ClusterError(f"{m.kind} {m.id} did not start: {e}\n--- {m.log} ---\n{proc.log_tail(Path(m.log))}"
                               ) from None

    def _alive(self, m: Member) -> bool:
        self.reap()
        return m.os_state() != proc.DEAD

    def reap(self) -> None:
        """Collect exited children of this instance (so they do not linger as zombies)."""
        for pid, p in list(self._children.items()):
            if p.poll() is not None:
                del self._children[pid]

    def start_all(self, timeout_s: float = 60.0) -> ClusterLauncher:
        """prepare(), then start ZooKeeper (wait for imok) and all brokers (wait until each listens)."""
        self.prepare()
        try:
            with self._locked() as state:
                state.launcher_pid, state.launcher_started = os.getpid(), proc.start_time(os.getpid())
                zk = state.members.get(ZK_ID)
                if zk:
                    self._spawn(zk)
            if zk:
                self._wait_ready(zk, timeout_s)
                if self.zk_exporter_port is not None:
                    self.start_zk_exporter(zk.port, timeout_s)
            with self._locked() as state:
                brokers = [m for m in state.members.values() if m.kind == "broker"]
                for m in brokers:
                    self._spawn(m)
            for m in brokers:
                self._wait_ready(m, timeout_s)
            if not self.standalone:
                self._wait_formed(brokers, timeout_s)
            if self.security:
                try:
                    self.kit().create_admin_scram([m.port for m in brokers], timeout_s)
                except seckit.SecurityKitError as e:
                    raise ClusterError(str(e)) from None
        except BaseException:
            self.shutdown()
            raise
        return self

    def _wait_formed(self, brokers: list[Member], timeout_s: float) -> None:
        """Until every broker's Metadata lists every broker (cluster mode). A broker registers in ZooKeeper
        before it listens, but the others learn of it through a watch a moment later; until then a CreateTopics
        with the full replication factor sent to them fails with INVALID_REPLICATION_FACTOR (as Kafka's do)."""
        want = {int(m.id) for m in brokers}
        deadline = time.monotonic() + timeout_s
        for m in brokers:
            seen: set[int] = set()
            problem = ""
            while seen != want:
                if time.monotonic() > deadline:
                    raise ClusterError(f"broker {m.id} sees brokers {sorted(seen)}{problem}, not {sorted(want)}, "
                                       f"after {timeout_s:.0f} s\n--- {m.log} ---\n{proc.log_tail(Path(m.log))}")
                try:
                    seen, problem = asyncio.run(brokers_seen_by(m.port, security=self.client_security())), ""
                except (OSError, EOFError, TimeoutError) as e:
                    problem = f" (last Metadata request: {e!r})"
                if seen != want:
                    time.sleep(0.05)

    # ZooKeeper ensemble metrics (`kafkascope zk-exporter`, exporter/zk.py): set to a port (0 = a free one) before
    # start_all() to run one on 127.0.0.1 next to ZooKeeper; its URL is then in zk_exporter_url, its pid in
    # data_dir/zk-exporter.pid (so that a `cluster down` from another process stops it too).
    zk_exporter_port: int | None = None
    zk_exporter_url: str | None = None
    zk_exporter_web_config: Path | None = None   # TLS and basic auth for its /metrics (exporter-toolkit format)

    def start_zk_exporter(self, zk_port: int, timeout_s: float = 30.0) -> str:
        port = self.zk_exporter_port or proc.free_port()
        web = self.zk_exporter_web_config
        p = proc.spawn([sys.executable, "-m", "kafkascope", "zk-exporter", "--zookeeper", f"127.0.0.1:{zk_port}",
                        "--listen", f"127.0.0.1:{port}", *(["--web.config.file", str(web)] if web else [])],
                       self.data_dir / "zk-exporter.log", cwd=self.data_dir, env=proc.child_env())
        self._children[p.pid] = p
        (self.data_dir / "zk-exporter.pid").write_text(f"{p.pid} {proc.start_time(p.pid)}\n")
        wait_for_port("127.0.0.1", port, lambda: p.poll() is None, timeout_s)
        self.zk_exporter_url = f"{'https' if web else 'http'}://127.0.0.1:{port}/metrics"
        return self.zk_exporter_url

    def _stop_zk_exporter(self) -> None:
        pidfile = self.data_dir / "zk-exporter.pid"
        with contextlib.suppress(OSError, ValueError):
            pid, started = pidfile.read_text().split()
            proc.terminate(int(pid), int(started) if started != "None" else None, 5.0)
            pidfile.unlink()

    def start(self, member_id: object, timeout_s: float = 60.0) -> None:
        """Start a stopped/killed process again with the same config, port and data dirs."""
        with self._locked():
            m = self._member(member_id)
            if m.os_state() != proc.DEAD:
                raise ClusterError(f"{m.kind} {m.id} is already {m.state()} (pid {m.pid})")
            self._spawn(m)
        self._wait_ready(m, timeout_s)

    def stop(self, member_id: object, timeout_s: float = 30.0) -> str:
        """SIGTERM (a controlled shutdown) and wait; SIGKILL after timeout_s. Returns stopped/killed/gone."""
        with self._locked():
            m = self._member(member_id)
            result = proc.terminate(m.pid, m.started, timeout_s) if m.pid else "gone"
            m.last_action = "stopped"
        self.reap()
        return result

    def kill(self, member_id: object) -> None:
        """SIGKILL, as a crash."""
        with self._locked():
            m = self._member(member_id)
            if m.pid:
                proc.kill_group(m.pid, m.started)
            m.last_action = "killed"
        self.reap()

    def pause(self, member_id: object) -> None:
        """SIGSTOP: the process is frozen (sockets stay open, nothing is answered)."""
        self._signal(member_id, signal.SIGSTOP, "paused", proc.PAUSED)

    def resume(self, member_id: object) -> None:
        """SIGCONT."""
        self._signal(member_id, signal.SIGCONT, "resumed", proc.RUNNING)

    def _signal(self, member_id: object, sig: int, action: str, expect: str) -> None:
        with self._locked():
            m = self._member(member_id)
            if m.os_state() == proc.DEAD:
                raise ClusterError(f"{m.kind} {m.id} is not running ({m.state()})")
            proc.signal_group(m.pid, sig)
            m.last_action = action
            wait_until(lambda: m.os_state() in (expect, proc.DEAD), 5.0, what=f"{m.kind} {m.id} {expect}")

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop every broker (SIGTERM, in parallel), then ZooKeeper; SIGKILL whatever is left."""
        if not self.state_path.exists() and self._state is None:
            return
        self._stop_zk_exporter()
        with self._locked() as state:
            members = list(state.members.values())
            brokers = [m for m in members if m.kind == "broker" and m.os_state() != proc.DEAD]
            for m in brokers:
                proc.signal_group(m.pid, signal.SIGTERM)
                proc.signal_group(m.pid, signal.SIGCONT)
            deadline = time.monotonic() + timeout_s
            for m in brokers:
                if not proc.wait_dead(m.pid, m.started, max(0.1, deadline - time.monotonic())):
                    proc.kill_group(m.pid, m.started)
            for m in members:  # after the brokers: KRaft controllers (kafkascope/local/kraft.py) or ZooKeeper
                if m.kind in ("zookeeper", "controller") and m.pid:
                    proc.terminate(m.pid, m.started, 15.0)
            for m in members:  # leftovers, whatever they are
                if m.pid and m.os_state() != proc.DEAD:
                    proc.kill_group(m.pid, m.started)
                if m.last_action != "created":
                    m.last_action = "stopped"
            if state.launcher_pid == os.getpid():
                state.launcher_pid = state.launcher_started = None
        for p in list(self._children.values()):  # spawned but never recorded (interrupted mid-start)
            if p.poll() is None:
                proc.kill_group(p.pid, None)
        self.reap()

    # ---- status ---------------------------------------------------------------------------------------

    def status(self) -> list[MemberStatus]:
        self.reap()
        state = self._load()
        return [MemberStatus(m.id, m.kind, m.pid if m.os_state() != proc.DEAD else None, m.port, m.state(), m.rack)
                for m in state.members.values()]

    def state_of(self, member_id: object) -> str:
        self.reap()
        return self._member(member_id).state()

    def launcher_alive(self) -> bool:
        state = self._load()
        return bool(state.launcher_pid) and proc.alive(state.launcher_pid, state.launcher_started)

    def format_status(self) -> str:
        rows = [("ID", "PROCESS", "PID", "PORT", "RACK", "STATE")]
        for s in self.status():
            rows.append((s.id, s.kind, str(s.pid or "-"), str(s.port), s.rack or "-", s.state))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


async def brokers_seen_by(port: int, timeout_s: float = 5.0, security: ClientSecurity | None = None) -> set[int]:
    """The broker ids in one broker's Metadata response (no topics asked for)."""
    conn = BrokerConnection("127.0.0.1", port, "kafkascope-cluster", security)
    await conn.connect(timeout_s)
    try:
        response = await conn.request(3, 1, {"topics": []}, timeout_s)
        return {b.node_id for b in response.brokers}
    finally:
        conn.close()
