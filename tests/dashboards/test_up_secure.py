"""`kafkascope up --security sasl_ssl`: the local stack secured end to end (kafkascope/local/stack/secure.py).

The brokers listen on SASL_SSL only with ACLs on; xmonitor, the lag monitor and the sample workload connect with
the admin's client.properties (Kafka's Java names); every /metrics endpoint and the Burrow API answer 401 without
the scrape login and serve TLS with the kit's certificate; Prometheus scrapes every target over https with basic
auth and the usual alert rules and queries see data."""

from __future__ import annotations

import base64
import shutil
import ssl
import urllib.error
import urllib.request

import pytest

from kafkascope.local import node_exporter
from kafkascope.local.cluster import wait_for
from kafkascope.local.stack.local import XMONITOR_TOPIC, Stack
from kafkascope.local.stack.procs import prometheus_query
from kafkascope.local.stack.secure import SCRAPE_USER

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None or node_exporter.binary() is None
                                or shutil.which("openssl") is None,
                                reason="Debian packages prometheus, prometheus-node-exporter and openssl needed")
PARTS = ["xmonitor", "lag", "workload", "node-exporter", "prometheus", "zk-exporter"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("secure-stack"), parts=PARTS, scrape_interval="1s", security="sasl_ssl")
    try:
        s.start(progress=print, timeout_s=120)
        yield s
    finally:
        s.stop()


def _get(url: str, ca: str, login: tuple[str, str] | None) -> int:
    req = urllib.request.Request(url)
    if login is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(":".join(login).encode()).decode())
    try:
        return urllib.request.urlopen(req, timeout=10, context=ssl.create_default_context(cafile=ca)).status
    except urllib.error.HTTPError as e:
        return e.code


def test_every_endpoint_wants_tls_and_the_scrape_login(stack):
    assert stack.secure is not None
    ca = str(stack.secure.kit.certs["ca"])
    login = (SCRAPE_USER, stack.secure.password_file.read_text().strip())
    urls = [url for label, url in stack.urls() if url.startswith("https://")]
    assert len(urls) == 3 + 1 + 3   # brokers, ZooKeeper exporter, xmonitor + lag API + node exporter
    for url in urls:
        assert _get(url, ca, login) == 200, url
        assert _get(url, ca, None) == 401, url
        assert _get(url, ca, (SCRAPE_USER, "wrong")) == 401, url
    with pytest.raises((urllib.error.URLError, ConnectionError)):   # plain HTTP on a TLS port gets no answer
        urllib.request.urlopen(urls[0].replace("https://", "http://"), timeout=10)


def test_prometheus_scrapes_everything_and_the_probe_works(stack):
    prom = f"http://127.0.0.1:{stack.ports['prometheus']}"
    wait_for(lambda: (r := prometheus_query(prom, "up")) and len(r) == 7 and all(x["value"][1] == "1" for x in r),
             90, 1.0, "all 7 targets up over https with basic auth")
    # the probe produces and consumes through SASL_SSL with the kit's client.properties
    wait_for(lambda: any(float(r["value"][1]) > 0 for r in prometheus_query(
        prom, f'xmonitor_records_consumed_total{{topic="{XMONITOR_TOPIC}"}}')), 90, 1.0, "probe records consumed")
    wait_for(lambda: prometheus_query(prom, 'kafka_server_socket_server_metrics_successful_authentication_total'
                                            '{listener="SASL_SSL"} > 0'), 60, 1.0, "authentications counted")
    # the lag monitor reads the workload's group through the secured listener
    wait_for(lambda: prometheus_query(prom, 'burrow_kafka_consumer_status{consumer_group="demo-consumer"}'), 90,
             1.0, "the sample group's status")
