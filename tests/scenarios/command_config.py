"""xmonitor and the lag monitor with a Java client.properties (what `--command-config` reads), as scenario bodies
shared by tests/security_wire/test_command_config.py (one broker with every listener kind) and
tests/interop/test_security_interop.py (the secured clusters: ours, Kafka 3.9 with ZooKeeper, Kafka 4.1 KRaft)."""

from __future__ import annotations

from pathlib import Path

from common.client_properties import load
from kafkascope.local.cluster import wait_for
from lagmonitor.rules import Status
from tests.scenarios.lag import CONFIG, Running, Scenario
from tests.xmonitor.helpers import fast_config, gauge
from xmonitor.app import XMonitor


def xmonitor_probes(bootstrap: str, properties: Path, tmp_path: Path) -> None:
    """The probe produces and consumes through the login of `properties`: records consumed, availability 1."""
    cfg = fast_config(bootstrap, tmp_path, client_props=load(properties))
    with XMonitor(cfg) as m:
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") >= 20, timeout=60)
        wait_for(lambda: gauge(m, "produce-service", "produce-availability-avg") == 1.0, timeout=30)
        assert gauge(m, "consume-service", "consume-error-total") == 0


def lag_monitor_reports_ok(bootstrap: str, properties: Path) -> None:
    """The lag monitor reads the group's commits through the login of `properties` and reports Burrow's OK."""
    running = Running(bootstrap, CONFIG, client_props=load(properties))
    try:
        s = Scenario(bootstrap, running, 50)
        try:
            s.commit_stored(50)
            g = s.wait_status(Status.OK, Status.OK)
            assert g.partitions[0].current_lag == 0
        finally:
            s.close()
    finally:
        running.close()
