"""Apache Kafka 4.x KRaft clusters for the cluster launcher: no ZooKeeper, a Raft quorum of controllers.

    launcher = KRaftLauncher(data_dir, brokers=3).start_all()                 # three combined broker+controller nodes
    launcher = KRaftLauncher(data_dir, brokers=3, controllers=3).start_all()  # brokers 0-2, controllers 3-5
    asyncio.run(describe_quorum(launcher.broker_port(0))).leader_id           # the active controller

The quorum is static (KIP-595 `controller.quorum.voters`, kraft.version 0): every node's storage is formatted with
`kafka.tools.StorageTool format --cluster-id ID` (one cluster id for all, kept in kraft.json) and no
--standalone/--initial-controllers, which is what Kafka 4.1 formats without a dynamic-quorum bootstrap (KIP-853).
Each node runs the Prometheus JMX exporter agent with write_jmx_rules(kraft=True). Member kinds are "broker" (the
broker role, alone or combined with the controller role) and "controller" (controller only); the roles of each node
are in data_dir/kraft.json, which is also how attach() knows a directory holds a KRaft cluster.
security="sasl_ssl": the kit of the ZooKeeper clusters, rendered the KRaft way by kraft_security.py (SASL_SSL client,
inter-broker and CONTROLLER listeners, StandardAuthorizer, the admin's SCRAM credential formatted into storage).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.network.client_security import ClientSecurity
from broker.replication.client import BrokerConnection
from kafkascope.local import apache_kafka, kraft_security
from kafkascope.local import process as proc
from kafkascope.local import security as seckit
from kafkascope.local.launcher import (
    KRAFT_FILE,
    ClusterError,
    ClusterLauncher,
    Member,
    MemberStatus,
    port_free,
    refuse_running,
)

BROKER, CONTROLLER = "broker", "controller"
METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM = 55  # KIP-595 DescribeQuorum; a broker forwards it to the active controller
# Props of the ZooKeeper-mode configs that a KRaft node must not carry.
_ZK_ONLY = ("broker.id", "zookeeper.connect", "zookeeper.session.timeout.ms")


def attach(data_dir: Path | str) -> ClusterLauncher:
    """The launcher of the cluster in data_dir, whichever kind it is (a KRaft one has kraft.json)."""
    if (Path(data_dir) / KRAFT_FILE).exists():
        return KRaftLauncher.attach(data_dir)
    return ClusterLauncher.attach(data_dir)


def is_kraft_version(version: str | None) -> bool:
    """Apache Kafka 4.0 removed ZooKeeper mode (KIP-833): 4.x and later run KRaft, 3.x keeps ZooKeeper here."""
    if not version:
        return False
    try:
        return int(version.split(".", 1)[0]) >= 4
    except ValueError:
        raise ClusterError(f"cannot read Apache Kafka version {version!r} (expected e.g. 4.1.1 or 3.9.2)") from None


@dataclass(frozen=True)
class NodePlan:
    """One KRaft node: its id, roles (KafkaConfig process.roles), broker port (None for a controller-only node)
    and controller port (None for a broker-only node)."""

    node_id: int
    roles: tuple[str, ...]
    port: int | None
    controller_port: int | None

    @property
    def kind(self) -> str:
        return BROKER if BROKER in self.roles else CONTROLLER

    @property
    def main_port(self) -> int:
        """The port the launcher waits on: the client listener, or the controller listener of a controller."""
        port = self.port if self.port is not None else self.controller_port
        assert port is not None
        return port


def plan_nodes(brokers: int, controllers: int, first_id: int, port_for: Callable[[str], int]) -> list[NodePlan]:
    """controllers=0: `brokers` combined broker+controller nodes; else broker-only nodes first_id.. and then
    controller-only nodes after them. port_for(key) gives a port for "ID" (client) and "ID-controller"."""
    if brokers < 1:
        raise ClusterError("need at least one broker")
    if controllers < 0:
        raise ClusterError("--controllers cannot be negative")
    nodes = []
    if controllers == 0:
        for i in range(brokers):
            nid = first_id + i
            nodes.append(NodePlan(nid, (BROKER, CONTROLLER), port_for(str(nid)), port_for(f"{nid}-controller")))
        return nodes
    for i in range(brokers):
        nodes.append(NodePlan(first_id + i, (BROKER,), port_for(str(first_id + i)), None))
    for i in range(controllers):
        nid = first_id + brokers + i
        nodes.append(NodePlan(nid, (CONTROLLER,), None, port_for(f"{nid}-controller")))
    return nodes


def quorum_voters(nodes: list[NodePlan]) -> str:
    """controller.quorum.voters: id@host:port of every node with the controller role."""
    return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in nodes if CONTROLLER in n.roles)


def node_props(node: NodePlan, voters: str, base: dict[str, object],
               security: dict[str, str] | None = None) -> dict[str, object]:
    """server.properties of one KRaft node: the launcher's common props (replication factors, log dir, rack, the
    user's overrides) without the ZooKeeper-only keys, plus roles, listeners and the quorum. The user's overrides
    in `base` still win for everything but the node's identity and listeners. `security`
    (kraft_security.node_security_props): the client and CONTROLLER listeners are SASL_SSL instead of PLAINTEXT."""
    props = {**(security or {}), **{k: v for k, v in base.items() if k not in _ZK_ONLY}}
    client = kraft_security.CLIENT_LISTENER if security else "PLAINTEXT"
    listeners, protocols = [], [f"CONTROLLER:{client}"]
    if node.port is not None:
        listeners.append(f"{client}://127.0.0.1:{node.port}")
        protocols.append(f"{client}:{client}")
    if node.controller_port is not None:
        listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
    props.update({
        "process.roles": ",".join(node.roles),
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(protocols),
    })
    if node.port is not None:
        props["advertised.listeners"] = f"{client}://127.0.0.1:{node.port}"
        props["inter.broker.listener.name"] = client
    else:  # a controller has no client listener; keep broker-only keys out of its config
        for key in ("advertised.listeners", "broker.rack", "inter.broker.listener.name"):
            props.pop(key, None)
    return props


@dataclass
class QuorumInfo:
    """The metadata partition's quorum as DescribeQuorum reports it (kafka-metadata-quorum.sh describe)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: dict[int, int] = field(default_factory=dict)     # replica id -> log end offset
    observers: dict[int, int] = field(default_factory=dict)


