"""A real Apache Kafka 4.1 KRaft cluster through `kafkascope cluster` (slow: three to six JVMs each): it comes up,
an RF=3 topic works, kill -9 of the active controller elects another one, and the killed node rejoins."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from common.polling import wait_until
from kafkascope.cli import main
from kafkascope.local import kraft
from kafkascope.local.apache_kafka import DEFAULT_VERSION
from tests.cluster.test_cli import ROOT, _Lines, _processes_mentioning
from tests.cluster.test_cli import _cleanup as cli_cleanup
from tests.interop.conftest import apache_kafka_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _cleanup(up: subprocess.Popen, data_dir) -> None:
    """On a failed test: stop the launcher, then whatever kraft.json and cluster.json still name."""
    cli_cleanup(up, data_dir, attach=kraft.attach, wait_s=60)


def _status(data_dir, capsys) -> dict:
    capsys.readouterr()
    assert main(["cluster", "status", "--data-dir", str(data_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _produce_consume(bootstrap: str, topic: str, n: int, group: str) -> list[bytes]:
    """Produce n records with acks=all, then read the topic from the start; the values read."""
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for i in range(n):
        p.produce(topic, f"{group}-{i}".encode())
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "log_level": 0})
    c.subscribe([topic])
    got: list[bytes] = []
    try:
        def more() -> bool:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
            return len(got) >= n
        wait_until(more, 60, interval_s=0, what=f"{n} records of {topic}")
    finally:
        c.close()
    return got


def _isr(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(topic, timeout=10)
    return sorted(md.topics[topic].partitions[0].isrs)


def _active_controller_gauges(launcher: kraft.KRaftLauncher, ids: list[int]) -> int:
    """Sum of ActiveControllerCount over the nodes' JMX exporter endpoints (exactly one node reports 1)."""
    total = 0.0
    for i in ids:
        url = launcher.metrics_url(i)
        assert url
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        total += sum(float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith("kafka_controller_kafkacontroller_activecontrollercount"))
    return int(total)


