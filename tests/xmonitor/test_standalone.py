"""xmonitor against one real broker: a healthy run, injected duplicates and gaps, a restart."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from kafkascope.local.cluster import wait_for
from tests.xmonitor.helpers import fast_config, gauge, registry_total, scrape, total
from xmonitor import payload, sink
from xmonitor.app import XMonitor


def test_healthy_broker_full_availability_and_sli_files_agree(shared_broker, tmp_path):
    cfg = fast_config(shared_broker.bootstrap, tmp_path, partitions_to_brokers_ratio=3)
    with XMonitor(cfg) as m:
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") >= 150, timeout=20)
        # every partition has acknowledged sends in Kafka's 60 × 1 s window once the first ticks are through
        wait_for(lambda: gauge(m, "produce-service", "produce-availability-avg") == 1.0, timeout=10)
        assert gauge(m, "consume-service", "consume-availability-avg") == 1.0
        for attr in ("records-lost-total", "records-duplicated-total", "records-delayed-total", "consume-error-total"):
            assert gauge(m, "consume-service", attr) == 0, attr
        assert gauge(m, "consume-service", "records-delay-ms-99th") < 1000
        s = scrape(m)
        assert {labels["partition"] for labels, _ in s["xmonitor_produce_attempts_total"]} == {"0", "1", "2"}
        assert {labels["leader"] for labels, _ in s["xmonitor_produce_attempts_total"]} == {"0"}
        assert total(s, "xmonitor_service_up") == 5
        assert s["kmf_services_produce_service_single_cluster_monitor_produce_availability_avg"][0][1] == 1.0
        assert s["kmf_kafka_monitor_offline_runnable_count"][0][1] == 0
        assert total(s, "xmonitor_offset_commits_total", source="probe", result="success") >= 1
        assert total(s, "xmonitor_offset_commits_total", result="failure") == 0
    # after stop the sink has written the last interval: the files hold exactly what the counters counted
    t = sink.read_dir(cfg.sli_dir)
    assert t.num_rows >= 3 and set(t.column("partition").to_pylist()) == {0, 1, 2}
    col = lambda c: sum(t.column(c).to_pylist())  # noqa: E731
    prom = lambda n: registry_total(m, n)  # noqa: E731
    assert col("produce_attempts") == prom("xmonitor_produce_attempts_total") > 0
    assert col("produce_successes") == prom("xmonitor_produce_successes_total")
    assert col("records_consumed") == prom("xmonitor_records_consumed_total") > 0
    assert col("records_lost") == col("records_duplicated") == col("records_late") == 0
    assert set(t.column("run_id").to_pylist()) == {m.run_id}


def _inject(bootstrap: str, topic: str, partition: int, run_id: str, indices: list[int]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in indices:
        probe = payload.Probe(topic, run_id, "crafted", partition, i, int(time.time() * 1_000_000))
        p.produce(topic, payload.encode(probe, 10), partition=partition)
    p.flush(10)


def test_injected_duplicates_gaps_and_reordering_are_counted(shared_broker, tmp_path):
    cfg = fast_config(shared_broker.bootstrap, tmp_path, consume_loss_grace_ms=500)
    with XMonitor(cfg) as m:
        wait_for(lambda: gauge(m, "consume-service", "records-consumed-total") >= 10, timeout=20)
        # a crafted stream: 0 1 2 2 (dup) 6 (gap 3,4,5) 4 (late arrival: out of order) 6 (dup) 7
        _inject(shared_broker.bootstrap, cfg.topic, 0, "crafted-run", [0, 1, 2, 2, 6, 4, 6, 7])
        wait_for(lambda: gauge(m, "consume-service", "records-lost-total") == 2, timeout=10)
        wait_for(lambda: total(scrape(m), "xmonitor_records_out_of_order_total") >= 1, timeout=10)
        s = scrape(m)
        assert total(s, "xmonitor_records_duplicated_total") == 2
        assert total(s, "xmonitor_records_out_of_order_total") == 1
        assert total(s, "xmonitor_records_lost_total", partition=0) == 2        # 3 and 5
        assert gauge(m, "consume-service", "records-duplicated-total") == 2


def test_restart_gives_no_false_duplicates_or_losses(shared_broker, tmp_path):
    cfg = fast_config(shared_broker.bootstrap, tmp_path, partitions_to_brokers_ratio=2)
    runs = []
    for _ in range(2):
        with XMonitor(cfg) as m:
            wait_for(lambda m=m: gauge(m, "consume-service", "records-consumed-total") >= 60, timeout=20)
            runs.append(m)
    for m in runs:
        for attr in ("records-lost-total", "records-duplicated-total", "records-delayed-total"):
            assert gauge(m, "consume-service", attr) == 0, attr
    assert runs[0].run_id != runs[1].run_id
    t = sink.read_dir(cfg.sli_dir)
    assert set(t.column("run_id").to_pylist()) == {r.run_id for r in runs}
    assert sum(t.column("records_duplicated").to_pylist()) == sum(t.column("records_lost").to_pylist()) == 0
