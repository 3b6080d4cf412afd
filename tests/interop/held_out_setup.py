"""The held-out checks' clusters and workload (tests/interop/held_out.py): Apache Kafka with the community rule file
given to its jmx_exporter agent (3.9 in ZooKeeper mode, or 4.x in KRaft mode), ours with the same naming, the topics,
the traffic on a fixed schedule, and what the brokers' own Metadata says about the partitions (the fault panels are
checked against it).

Producers at a fixed rate on three topics (3 partitions, RF=3, min.insync.replicas=2) and a slower one on a topic
with min.insync.replicas=3, a consumer group on the first three, and a single-replica topic on the broker that the
check pauses. Every client has a default client quota far above its traffic (`set_default_quotas`), so the
per-client quota sensors exist (Kafka creates them once any quota is set) and nobody is throttled.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from common.polling import wait_until
from kafkascope.local import process as proc
from kafkascope.local.kraft import KRaftLauncher
from kafkascope.local.launcher import ClusterLauncher, Member
from tests.interop import community_queries as cq

REPO = Path(__file__).resolve().parents[2]
RULE_FILES = {"strimzi": REPO / "exporter" / "rules" / "strimzi-kafka-metrics.yaml",
              "confluent": REPO / "exporter" / "rules" / "confluent-kafka_broker.yml"}

BROKER_PROPS = {  # (a KRaft node drops the ZooKeeper-only keys: kafkascope.local.kraft.node_props)
    "replica.lag.time.max.ms": 10000,
    "zookeeper.session.timeout.ms": 6000,
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 10,
}


RATE = 20  # records/s on each of TOPICS
STRICT_RATE = 5
TOPICS = ["cd-a", "cd-b", "cd-c"]
STRICT = "cd-strict"  # min.insync.replicas=3: under min ISR while a broker is away
SINGLE = "cd-single"  # one replica, on the paused broker: offline while it is away
GROUP = "cd-group"


class Traffic:
    """Producers at fixed rates (one record every 1/rate s on a schedule from t0, idempotent, acks=all) and a
    consumer group reading TOPICS; all threads end on stop() (and after MAX_S in any case)."""

    MAX_S = 900

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._stop = threading.Event()
        self.t0 = 0.0
        self.delivered: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.consumed = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> Traffic:
        self.t0 = time.time()
        for topics, rate in ((TOPICS, RATE), ([STRICT], STRICT_RATE)):
            self._threads.append(threading.Thread(target=self._produce, args=(topics, rate), daemon=True))
        self._threads.append(threading.Thread(target=self._consume, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    def _report(self, err, msg) -> None:
        with self._lock:
            d = self.failed if err else self.delivered
            d[msg.topic()] = d.get(msg.topic(), 0) + 1

    def _produce(self, topics: list[str], rate: int) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 20,
                      "message.timeout.ms": 300000, "log_level": 0})
        value = b"v" * 200
        i, per_s = 0, rate * len(topics)
        try:
            while not self._stop.is_set() and time.time() - self.t0 < self.MAX_S:
                due = self.t0 + i / per_s
                if self._stop.wait(max(0.0, due - time.time())):
                    break
                topic = topics[i % len(topics)]
                for _ in range(100):  # a full local queue: serve callbacks, then retry (bounded)
                    try:
                        p.produce(topic, key=f"k{i}".encode(), value=value, on_delivery=self._report)
                        break
                    except BufferError:
                        p.poll(0.05)
                p.poll(0)
                i += 1
        except Exception as e:  # reported by the test
            self.errors.append(f"producer {topics}: {e!r}")
        finally:
            p.flush(30)

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": True, "auto.commit.interval.ms": 1000, "log_level": 0})
        c.subscribe(TOPICS)
        try:
            while not self._stop.is_set() and time.time() - self.t0 < self.MAX_S:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    self.consumed += 1
        except Exception as e:
            self.errors.append(f"consumer: {e!r}")
        finally:
            c.close()


# /config/users/<default>/clients/<default>: every client measured per (user, client-id); none ever throttled.
DEFAULT_QUOTAS = {"producer_byte_rate": 100 << 20, "consumer_byte_rate": 100 << 20, "request_percentage": 10_000.0}


def set_default_quotas(bootstrap: str) -> None:
    """AlterClientQuotas for the default user and client-id, over the wire (the same request to either broker)."""
    from kafkascope.local.wire import WireClient

    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    with WireClient(port) as w:
        resp = w.call(49, 1, {"validate_only": False, "entries": [{
            "entity": [{"entity_type": "user", "entity_name": None},
                       {"entity_type": "client-id", "entity_name": None}],
            "ops": [{"key": k, "value": float(v), "remove": False} for k, v in DEFAULT_QUOTAS.items()]}]})
    entry = resp.entries[0]
    assert entry.error_code == 0, f"AlterClientQuotas: {entry.error_code} {entry.error_message}"


def create_topics(bootstrap: str, victim: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    new = [NewTopic(t, 3, 3, config={"min.insync.replicas": "2"}) for t in TOPICS]
    new.append(NewTopic(STRICT, 3, 3, config={"min.insync.replicas": "3"}))
    new.append(NewTopic(SINGLE, 1, replica_assignment=[[victim]]))
    for f in a.create_topics(new, operation_timeout=30).values():
        f.result(60)

    def settled() -> bool:
        md = a.list_topics(timeout=10)
        names = [*TOPICS, STRICT, SINGLE]
        return all(n in md.topics and md.topics[n].partitions and all(
            p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in md.topics[n].partitions.values())
            for n in names)

    wait_until(settled, 60, 0.5, what="topics with leaders and full ISRs")


def seed_topics(bootstrap: str) -> None:
    """One record to every partition of TOPICS and STRICT (acks=all)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})
    for t in [*TOPICS, STRICT]:
        for partition in range(3):
            p.produce(t, value=b"seed", partition=partition)
    assert p.flush(60) == 0, "seed records not delivered"