def test_combined_cluster_through_the_cli(tmp_path, capsys):
    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()  # the JMX exporter agent comes with the 3.9 line
    data_dir = tmp_path / "k"
    up = subprocess.Popen([sys.executable, "-m", "kafkascope", "cluster", "up", "--impl", "apache-kafka",
                           "--version", DEFAULT_VERSION, "--brokers", "3", "--data-dir", str(data_dir),
                           "--timeout", "180", "--poll-interval", "0.5"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        out = _Lines(up.stdout)
        bootstrap = out.until("bootstrap servers:", 300).split(":", 1)[1].strip()
        assert "controllers: 0, 1, 2" in out.until("KRaft cluster", 10)
        status = _status(data_dir, capsys)
        assert status["zookeeper"] is None and status["bootstrap_servers"] == bootstrap
        assert {p["id"]: (p["kind"], p["roles"], p["state"]) for p in status["processes"]} == {
            str(i): ("broker", "broker,controller", "running") for i in range(3)}
        assert "process.roles=broker,controller" in (data_dir / "broker-2" / "server.properties").read_text()
        assert not (data_dir / "zookeeper").exists()

        launcher = kraft.attach(data_dir)
        assert isinstance(launcher, kraft.KRaftLauncher)
        q = launcher.quorum()
        assert q.leader_id in (0, 1, 2) and set(q.voters) == {0, 1, 2} and not q.observers
        wait_until(lambda: _active_controller_gauges(launcher, [0, 1, 2]) == 1, 60, interval_s=0.5,
                   what="ActiveControllerCount summed over the nodes = 1")

        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic("rf3", 1, 3, config={"min.insync.replicas": "2"})])["rf3"].result(60)
        assert len(_produce_consume(bootstrap, "rf3", 50, "before")) == 50

        # kill -9 of the active controller: the two other voters elect a new leader in a higher epoch
        old = q.leader_id
        capsys.readouterr()
        assert main(["cluster", "kill", str(old), "--data-dir", str(data_dir)]) == 0
        assert capsys.readouterr().out == f"{old}: dead\n"
        survivors = [i for i in range(3) if i != old]

        def new_leader() -> kraft.QuorumInfo | None:
            try:
                now = launcher.quorum()
            except kraft.ClusterError:
                return None
            return now if now.leader_id in survivors and now.leader_epoch > q.leader_epoch else None
        elected = wait_until(new_leader, 60, interval_s=0.2, what="a new active controller")
        wait_until(lambda: _active_controller_gauges(launcher, survivors) == 1, 60, interval_s=0.5,
                   what="one active controller among the survivors")
        # RF=3 with min.insync.replicas=2 keeps taking acks=all writes on two brokers
        survivors_bootstrap = ",".join(f"127.0.0.1:{launcher.broker_port(i)}" for i in survivors)
        wait_until(lambda: _isr(survivors_bootstrap, "rf3") == survivors, 60, interval_s=0.5,
                   what="the killed node out of the ISR")
        assert len(_produce_consume(survivors_bootstrap, "rf3", 100, "during")) == 100

        # restart: the node catches up on the metadata log as a voter and rejoins the ISR
        assert main(["cluster", "start", str(old), "--data-dir", str(data_dir), "--timeout", "180"]) == 0

        def caught_up() -> bool:
            try:
                now = launcher.quorum()
            except kraft.ClusterError:
                return False
            return now.voters.get(old, -1) >= elected.high_watermark
        wait_until(caught_up, 120, interval_s=0.5, what=f"node {old} back in the quorum")
        wait_until(lambda: _isr(bootstrap, "rf3") == [0, 1, 2], 120, interval_s=0.5, what=f"node {old} in the ISR")

        assert main(["cluster", "pause", str(survivors[0]), "--data-dir", str(data_dir)]) == 0
        assert {p["id"]: p["state"] for p in _status(data_dir, capsys)["processes"]}[str(survivors[0])] == "paused"
        assert main(["cluster", "resume", str(survivors[0]), "--data-dir", str(data_dir)]) == 0

        up.send_signal(signal.SIGINT)
        assert up.wait(120) == 0
        out.until("cluster stopped", 10)
    finally:
        _cleanup(up, data_dir)
    wait_until(lambda: _processes_mentioning(str(data_dir)) == [], 30, what="no node left running")


def test_separate_controllers(tmp_path):
    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip()
    launcher = kraft.KRaftLauncher(tmp_path / "k", brokers=3, controllers=3)
    try:
        launcher.start_all(timeout_s=180)
        assert launcher.broker_ids == [0, 1, 2] and launcher.controller_ids() == [3, 4, 5]
        assert [s.kind for s in launcher.status()] == ["broker"] * 3 + ["controller"] * 3
        assert "CONTROLLER://" in (tmp_path / "k" / "controller-4" / "server.properties").read_text()
        q = launcher.quorum()
        assert set(q.voters) == {3, 4, 5} and set(q.observers) == {0, 1, 2} and q.leader_id in (3, 4, 5)
        launcher.kill(q.leader_id)

        def new_leader() -> int | None:
            try:
                now = launcher.quorum()
            except kraft.ClusterError:
                return None
            return now.leader_id if now.leader_id not in (-1, q.leader_id) else None
        assert wait_until(new_leader, 60, interval_s=0.2, what="a new active controller") in (3, 4, 5)
        launcher.start(q.leader_id, timeout_s=180)
        wait_until(lambda: launcher.quorum().voters.get(q.leader_id, -1) >= 0, 120, interval_s=0.5,
                   what="the controller back in the quorum")
        assert launcher.stop(1) in ("stopped", "killed")  # a broker's controlled shutdown needs the quorum
        assert launcher.state_of(1) == "stopped"
    finally:
        launcher.shutdown()
