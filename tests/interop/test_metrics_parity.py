"""Metrics parity: the same workload on both backends; our /metrics (prometheus.listener) against the JMX
exporter's output for Apache Kafka 3.9 under the same (Strimzi) naming rules.

* every must-have series name (MUST_HAVE: what the community dashboards and alerts query) is present on
  both, with the same label names;
* the comparable counters (messages in, bytes in, per topic) move by the same amount within 5%;
* the produce-request counters (per topic and broker-wide) count exactly the Produce requests the client says it
  sent (librdkafka's statistics): the client usually sends one per flushed batch, but a loaded machine makes it
  split some, so the client's own count is the reference, not the number of batches.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.helpers import create_topic, wait_until
from tests.interop.metrics_page import scrape, value
from tests.scenarios.clients import consume

MUST_HAVE = [
    # A: same name in the Strimzi and Confluent conventions
    "kafka_cluster_partition_underminisr",
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_log_log_size",
    "kafka_server_kafkaserver_linux_disk_read_bytes",
    "kafka_server_kafkaserver_linux_disk_write_bytes",
    "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_partitioncount",
    "kafka_server_replicamanager_underreplicatedpartitions",
    # B: Strimzi / jmx_exporter kafka-2_0_0 naming
    "kafka_cluster_partition_atminisr",
    "kafka_cluster_partition_replicascount",
    "kafka_controller_controllerstats_uncleanleaderelections_total",
    "kafka_log_logmanager_offlinelogdirectorycount",
    "kafka_network_socketserver_networkprocessoravgidle_percent",
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    "kafka_server_brokertopicmetrics_failedproducerequests_total",
    "kafka_server_brokertopicmetrics_messagesin_total",
    "kafka_server_brokertopicmetrics_totalfetchrequests_total",
    "kafka_server_brokertopicmetrics_totalproducerequests_total",
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
    "kafka_server_replicamanager_underminisrpartitioncount",
    "kafka_server_socket_server_metrics_connection_count",
]

BATCHES, PER_BATCH = 10, 100

# Kafka 3.9 creates a topic's BrokerTopicMetrics meters lazily (MeterWrapper: on the first event), so a topic with no
# failed request has no per-topic failed-request series; ours exports them at 0 for every topic it has seen.  The
# broker-wide series (no labels) exist on both; dashboards sum, so the extra zero series change no panel.
LAZY_PER_TOPIC = {"kafka_server_brokertopicmetrics_failedfetchrequests_total",
                  "kafka_server_brokertopicmetrics_failedproducerequests_total"}


def _produce_requests(page: dict) -> float:
    return sum(v for ls, v in page.get("kafka_network_requestmetrics_requests_total", {}).items()
               if dict(ls).get("request") == "Produce")


def _workload(backend, topic: str) -> int:
    """BATCHES flushed batches of PER_BATCH records each; returns how many Produce requests the client sent."""
    create_topic(backend.port, topic)
    from confluent_kafka import Producer

    reports: list[dict] = []
    p = Producer({"bootstrap.servers": backend.bootstrap, "linger.ms": 1000, "acks": 1,
                  "batch.num.messages": PER_BATCH, "enable.idempotence": False,
                  "statistics.interval.ms": 100, "stats_cb": lambda js: reports.append(json.loads(js))})
    for b in range(BATCHES):
        for i in range(PER_BATCH):
            p.produce(topic, key=f"k{i}".encode(), value=f"value-{b}-{i}".encode() * 5, partition=0)
        assert p.flush(30) == 0
    # A report served just after flush() may have been taken before it returned; the second one after it was not.
    flushed = len(reports)
    wait_until(lambda: p.poll(0.1) >= 0 and len(reports) >= flushed + 2, 10, what="statistics after the last flush")
    sent = sum(b.get("req", {}).get("Produce", 0) for b in reports[-1]["brokers"].values())
    assert sent >= BATCHES, f"the client reports {sent} Produce requests for {BATCHES} flushed batches"
    consume("confluent", backend.bootstrap, topic, BATCHES * PER_BATCH)
    return sent


@pytest.fixture(scope="session")
def observed() -> dict:
    return {}


def _observe(backend, backend_name: str, observed: dict):
    """Run the workload once per backend: (scrape before, scrape after, topic), kept for the cross-backend test."""
    if backend_name not in observed:
        url = backend.metrics_url
        assert url, f"{backend_name} has no /metrics endpoint"
        topic = f"mp-{uuid.uuid4().hex[:8]}"
        before = scrape(url)
        sent = _workload(backend, topic)
        after = wait_until(lambda: (pg := scrape(url)) and value(
            pg, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) >= BATCHES * PER_BATCH and pg,
            20, what="messages-in counter of the workload topic")
        observed[backend_name] = (before, after, topic, sent)
    return observed[backend_name]


@pytest.fixture
def workload(backend, backend_name, observed):
    return _observe(backend, backend_name, observed)


def test_must_have_series_present(backend_name, workload):
    _, page, _, _ = workload
    missing = [n for n in MUST_HAVE if n not in page]
    assert not missing, f"{backend_name} /metrics lacks {missing}"


def test_counters_move_with_the_workload(backend_name, workload):
    before, after, topic, sent = workload
    n = BATCHES * PER_BATCH
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == n
    assert value(after, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic=topic) == sent
    assert _produce_requests(after) - _produce_requests(before) == sent


def test_same_names_labels_and_counters_on_both(request, observed):
    for name in ("kafkascope", "apache-kafka"):
        _observe(request.getfixturevalue("_backend_" + name.replace("-", "_")), name, observed)
    ours_before, ours, ours_topic, ours_sent = observed["kafkascope"]
    ak_before, ak, ak_topic, ak_sent = observed["apache-kafka"]
    problems = []
    for name in MUST_HAVE:
        ours_labels = {frozenset(k for k, _ in ls) for ls in ours.get(name, {})}
        ak_labels = {frozenset(k for k, _ in ls) for ls in ak.get(name, {})}
        if name in LAZY_PER_TOPIC and ours_labels - ak_labels == {frozenset({"topic"})}:
            ours_labels = ak_labels   # known, harmless: see LAZY_PER_TOPIC
        if ours_labels != ak_labels:
            problems.append(f"{name}: label names ours {sorted(map(sorted, ours_labels))} "
                            f"vs Kafka {sorted(map(sorted, ak_labels))}")

    def close(a: float, b: float) -> bool:
        return abs(a - b) <= 0.05 * max(abs(a), abs(b), 1)

    for name in ("kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_bytesin_total"):
        a, b = value(ours, name, topic=ours_topic), value(ak, name, topic=ak_topic)
        if not close(a, b):
            problems.append(f"{name}{{topic}}: ours {a} vs Kafka {b}")
    name = "kafka_server_brokertopicmetrics_totalproducerequests_total"
    a, b = value(ours, name, topic=ours_topic), value(ak, name, topic=ak_topic)
    if (a, b) != (ours_sent, ak_sent):
        problems.append(f"{name}{{topic}}: ours {a} vs Kafka {b} (the client sent {ours_sent} and {ak_sent})")
    a = _produce_requests(ours) - _produce_requests(ours_before)
    b = _produce_requests(ak) - _produce_requests(ak_before)
    if (a, b) != (ours_sent, ak_sent):
        problems.append(f"kafka_network_requestmetrics_requests_total{{request=Produce}} delta: ours {a} vs Kafka {b} "
                        f"(the client sent {ours_sent} and {ak_sent})")
    assert not problems, "metrics parity differences:\n" + "\n".join(problems)