def controller_id(bootstrap: str) -> int:
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return a.describe_cluster(request_timeout=10).result(30).controller.id


def metadata_counts(bootstrap: str) -> dict[str, int]:
    """Under-replicated / under and at min ISR / offline partitions as the live brokers' Metadata tells them."""
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    md = a.list_topics(timeout=10)
    min_isr = {**dict.fromkeys(TOPICS, 2), STRICT: 3}
    out = {"under_replicated": 0, "under_min_isr": 0, "at_min_isr": 0, "offline": 0}
    for name, t in md.topics.items():
        for p in t.partitions.values():
            if p.leader < 0:
                out["offline"] += 1
                continue
            m = min(min_isr.get(name, 1), len(p.replicas))
            out["under_replicated"] += len(p.isrs) < len(p.replicas)
            out["under_min_isr"] += len(p.isrs) < m
            out["at_min_isr"] += len(p.isrs) == m
    return out



# ---------------------------------------------------------------------------------------------- clusters

def _agent_with_rules(cmd: list[str], rules: Path) -> list[str]:
    """The command with its jmx_exporter agent given `rules` (-javaagent:JAR=127.0.0.1:PORT:RULES)."""
    agents = [i for i, a in enumerate(cmd) if a.startswith("-javaagent:") and "jmx_prometheus_javaagent" in a]
    assert len(agents) == 1, f"expected one jmx_exporter agent in {cmd}"
    head, _, _ = cmd[agents[0]].rpartition(":")
    cmd[agents[0]] = f"{head}:{rules}"
    return cmd


class ApacheKafkaWithRules(ClusterLauncher):
    """The apache-kafka launcher with the jmx_exporter agent given `rules` instead of the launcher's own file."""

    def __init__(self, *args, rules: Path, **kwargs) -> None:
        super().__init__(*args, impl="apache-kafka", **kwargs)
        self.rules = rules

    def _command(self, m):
        cmd = super()._command(m)
        return cmd if m.kind != "broker" else _agent_with_rules(cmd, self.rules)


