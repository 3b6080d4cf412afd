"""Slow suite: the SLO report on a real standalone Spark master and worker started on loopback by the test."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pyspark
import pytest

from common.polling import wait_for_port
from kafkascope.local.broker_process import free_port
from kafkascope.local.cluster import wait_for
from slo.generate import DAY_S, GenConfig, Incident, expected, generate

pytestmark = pytest.mark.slow


def _alive_workers(webui_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=5) as r:
        return int(json.load(r)["aliveworkers"])


@pytest.fixture
def standalone(tmp_path):
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, SPARK_WORKER_DIR=str(tmp_path))
    port, webui = free_port(), free_port()
    master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(webui)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [master]
    try:
        wait_for_port("127.0.0.1", port, lambda: master.poll() is None, timeout_s=60)
        url = f"spark://127.0.0.1:{port}"
        procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host",
                                       "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port",
                                       str(free_port())], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        wait_for(lambda: _alive_workers(webui) >= 1, timeout=60, what="the worker registered with the master")
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
