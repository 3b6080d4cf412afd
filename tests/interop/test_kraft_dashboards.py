"""The KRaft dashboard and alerts on a real Prometheus scraping a real Apache Kafka 4.1.1 (single-node KRaft,
combined broker+controller) through the JMX exporter agent with Strimzi's rules plus
exporter/rules/kafkascope-kraft-additions.yaml: every query of the kraft board returns data, every KRaft-only name
is exported, the cluster overview's active-controller sum is 1, and the kafkascope-kraft alerts load and stay quiet
on a healthy node. Traffic: a consumer-protocol group (KIP-848) and a classic one, both committing."""

from __future__ import annotations

import urllib.request
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from common.polling import wait_until
from dashboards import build, grafana
from dashboards.metrics import KRAFT_ONLY, M
from kafkascope.local.process import free_port
from tests.interop.conftest import apache_kafka_or_skip
from tests.interop.live_prometheus import Prometheus

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
SCRAPE_S = 1


def _consume(bootstrap: str, topic: str, group: str, protocol: str, want: int) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0

    def step() -> bool:
        nonlocal got
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            c.commit(message=m, asynchronous=False)
            got += 1
        return got >= want
    wait_until(step, 60.0, interval_s=0.0, what=f"{want} messages read by {group} ({protocol})")
    return c


def _evaluated_after(prom: Prometheus, group: str, since: datetime) -> bool:
    """The rule group's last evaluation (Prometheus' rules API, whole seconds) is after `since`."""
    for g in prom._get("/api/v1/rules", [])["groups"]:
        if g["name"] == group:
            last = datetime.fromisoformat(g["lastEvaluation"][:19]).replace(tzinfo=UTC)
            return last > since
    return False


def test_kraft_board_queries_have_data_on_kafka_41(tmp_path):
    from kafkascope.local.apache_kafka import DEFAULT_VERSION, ZK_VERSION, ApacheKafka

    apache_kafka_or_skip(DEFAULT_VERSION)
    apache_kafka_or_skip(ZK_VERSION)   # the JMX exporter agent comes with it
    port = free_port()
    with ApacheKafka(version=DEFAULT_VERSION, metrics_port=port) as k:
        topic = f"kraft-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": k.bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        p = Producer({"bootstrap.servers": k.bootstrap})
        for i in range(20):
            p.produce(topic, b"m%d" % i)
        assert p.flush(10) == 0
        consumers = [_consume(k.bootstrap, topic, f"g848-{topic}", "consumer", 20),
                     _consume(k.bootstrap, topic, f"gclassic-{topic}", "classic", 20)]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        exported = {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines()
                    if line and not line.startswith("#")}
        assert KRAFT_ONLY - exported == set(), "KRaft names the node does not export"

        job = {"job_name": build.JOB_BROKER, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        prom = Prometheus(tmp_path / "prometheus", job, build.alerting_rules(), scrape_s=SCRAPE_S).start()
        try:
            queries = [(t, e) for d, t, e in grafana.queries() if d == "kraft"]
            pending = list(queries)

            def all_have_data() -> bool:
                pending[:] = [(t, e) for t, e in pending if not prom.query(e)]
                return not pending
            wait_until(all_have_data, 60.0, interval_s=SCRAPE_S, what=f"data for every kraft query; left {pending}")
            assert float(prom.query(f"sum({M.active_controller})")[0]["value"][1]) == 1
            # one group of each protocol; Kafka recounts groups every 60 s (KAFKA-18655), so up to a minute late
            wait_until(lambda: {r["metric"]["protocol"] for r in prom.query(f"{M.groups_by_protocol} >= 1")}
                       >= {"consumer", "classic"}, 90.0, interval_s=SCRAPE_S, what="groups counted by protocol")
            assert prom.query(f'{M.consumer_groups_by_state}{{state="Stable"}} >= 1')
            states = {r["metric"]["current_state"] for r in prom.query(f"{M.raft_state} == 1")}
            assert states == {"leader"}   # the only voter leads
            # evaluated on a healthy node (after all the data was there): none of the KRaft alerts pending or firing
            since = datetime.now(UTC).replace(microsecond=0)
            wait_until(lambda: _evaluated_after(prom, "kafkascope-kraft", since), 30.0, interval_s=SCRAPE_S,
                       what="the kafkascope-kraft rules evaluated")
            kraft = {r["alert"] for g in build.alerting_rules()["groups"] if g["name"] == "kafkascope-kraft"
                     for r in g["rules"]}
            assert not set(prom.active_alerts()) & kraft
        finally:
            prom.stop()
            for c in consumers:
                c.close()