class KRaftWithRules(KRaftLauncher):
    """A KRaft cluster (Kafka 4.x) whose nodes' jmx_exporter agents get `rules` instead of write_jmx_rules()'s."""

    def __init__(self, *args, rules: Path, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rules = rules

    def _command(self, m: Member) -> list[str]:
        return _agent_with_rules(super()._command(m), self.rules)


class OursWithMetrics(ClusterLauncher):
    """Our brokers, each serving /metrics (prometheus.listener) on its own free port. The ports are picked once
    every member has its own, and differ from all of them: a free port picked while a broker's port is not bound
    yet can be that very port (seen: a broker's listener and its metrics listener on one port, EADDRINUSE)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metrics_ports: dict[int, int] = {}

    def prepare(self) -> ClusterLauncher:
        super().prepare()
        members = self._load().members.values()
        taken = {m.port for m in members}
        for m in sorted((m for m in members if m.kind == "broker"), key=lambda m: int(m.id)):
            port = next(p for p in (proc.free_port() for _ in range(100)) if p not in taken)
            taken.add(port)
            self.metrics_ports[int(m.id)] = port
            with open(m.config, "a") as f:
                f.write(f"prometheus.listener=127.0.0.1:{port}\n")
        return self


def agent_rules(naming: str, directory: Path) -> Path:
    """The rule file given to the agent: upstream's as it is, except Confluent's startDelaySeconds: 120 (the agent
    would answer empty pages for two minutes; a start-up setting, not naming, and our broker ignores it) set to 0."""
    text = RULE_FILES[naming].read_text()
    if naming == "confluent":
        text, n = re.subn(r"(?m)^startDelaySeconds:\s*\d+\s*$", "startDelaySeconds: 0", text)
        assert n == 1
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RULE_FILES[naming].name
    path.write_text(text)
    return path


@dataclass(frozen=True)
class Reference:
    """What a held-out check compares ours with: the Apache Kafka version (None: the launcher's ZooKeeper-mode
    default; 4.x: KRaft) and the community dashboards and rule files of each naming."""

    kafka_version: str | None
    dashboards: dict[str, list[cq.Dashboard]]
    rules: dict[str, list[Path]]


ZK_REFERENCE = Reference(None, {"strimzi": cq.STRIMZI_DASHBOARDS, "confluent": cq.CONFLUENT_DASHBOARDS},
                         {"strimzi": cq.STRIMZI_RULES, "confluent": cq.CONFLUENT_RULES})


def make_cluster(impl: str, naming: str, directory: Path,
                 reference: Reference = ZK_REFERENCE) -> tuple[ClusterLauncher, dict[int, str]]:
    launcher: ClusterLauncher
    if impl == "apache-kafka":
        rules = agent_rules(naming, directory / "agent-rules")
        if reference.kafka_version is None:
            launcher = ApacheKafkaWithRules(directory, brokers=3, broker_props=BROKER_PROPS, rules=rules)
        else:
            launcher = KRaftWithRules(directory, brokers=3, broker_props=BROKER_PROPS, rules=rules,
                                      version=reference.kafka_version)
        launcher.start_all(timeout_s=180)
        targets = {b: launcher.metrics_url(b).split("//")[1].split("/")[0] for b in launcher.broker_ids}
    else:
        ours = OursWithMetrics(directory, brokers=3, broker_props={**BROKER_PROPS, "prometheus.naming": naming})
        launcher = ours.start_all(timeout_s=120)
        targets = {b: f"127.0.0.1:{ours.metrics_ports[b]}" for b in launcher.broker_ids}
    return launcher, targets


def active_controller(launcher: ClusterLauncher) -> int:
    """The controller's id: the Raft quorum leader on KRaft (DescribeQuorum, KIP-595; a KRaft broker answers
    Metadata/DescribeCluster with a random broker as "controller"), else what DescribeCluster says."""
    if isinstance(launcher, KRaftLauncher):
        return launcher.quorum().leader_id
    return controller_id(launcher.bootstrap)
