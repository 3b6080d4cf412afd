"""`kafkascope cluster status/pause/resume/kill/stop` on a KRaft cluster directory, without a JVM: the directory is
written by KRaftLauncher.prepare() (storage already "formatted", so no StorageTool runs) and its nodes are stand-in
processes (`sleep`), so what is tested is that the CLI attaches through kraft.json (roles, node ids) and acts on
the recorded processes. `start` needs Kafka's JVM and is covered by tests/cluster/test_kraft_cluster.py."""

from __future__ import annotations

import subprocess

import pytest

from kafkascope.cli import main
from kafkascope.local import kraft
from kafkascope.local import process as proc
from kafkascope.local.launcher import ClusterError, ClusterLauncher


@pytest.fixture
def written(tmp_path):
    """Brokers 0 and 1 and controller 2 (separate roles), each a `sleep` process."""
    data_dir = tmp_path / "kraft"
    for kind, node in (("broker", 0), ("broker", 1), ("controller", 2)):
        logs = data_dir / f"{kind}-{node}" / "logs"
        logs.mkdir(parents=True)
        (logs / "meta.properties").write_text("cluster.id=written\n")
    launcher = kraft.KRaftLauncher(data_dir, brokers=2, controllers=1).prepare()
    sleepers: list[subprocess.Popen] = []
    with launcher._locked() as state:
        for m in state.members.values():
            p = proc.spawn(["sleep", "120"], data_dir / f"sleep-{m.id}.log")
            sleepers.append(p)
            m.pid, m.started, m.last_action = p.pid, proc.start_time(p.pid), "started"
    yield data_dir, {str(i): p for i, p in enumerate(sleepers)}
    for p in sleepers:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def cli(capsys, *args: str) -> str:
    assert main(["cluster", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_attach_recognises_a_kraft_directory(written):
    data_dir, _ = written
    launcher = kraft.attach(data_dir)
    assert isinstance(launcher, kraft.KRaftLauncher) and launcher.cluster_id
    assert launcher.controller_ids() == [2] and (launcher.roles(0), launcher.roles(2)) == ("broker", "controller")
    with pytest.raises(ClusterError, match="holds a KRaft cluster"):    # not the ZooKeeper launcher's to drive
        ClusterLauncher.attach(data_dir)


def test_cli_status_and_actions_on_a_written_kraft_cluster(written, capsys):
    data_dir, sleepers = written
    d = ["--data-dir", str(data_dir)]
    status = cli(capsys, "status", *d)
    rows = {line.split()[0]: line.split() for line in status.splitlines() if line[:1].isdigit()}
    assert rows["0"][1:3] == ["broker", "broker"] and rows["2"][1:3] == ["controller", "controller"]
    assert all(r[-1] == "running" for r in rows.values()), status
    assert "quorum: unknown" in status            # nothing answers DescribeQuorum: said, not raised

    assert cli(capsys, "pause", "1", *d).strip() == "1: paused"
    assert proc.os_state(sleepers["1"].pid) == proc.PAUSED
    assert cli(capsys, "resume", "1", *d).strip() == "1: running"
    assert cli(capsys, "kill", "0", *d).strip() == "0: dead"
    assert cli(capsys, "stop", "2", *d).strip() == "2: stopped"
    assert [proc.os_state(sleepers[i].pid) for i in ("0", "1", "2")] == [proc.DEAD, proc.RUNNING, proc.DEAD]
    status = cli(capsys, "status", *d)
    states = {line.split()[0]: line.split()[-1] for line in status.splitlines() if line[:1].isdigit()}
    assert states == {"0": "dead", "1": "running", "2": "stopped"}
