"""A real Prometheus (Debian's package) scrapes a broker and answers queries over its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest

from broker.log.records import Record, build_batch
from common.polling import wait_for_port
from kafkascope.local.broker_process import BrokerProcess, free_port
from tests.broker.test_metrics_e2e import produce
from tests.e2e.helpers import create_topic, wait_until

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="Debian package `prometheus` not installed")


def query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        body = json.loads(urllib.request.urlopen(url, timeout=5).read())
    except OSError:
        return []
    return body["data"]["result"] if body.get("status") == "success" else []


def test_prometheus_scrapes_broker_and_answers_queries(tmp_path, topic_name):
    mport, pport = free_port(), free_port()
    with BrokerProcess(tmp_path / "broker", **{"prometheus.listener": f"127.0.0.1:{mport}"}) as b:
        create_topic(b.port, topic_name)
        produce(b.port, topic_name, build_batch([Record(timestamp=1, value=b"v") for _ in range(3)]))
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: kafka-broker\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{mport}']\n        labels: {{namespace: kafka}}\n")
        promtool = shutil.which("promtool")
        if promtool:
            subprocess.run([promtool, "check", "config", str(cfg)], check=True, capture_output=True, timeout=30)
        log = open(tmp_path / "prometheus.log", "wb")
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{pport}"], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port("127.0.0.1", pport, lambda: proc.poll() is None, timeout_s=30)
            up = wait_until(lambda: [r for r in query(pport, "up") if r["value"][1] == "1"], 60, 0.5,
                            what="the broker target up")
            assert up[0]["metric"]["job"] == "kafka-broker"
            got = wait_until(lambda: query(pport, f'kafka_server_brokertopicmetrics_messagesin_total'
                                                  f'{{topic="{topic_name}"}}'), 30, 0.5, what="messagesin")
            assert float(got[0]["value"][1]) == 3
            assert query(pport, "kafka_controller_kafkacontroller_activecontrollercount")[0]["value"][1] == "1"
            p99 = query(pport, 'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}')
            assert p99 and float(p99[0]["value"][1]) >= 0
            hist = wait_until(lambda: query(pport, 'histogram_quantile(0.99, sum by (le) ('
                                                   'kafka_network_requestmetrics_totaltime_seconds_bucket'
                                                   '{request="Produce"}))'), 30, 0.5, what="histogram_quantile")
            assert float(hist[0]["value"][1]) > 0
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            log.close()
