"""`kafkascope fuzz` as a user runs it."""

from __future__ import annotations

from kafkascope.cli import main
from kafkascope.local.broker_process import BrokerProcess, free_port


def test_fuzz_command_reports_a_run_and_exits_0_when_the_broker_stays_up(shared_broker: BrokerProcess,
                                                                         capsys, tmp_path) -> None:
    code = main(["fuzz", "--bootstrap-server", shared_broker.bootstrap, "--frames", "400", "--seed", "3",
                 "--connections", "4", "--crash-dir", str(tmp_path / "crashes")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "API versions of" in out and "400 frames in" in out and "broker up" in out
    assert "not fuzzed: 0 v0, 0 v1, 0 v2" in out  # Produce v0-2: advertised (as Kafka 4.0), no schema
    assert not (tmp_path / "crashes").exists()


def test_fuzz_command_names_an_unreachable_broker(capsys) -> None:
    assert main(["fuzz", "--bootstrap-server", f"127.0.0.1:{free_port()}"]) == 1
    assert "cannot ask 127.0.0.1:" in capsys.readouterr().err
    assert main(["fuzz", "--bootstrap-server", "nohostport"]) == 1
    assert "must be HOST:PORT" in capsys.readouterr().err