async def describe_quorum(port: int, timeout_s: float = 5.0, security: ClientSecurity | None = None) -> QuorumInfo:
    """DescribeQuorum v1 of __cluster_metadata-0 sent to 127.0.0.1:port (a broker forwards it to the active
    controller; a controller listener answers it itself). `security`: the login of a secured cluster."""
    conn = BrokerConnection("127.0.0.1", port, "kafkascope-kraft", security)
    await conn.connect(timeout_s)
    try:
        response = await conn.request(DESCRIBE_QUORUM, 1, {"topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}, timeout_s)
    finally:
        conn.close()
    return quorum_from_response(response)


def quorum_from_response(response: Any) -> QuorumInfo:
    if response.error_code:
        raise ClusterError(f"DescribeQuorum failed with error code {response.error_code}")
    part = response.topics[0].partitions[0]
    if part.error_code:
        raise ClusterError(f"DescribeQuorum of {METADATA_TOPIC}-0 failed with error code {part.error_code}")
    return QuorumInfo(int(part.leader_id), int(part.leader_epoch), int(part.high_watermark),
                      {int(v.replica_id): int(v.log_end_offset) for v in part.current_voters},
                      {int(o.replica_id): int(o.log_end_offset) for o in part.observers})


@dataclass
class NodeStatus(MemberStatus):
    roles: str = ""


class KRaftLauncher(ClusterLauncher):
    """Apache Kafka `version` (4.x) as a KRaft cluster under data_dir, driven like the ZooKeeper clusters
    (kill/stop/start/pause/resume by node id, status, shutdown). controllers=0: combined nodes."""

    def __init__(self, data_dir: Path | str, brokers: int = 3, racks: list[str] | None = None,
                 broker_props: dict[str, object] | None = None, *, controllers: int = 0,
                 version: str = apache_kafka.DEFAULT_VERSION, security: str | None = None,
                 first_broker_id: int = 0, **_zk_options: object) -> None:
        if not is_kraft_version(version):
            raise ClusterError(f"Apache Kafka {version} runs in ZooKeeper mode: use ClusterLauncher")
        # The base class insists on ZooKeeper for apache-kafka; a KRaft cluster has none (with_zookeeper False).
        super().__init__(data_dir, brokers=brokers, racks=racks, broker_props=broker_props, impl="apache-kafka",
                         first_broker_id=first_broker_id, security=security)
        self.with_zookeeper = False
        self.num_controllers = controllers
        self.version = version
        self.cluster_id: str | None = None
        info = self._info()
        if info:  # attached: the recorded cluster wins over the defaults
            self.version = info["version"]
            self.num_controllers = info["controllers"]
            self.cluster_id = info["cluster_id"]

    @property
    def info_path(self) -> Path:
        return self.data_dir / KRAFT_FILE

    def _info(self) -> dict[str, Any]:
        return json.loads(self.info_path.read_text()) if self.info_path.exists() else {}

    def roles(self, node_id: object) -> str:
        return str(self._info().get("nodes", {}).get(str(node_id), {}).get("roles", ""))

    def controller_ids(self) -> list[int]:
        return sorted(int(k) for k, v in self._info().get("nodes", {}).items() if CONTROLLER in v["roles"])

    # ---- configuration --------------------------------------------------------------------------------

    def kit(self) -> seckit.SecurityKit:
        kit = super().kit()
        kit.authorizer = kraft_security.AUTHORIZER   # what `cluster up` prints
        return kit

    def _broker_config(self, broker_id: int, port: int, rack: str | None, zk_connect: str | None) -> dict:
        """The base config without the ZooKeeper-mode kit's entries (node_props puts the KRaft ones), except those
        the user overrides."""
        props = super()._broker_config(broker_id, port, rack, zk_connect)
        if self.security:
            for key in kraft_security.zk_only_keys(self.kit()) - set(self.broker_props):
                props.pop(key, None)
        return props

    def prepare(self) -> KRaftLauncher:
        """Write every node's server.properties and kraft.json, record the members, format new log dirs."""
        info = self._info()
        old_controller_ports = {k: v.get("controller_port") for k, v in info.get("nodes", {}).items()}
        with self._locked() as state:
            old = dict(state.members)
            refuse_running(old.values(), self.data_dir)

            def port_for(key: str) -> int:
                nid, _, ctl = key.partition("-")
                previous = old_controller_ports.get(nid) if ctl else (old[nid].port if nid in old else None)
                return previous if previous and port_free(previous) else proc.free_port()

            nodes = plan_nodes(self.num_brokers, self.num_controllers, self.first_broker_id, port_for)
            voters = quorum_voters(nodes)
            state.members, state.standalone, state.impl, state.security = {}, False, "apache-kafka", self.security
            security = kraft_security.node_security_props(self._make_kit()) if self.security else None
            for i, node in enumerate(nodes):
                rack = self.racks[i % len(self.racks)] if self.racks and node.port is not None else None
                ndir = self.data_dir / f"{node.kind}-{node.node_id}"
                ndir.mkdir(parents=True, exist_ok=True)
                base = self._broker_config(node.node_id, node.main_port, rack, None)
                base["log.dirs"] = ndir / "logs"  # controller-<id>/logs for a controller, not broker-<id>
                props = node_props(node, voters, base, security)
                cfg = ndir / "server.properties"
                cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
                m = Member(str(node.node_id), node.kind, node.main_port, str(cfg), str(ndir / f"{node.kind}.log"),
                           rack=rack)
                mport = old[m.id].metrics_port if m.id in old else None
                m.metrics_port = mport if mport and port_free(mport) else proc.free_port()
                state.members[m.id] = m
        self.cluster_id = info.get("cluster_id") or apache_kafka._random_cluster_id()
        tmp = self.info_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({
            "version": self.version, "controllers": self.num_controllers, "cluster_id": self.cluster_id,
            "nodes": {str(n.node_id): {"roles": ",".join(n.roles), "controller_port": n.controller_port}
                      for n in nodes}}, indent=2) + "\n")
        tmp.replace(self.info_path)
        self._format([Path(m.config) for m in state.members.values()])
        return self

    def _format(self, configs: list[Path], timeout_s: float = 180.0) -> None:
        """kafka-storage format every node whose log dir has no meta.properties yet (in parallel: one JVM each)."""
        assert self.cluster_id is not None
        running: list[tuple[Path, subprocess.Popen]] = []
        for cfg in configs:
            if (cfg.parent / "logs" / "meta.properties").is_file():
                continue
            scram = kraft_security.format_args(self.kit()) if self.security else []
            cmd = apache_kafka.tool_command("kafka.tools.StorageTool", "format", "--cluster-id", self.cluster_id,
                                            "--config", str(cfg), "--ignore-formatted", *scram,
                                            version=self.version, heap_opts="-Xmx256m")
            running.append((cfg, proc.spawn(cmd, cfg.parent / "format.log", cwd=cfg.parent)))
        for cfg, p in running:
            try:
                rc = p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            if rc != 0:
                raise ClusterError(f"kafka-storage format of {cfg} failed (exit {rc})\n"
                                   f"{proc.log_tail(cfg.parent / 'format.log')}")

    # ---- processes ------------------------------------------------------------------------------------

    def _command(self, m: Member) -> list[str]:
        cmd = apache_kafka.broker_command(Path(m.config), version=self.version,
                                          heap_opts="-Xmx256m -Xms64m" if m.kind == CONTROLLER else
                                          "-Xmx512m -Xms128m")
        if m.metrics_port:  # the agent is fetched with the ZooKeeper-mode line and runs on any Kafka
            apache_kafka.ensure_kafka(apache_kafka.ZK_VERSION)
            agent = apache_kafka.jmx_agent_jar(apache_kafka.ZK_VERSION)
            rules = apache_kafka.write_jmx_rules(Path(m.config).parent / "jmx_exporter.yml", kraft=True)
            cmd.insert(1, f"-javaagent:{agent}=127.0.0.1:{m.metrics_port}:{rules}")
        return cmd

    def start_all(self, timeout_s: float = 60.0) -> KRaftLauncher:
        """prepare() (formatting new nodes), start every node at once (a quorum needs a majority of its voters
        to elect a leader), wait until each listens and every broker's Metadata lists every broker."""
        self.prepare()
        try:
            with self._locked() as state:
                state.launcher_pid, state.launcher_started = os.getpid(), proc.start_time(os.getpid())
                members = list(state.members.values())
                for m in members:
                    self._spawn(m)
            for m in members:
                self._wait_ready(m, timeout_s)
            brokers = [m for m in members if m.kind == BROKER]
            self._wait_formed(brokers, timeout_s)
            if self.security:   # the admin's SCRAM login, once every broker has replayed its credential record
                try:
                    self.kit().wait_admin_scram([m.port for m in brokers], timeout_s)
                except seckit.SecurityKitError as e:
                    raise ClusterError(str(e)) from None
        except BaseException:
            self.shutdown()
            raise
        return self

    # ---- the quorum and status -----------------------------------------------------------------------

    def quorum(self, timeout_s: float = 5.0) -> QuorumInfo:
        """DescribeQuorum through the first running broker (or controller) that answers."""
        errors = []
        for m in sorted(self._load().members.values(), key=lambda m: m.kind != BROKER):
            if m.os_state() != proc.RUNNING:
                continue
            try:
                return asyncio.run(describe_quorum(m.port, timeout_s, self.client_security()))
            except (OSError, EOFError, TimeoutError, ClusterError) as e:
                errors.append(f"{m.kind} {m.id}: {e!r}")
        raise ClusterError("no node answered DescribeQuorum" + (f" ({'; '.join(errors)})" if errors else ""))

    def status(self) -> list[MemberStatus]:
        nodes = self._info().get("nodes", {})
        return [NodeStatus(**{**s.__dict__, "roles": nodes.get(s.id, {}).get("roles", "")})
                for s in super().status()]

    def format_status(self) -> str:
        rows = [("ID", "PROCESS", "ROLES", "PID", "PORT", "RACK", "STATE")]
        for s in self.status():
            roles = s.roles if isinstance(s, NodeStatus) else ""
            rows.append((s.id, s.kind, roles or "-", str(s.pid or "-"), str(s.port), s.rack or "-", s.state))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
