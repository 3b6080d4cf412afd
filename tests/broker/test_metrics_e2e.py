"""Broker metrics end to end: a real broker subprocess with prometheus.listener, scraped over HTTP."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.log.records import Record, build_batch
from kafkascope.local.broker_process import BrokerProcess, free_port
from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, fetch_raw, wait_until

PRODUCE = 0


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def produce(port: int, topic: str, records: bytes, acks: int = 1):
    with WireClient(port) as w:
        resp = w.call(PRODUCE, 9, {"transactional_id": None, "acks": acks, "timeout": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
        return resp.responses[0].partition_responses[0]


@pytest.fixture(scope="module")
def metrics_broker(tmp_path_factory):
    mport = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("metrics-broker"), **{"prometheus.listener": f"127.0.0.1:{mport}",
                                                                     "hdr.log.dir": "HDRDIR"})
    b.props["hdr.log.dir"] = str(b.data_dir / "hdr")
    b.metrics_port = mport
    with b:
        yield b


def test_produce_moves_messages_in_and_bytes_in(metrics_broker, topic_name):
    b = metrics_broker
    create_topic(b.port, topic_name)
    before = scrape(b.metrics_port)
    batch = build_batch([Record(timestamp=1, key=b"k", value=b"v" * 100) for _ in range(7)])
    assert produce(b.port, topic_name, batch).error_code == 0
    after = scrape(b.metrics_port)
    topic = (("topic", topic_name),)
    assert after[("kafka_server_brokertopicmetrics_messagesin_total", topic)] == 7
    assert after[("kafka_server_brokertopicmetrics_bytesin_total", topic)] == len(batch)
    assert after[("kafka_server_brokertopicmetrics_totalproducerequests_total", topic)] == 1
    all_in = ("kafka_server_brokertopicmetrics_messagesin_total", ())
    assert after[all_in] - before.get(all_in, 0) == 7
    produce_count = ("kafka_network_requestmetrics_totaltimems_count_total", (("request", "Produce"),))
    assert after[produce_count] - before.get(produce_count, 0) >= 1
    p99 = ("kafka_network_requestmetrics_totaltimems", (("quantile", "0.99"), ("request", "Produce")))
    assert after[p99] > 0
    assert after[("kafka_network_requestmetrics_requests_total", (("request", "Produce"), ("version", "9")))] >= 1
    assert after[("kafka_log_log_logendoffset", (("partition", "0"), *topic))] == 7
    assert after[("kafka_log_log_size", (("partition", "0"), *topic))] == len(batch)
    assert after[("kafka_log_log_numlogsegments", (("partition", "0"), *topic))] == 1
    hist = ("kafka_network_requestmetrics_totaltime_seconds_bucket", (("le", "+Inf"), ("request", "Produce")))
    assert after[hist] == after[produce_count]
    # Fetch it back: BytesOut and the FetchConsumer split.
    assert fetch_raw(b.port, topic_name)
    after = scrape(b.metrics_port)
    assert after[("kafka_server_brokertopicmetrics_bytesout_total", topic)] == len(batch)
    assert after[("kafka_network_requestmetrics_totaltimems_count_total", (("request", "FetchConsumer"),))] >= 1
    assert after[("kafka_network_requestmetrics_totaltimems_count_total", (("request", "Fetch"),))] >= 1


def test_offset_commits_count_as_appends_to_consumer_offsets(metrics_broker, topic_name):
    """Kafka's group coordinator appends through ReplicaManager.appendRecords, which marks the __consumer_offsets
    topic's meters and the all-topics ones; the tombstones of a group deletion go to the partition directly
    (cleanupGroupMetadata) and are not counted."""
    b = metrics_broker
    create_topic(b.port, topic_name, partitions=3)
    internal = (("topic", "__consumer_offsets"),)
    names = ("kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_bytesin_total",
             "kafka_server_brokertopicmetrics_totalproducerequests_total")

    def counts():
        got = scrape(b.metrics_port)
        return {(n, lbl): got.get((n, lbl), 0) for n in names for lbl in (internal, ())}
    group = f"g-{topic_name}"
    before = counts()
    with WireClient(b.port) as w:
        resp = w.call(8, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                             "group_instance_id": None, "topics": [{"name": topic_name, "partitions": [
                                 {"partition_index": p, "committed_offset": 10 + p, "committed_leader_epoch": -1,
                                  "committed_metadata": ""} for p in range(3)]}]})
    assert all(p.error_code == 0 for t in resp.topics for p in t.partitions)
    after = counts()
    delta = {k: after[k] - before[k] for k in after}
    messages, nbytes, requests = names
    assert delta[(messages, internal)] == delta[(messages, ())] == 3   # one record per committed partition
    assert delta[(requests, internal)] == delta[(requests, ())] == 1   # one append
    assert delta[(nbytes, internal)] == delta[(nbytes, ())] > 3 * 20  # the batch (3 keyed offset records)
    with WireClient(b.port) as w:
        assert w.call(42, 2, {"groups_names": [group]}).results[0].error_code == 0
    assert counts() == after


def test_bad_request_counts_errors_with_their_label(metrics_broker, topic_name):
    b = metrics_broker
    create_topic(b.port, topic_name)
    key = ("kafka_network_requestmetrics_errors_total", (("error", "INVALID_REQUIRED_ACKS"), ("request", "Produce")))
    before = scrape(b.metrics_port).get(key, 0)
    resp = produce(b.port, topic_name, build_batch([Record(timestamp=1, value=b"v")]), acks=5)
    assert resp.error_code != 0
    after = scrape(b.metrics_port)
    assert after[key] == before + 1
    assert after[("kafka_network_requestmetrics_errors_total", (("error", "NONE"), ("request", "Produce")))] >= 0
    failed = ("kafka_server_brokertopicmetrics_failedproducerequests_total", (("topic", topic_name),))
    assert after[failed] == 1


def _settled_scrape(port: int) -> dict:
    """A scrape taken once every partition has its leader: a topic created by an earlier test may still be
    becoming leader (partition counted, leadership not yet), which is a moment, not a state to assert on."""
    def settled():
        got = scrape(port)
        pc = ("kafka_server_replicamanager_partitioncount", ())
        return got if got[pc] == got[("kafka_server_replicamanager_leadercount", ())] else None
    return wait_until(settled, 10, what="every partition led")


def test_standalone_replication_and_broker_gauges(metrics_broker):
    got = _settled_scrape(metrics_broker.metrics_port)
    for name, value in [("kafka_server_replicamanager_underreplicatedpartitions", 0),
                        ("kafka_server_replicamanager_underminisrpartitioncount", 0),
                        ("kafka_controller_kafkacontroller_activecontrollercount", 1),
                        ("kafka_controller_kafkacontroller_offlinepartitionscount", 0),
                        ("kafka_controller_kafkacontroller_preferredreplicaimbalancecount", 0),
                        ("kafka_controller_controllerstats_uncleanleaderelections_total", 0),
                        ("kafka_server_replicamanager_isrshrinks_total", 0),
                        ("kafka_server_replicamanager_isrexpands_total", 0),
                        ("kafka_log_logmanager_offlinelogdirectorycount", 0),
                        ("kafka_server_kafkaserver_brokerstate", 3)]:
        assert got[(name, ())] == value, name
    pc = got[("kafka_server_replicamanager_partitioncount", ())]
    assert pc >= 5 and got[("kafka_server_replicamanager_leadercount", ())] == pc
    assert got[("kafka_server_replicamanager_atminisrpartitioncount", ())] == pc  # RF 1, min ISR 1
    assert 0.0 <= got[("kafka_network_socketserver_networkprocessoravgidle_percent", ())] <= 1.0
    assert 0.0 < got[("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", ())] <= 1.0
    assert got[("kafka_server_delayedoperationpurgatory_purgatorysize", (("delayedOperation", "Fetch"),))] >= 0
    assert got[("kafka_server_socket_server_metrics_connection_creation_total",
                (("listener", "PLAINTEXT"), ("networkProcessor", "0")))] >= 1
    # Strimzi's rules (kafka.(\w+)<...) cannot match the dotted kafka.coordinator.group domain, so under them
    # Kafka's GroupMetadataManager gauges are not exported, ours neither; Confluent's rules name them.
    assert not any(name.startswith("kafka_coordinator_") for name, _ in got)
    assert got[("kafka_server_kafkaserver_linux_disk_write_bytes", ())] >= 0
    assert ("process_cpu_seconds_total", ()) in got and ("process_open_fds", ()) in got
    assert ("python_gc_pause_seconds_count", (("generation", "0"),)) in got
    assert got[("kafka_network_requestmetrics_requestqueuetimems", (("quantile", "0.50"),
                                                                   ("request", "ListPartitionReassignments")))] == 0


def test_fetch_long_poll_is_remote_time_and_purgatory(metrics_broker, topic_name):
    b = metrics_broker
    create_topic(b.port, topic_name)
    with WireClient(b.port) as w:
        w.send(1, 11, {"replica_id": -1, "max_wait": 1500, "min_bytes": 1, "max_bytes": 1 << 20,
                       "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                           {"topic": topic_name, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                                 "fetch_offset": 0, "log_start_offset": -1,
                                                                 "partition_max_bytes": 1 << 20}]}],
                       "forgotten_topics_data": [], "rack_id": ""})
        key = ("kafka_server_delayedoperationpurgatory_numdelayedoperations", (("delayedOperation", "Fetch"),))
        wait_until(lambda: scrape(b.metrics_port)[key] >= 1, 5, what="a parked fetch")
        w.recv(1, 11)
    got = scrape(b.metrics_port)
    assert got[("kafka_network_requestmetrics_remotetimems", (("quantile", "0.999"), ("request", "Fetch")))] >= 1000


def test_acks_all_produce_to_a_leader_only_isr_is_answered_without_waiting(metrics_broker, topic_name):
    """Replicated at the append (ISR = the leader): no produce purgatory, no remote time, as in Kafka."""
    b = metrics_broker
    create_topic(b.port, topic_name)
    for _ in range(5):
        assert produce(b.port, topic_name, build_batch([Record(timestamp=1, value=b"v")]), acks=-1).error_code == 0
    got = scrape(b.metrics_port)
    assert got[("kafka_network_requestmetrics_requests_total", (("request", "Produce"), ("version", "9")))] >= 5
    assert got[("kafka_network_requestmetrics_remotetimems", (("quantile", "0.999"), ("request", "Produce")))] == 0


def test_hdr_interval_logs_are_written(metrics_broker, topic_name):
    from hdrh.log import HistogramLogReader

    from common.hdr import LATENCY_US

    b = metrics_broker
    create_topic(b.port, topic_name)
    produce(b.port, topic_name, build_batch([Record(timestamp=1, value=b"v")]))
    path = b.data_dir / "hdr" / "broker-0.Produce.TotalTimeMs.hlog"
    wait_until(lambda: path.exists() and any(line[:1].isdigit() for line in path.read_text().splitlines()), 25,
               what="an interval line")
    text = path.read_text()
    assert "#[Histogram log format version 1.2]" in text and "#[StartTime: " in text
    reader = HistogramLogReader(str(path), LATENCY_US.new())
    total = 0
    while (h := reader.get_next_interval_histogram()) is not None:
        total += h.get_total_count()
    assert total >= 1


def test_metrics_off_without_listener(shared_broker):
    # shared_broker has no prometheus.listener: nothing listens, nothing is recorded (no BrokerMetrics).
    assert "prometheus.listener" not in shared_broker.props


def test_jvm_and_process_series_the_dashboards_chart(metrics_broker):
    """No JVM here: heap = resident anonymous memory, nonheap = resident file-backed, max = the memory limit or -1,
    threads = OS threads, GC = CPython's generations (broker/metrics/jvm.py); process_* from prometheus-client."""
    got = scrape(metrics_broker.metrics_port)
    heap = got[("jvm_memory_used_bytes", (("area", "heap"),))]
    nonheap = got[("jvm_memory_used_bytes", (("area", "nonheap"),))]
    assert heap > 1 << 20 and nonheap > 0
    assert heap + nonheap <= 1.5 * got[("process_resident_memory_bytes", ())]  # the RSS, read a moment apart
    assert got[("jvm_memory_bytes_max", (("area", "heap"),))] == got[("jvm_memory_max_bytes", (("area", "heap"),))]
    assert got[("jvm_threads_current", ())] >= 1
    assert ("jvm_gc_collection_seconds_count", (("gc", "python-gen0"),)) in got
    assert ("jvm_gc_collection_seconds_sum", (("gc", "python-gen2"),)) in got
    for name in ("process_cpu_seconds_total", "process_open_fds", "process_resident_memory_bytes"):
        assert (name, ()) in got, name
