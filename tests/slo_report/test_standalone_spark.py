"""Slow suite: the SLO report on a real standalone Spark master and worker started on loopback by the test."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from slo.generate import DAY_S, GenConfig, Incident, expected, generate

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


@pytest.fixture
def standalone(tmp_path):
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, SPARK_WORKER_DIR=str(tmp_path))
    port = _free_port()
    master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(_free_port())], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [master]
    try:
        _wait_port(port)
        url = f"spark://127.0.0.1:{port}"
        procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host",
                                       "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port",
                                       str(_free_port())], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        time.sleep(3)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_report_on_standalone_cluster(standalone, tmp_path):
    from slo.jobs.slo_report import slo_report
    from slo.spark import session
    from slo.specs import load_specs

    cfg = GenConfig(days=1, clusters=1, partitions=3, interval_s=60,
                    incidents=(Incident.parse("broker-down@2h+1h:broker=0"),))
    generate(cfg, tmp_path / "sli")
    spark = session("test-slo-standalone", standalone, shuffle_partitions=2)
    try:
        assert spark.sparkContext.master == standalone
        r = slo_report(spark, tmp_path / "sli", load_specs(), tmp_path / "out", window_s=DAY_S)
    finally:
        spark.stop()
    e = expected(cfg)
    write = next(s for s in r["slos"] if s["name"] == "write-availability")
    assert write["occurrences"]["total"] == e["produce_attempts"]
    assert write["occurrences"]["bad"] == e["produce_attempts"] - e["produce_successes"]
    assert r["latency"]["window"]["e2e_latency_hdr"]["count"] == e["latency_samples"]
