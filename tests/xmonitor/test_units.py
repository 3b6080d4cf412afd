"""xmonitor's pure parts, no servers: config, payload, sequence accounting, Kafka window maths, Xinfra's
formulas, topic-management decisions, the recorder's three views and the SLI files."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest

from common.clock import ManualClock
from xmonitor import config, formulas, payload, sink, topic_logic
from xmonitor.accounting import ConsumeAccounting, Kind, Outcome, SequenceTracker
from xmonitor.metrics import Recorder, kmf_name
from xmonitor.sli_schema import SLI_SCHEMA, decode_hdr
from xmonitor.windowed import Latency, Percentiles, Rate

# ---- config -------------------------------------------------------------------------------------------------


def test_config_defaults_follow_xinfra():
    c = config.MonitorConfig(bootstrap_servers="h:1").validate()
    assert c.produce_record_delay_ms == 100 and c.produce_record_size_byte == 100
    assert c.consume_latency_sla_ms == 20000 and c.sli_interval_ms == 10000
    assert c.rebalance_interval_ms == 600000 and c.partitions_to_brokers_ratio == 1.0
    assert c.replication_factor == 1 and c.group_id == "xmonitor-kafka-xinfra-monitor-topic"


def test_config_yaml_flat_and_nested(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("topic: probe\nproduce.record.delay.ms: 20\ntopic-management:\n  partitionsToBrokersRatio: 2\n"
                 "  replicationFactor: 3\n  min.insync.replicas: 2\nsli:\n  dir: /tmp/sli\n  interval.ms: 1000\n"
                 "client.props:\n  security.protocol: PLAINTEXT\nprometheus.listener: 127.0.0.1:0\n")
    c = config.load(f, bootstrap_servers="h:1")
    assert (c.topic, c.produce_record_delay_ms, c.partitions_to_brokers_ratio) == ("probe", 20, 2.0)
    assert (c.replication_factor, c.min_insync_replicas, c.sli_dir, c.sli_interval_ms) == (3, 2, "/tmp/sli", 1000)
    assert c.client_props == {"security.protocol": "PLAINTEXT"} and c.listener == ("127.0.0.1", 0)


@pytest.mark.parametrize("text, msg", [("produce.record.dely.ms: 5", "unknown config key"),
                                       ("produce.record.delay.ms: fast", "produce.record.delay.ms"),
                                       ("produce.record.delay.ms: 0", "must be > 0"),
                                       ("prometheus.listener: nope", "HOST:PORT")])
def test_config_errors(tmp_path, text, msg):
    f = tmp_path / "x.yaml"
    f.write_text(text)
    with pytest.raises(config.ConfigError, match=msg):
        config.load(f, bootstrap_servers="h:1")
    with pytest.raises(config.ConfigError, match="bootstrap.servers"):
        config.load(None)


# ---- payload ------------------------------------------------------------------------------------------------


def test_payload_roundtrip_and_xinfra_fields():
    p = payload.Probe("t", "run1", "prod", 3, 42, 1_700_000_000_123_456)
    raw = payload.encode(p, 100)
    assert payload.decode(raw, 3) == p
    import json
    d = json.loads(raw)
    assert d["time"] == 1_700_000_000_123 and d["index"] == 42 and d["producerId"] == "prod"
    assert d["content"] == "x" * 100 and d["topic"] == "t"
    # an Xinfra record (no runId/partition/timeUs) still decodes
    xin = payload.decode(b'{"topic":"t","time":5,"index":1,"producerId":"kmf-producer","content":"x"}', 7)
    assert (xin.partition, xin.time_us, xin.run_id) == (7, 5000, "")
    with pytest.raises(payload.PayloadError):
        payload.decode(b"not json", 0)


def test_payload_template_is_json_dumps_of_the_fields():
    """The per-producer template must write exactly what json.dumps writes, escaping included."""
    import json
    p = payload.Probe('to"p\\ic', "r\u00e9n", "pr\nod", 12, 7, 1_700_000_000_999_001)
    fields = {"topic": p.topic, "time": p.time_ms, "index": p.index, "producerId": p.producer_id,
              "content": "x" * 5, "runId": p.run_id, "partition": p.partition, "timeUs": p.time_us}
    assert payload.encode(p, 5) == json.dumps(fields, separators=(",", ":")).encode()
    assert payload.decode(payload.encode(p, 5), 0) == p


def test_murmur2_matches_kafka_and_keys_hash_to_their_partition():
    assert payload.murmur2(b"21") - (1 << 32) == -973932308          # Kafka's UtilsTest vector
    for n in (1, 3, 30):
        for p in range(n):
            assert (payload.murmur2(payload.key_for_partition(p, n)) & 0x7FFFFFFF) % n == p


# ---- sequence accounting ------------------------------------------------------------------------------------


def test_sequence_baseline_in_order_duplicate():
    t = SequenceTracker(grace_ms=1000)
    assert t.record(5, 0).kind is Kind.BASELINE          # first record only sets the baseline
    assert t.record(6, 0).kind is Kind.IN_ORDER
    assert t.record(6, 0).kind is Kind.DUPLICATE
    assert t.record(3, 0).kind is Kind.DUPLICATE         # below the baseline, never missing: a duplicate
    assert t.expire(10_000) == 0 and t.lost == 0


def test_gap_is_lost_after_grace_unless_it_arrives_out_of_order():
    t = SequenceTracker(grace_ms=1000)
    t.record(0, 0)
    assert t.record(4, 100).gap == 3                     # 1, 2, 3 missing
    assert t.record(2, 200).kind is Kind.OUT_OF_ORDER    # not a duplicate: it was missing
    assert t.expire(1099) == 0                           # still within the grace
    assert t.expire(1100) == 2 and t.lost == 2           # 1 and 3
    assert t.record(3, 5000).kind is Kind.OUT_OF_ORDER   # very late: out of order (already counted lost)
    assert t.record(4, 5000).kind is Kind.DUPLICATE


def test_new_run_id_is_a_new_baseline():
    acc = ConsumeAccounting(grace_ms=0)
    for i in range(100):
        acc.observe(payload.Probe("t", "run-a", "p", 0, i, 0), 0, 0)
    # a restarted producer starts again at 0 with a new run id: no duplicates, no loss
    kinds = [acc.observe(payload.Probe("t", "run-b", "p", 0, i, 0), 0, 1).kind for i in range(10)]
    assert kinds[0] is Kind.BASELINE and set(kinds[1:]) == {Kind.IN_ORDER}
    assert acc.expire(10**9) == {}
    # same run id, other partition: independent
    assert acc.observe(payload.Probe("t", "run-b", "p", 1, 50, 0), 1, 2).kind is Kind.BASELINE


# ---- windows and formulas -----------------------------------------------------------------------------------


def test_rate_is_events_per_second_over_a_padded_60s_window():
    r = Rate()
    for i in range(100):
        r.record(1000 + i * 10)                # 100 events in the first second
    assert r.measure(2000) == pytest.approx(100 / 59)   # elapsed padded up to 59 full windows
    assert r.measure(1000 + 61_000) == 0.0    # purged after 60 s


def test_percentiles_constant_buckets_report_lower_edge_and_saturate():
    p = Percentiles(max_ms=5000, granularity_ms=1)
    assert p.buckets == 5002
    for _ in range(99):
        p.record(0, 10.0)
    p.record(0, 9000.0)                        # above max: the last bucket
    assert p.measure(0, 50) == pytest.approx(int(10 / p.width) * p.width)
    assert p.measure(0, 99.9) == pytest.approx(5001 * 5000 / 5002)
    assert math.isnan(Percentiles().measure(0, 99))


def test_latency_reads_as_kafkas_avg_max_and_percentiles_over_the_same_samples():
    lat, pct = Latency(max_ms=5000, granularity_ms=1), Percentiles(max_ms=5000, granularity_ms=1)
    assert math.isnan(lat.avg(0)) and math.isnan(lat.max(0))
    values = [(0, 4.0), (500, 8.0), (1500, 30.0), (2500, 2.0)]      # three 1 s samples
    for t, v in values:
        lat.record(t, v)
        pct.record(t, v)
    assert lat.avg(3000) == pytest.approx(sum(v for _, v in values) / 4)
    assert lat.max(3000) == 30.0
    for q in (50, 99, 99.9):
        assert lat.measure(3000, q) == pct.measure(3000, q)
    # samples older than 60 windows are reset on read, as Kafka's SampledStat.purgeObsoleteSamples
    assert lat.max(1500 + 60_000) == 2.0 and lat.avg(1500 + 60_000) == 2.0
    assert math.isnan(lat.max(2500 + 60_000))


def test_produce_availability_is_a_mean_over_partitions():
    # 3 partitions, one broker of 3 down: its partition has only errors
    assert formulas.produce_availability([(10, 0, False), (10, 0, False), (0, 2, True)]) == pytest.approx(2 / 3)
    assert formulas.produce_availability([(10, 0, False), (0, 0, False)]) == 0.5        # zero throughput = 0
    assert formulas.produce_availability([(10, 0, False), (0, 0, False)], False) == 1.0
    assert formulas.produce_availability([(10, 0, False), (0, 0, True)], False) == 0.5
    assert formulas.produce_availability([(5, math.nan, False)]) == 1.0
    assert math.isnan(formulas.produce_availability([]))


def test_consume_availability():
    assert formulas.consume_availability(10, 1, 0) == pytest.approx(0.9)
    assert formulas.consume_availability(9, 0, 1) == pytest.approx(0.9)
    assert formulas.consume_availability(0, 0, 0) == 0.0
    assert formulas.ratio_availability(3, 1) == 0.75 and formulas.ratio_availability(0, 0) == 0.0


# ---- topic management decisions -----------------------------------------------------------------------------

PS = topic_logic.PartitionState


def test_create_with_ceil_ratio_and_rf_clipped():
    pol = topic_logic.Policy(ratio=1.5, replication_factor=3)
    plan = topic_logic.plan([0, 1], None, pol, False)
    assert plan.create == [[0, 1], [1, 0], [0, 1]]           # ceil(2 × 1.5) = 3, RF min(3, 2)
    assert topic_logic.plan([0], None, topic_logic.Policy(ratio=0.1), False).create == [[0]]


def test_joining_broker_gets_a_new_partition_it_leads():
    state = {0: PS((0,), 0), 1: PS((1,), 1)}
    plan = topic_logic.plan([0, 1, 2], state, topic_logic.Policy(), False)
    assert plan.add == [[2]] and not plan.reassign and not plan.elect


def test_reassign_when_a_broker_is_nobodys_preferred_leader_but_never_during_another():
    state = {0: PS((0, 1), 0), 1: PS((1, 0), 1), 2: PS((0, 1), 0)}
    plan = topic_logic.plan([0, 1, 2], state, topic_logic.Policy(replication_factor=2), False)
    assert plan.reassign == {1: [1, 2], 2: [2, 0]} and plan.elect_deferred and not plan.elect
    busy = topic_logic.plan([0, 1, 2], state, topic_logic.Policy(replication_factor=2), True)
    assert not busy.reassign and busy.elect_deferred and busy.notes
    no_api = topic_logic.plan([0, 1, 2], state, topic_logic.Policy(replication_factor=2), False, can_reassign=False)
    assert not no_api.reassign


def test_preferred_election_when_a_live_broker_leads_nothing():
    state = {0: PS((0, 1, 2), 0), 1: PS((1, 2, 0), 2), 2: PS((2, 0, 1), 2)}   # 1 came back, leads nothing
    plan = topic_logic.plan([0, 1, 2], state, topic_logic.Policy(replication_factor=3), False)
    assert plan.elect == [1] and not plan.reassign and not plan.add
    assert topic_logic.plan([0, 1, 2], state, topic_logic.Policy(replication_factor=3), True).elect_deferred
    healthy = {0: PS((0, 1, 2), 0), 1: PS((1, 2, 0), 1), 2: PS((2, 0, 1), 2)}
    assert topic_logic.plan([0, 1, 2], healthy, topic_logic.Policy(replication_factor=3), False).empty


def test_switches_off():
    pol = topic_logic.Policy(create=False, add_partitions=False, reassign_and_elect=False)
    assert topic_logic.plan([0, 1], None, pol, False).empty
    assert topic_logic.plan([0, 1, 2], {0: PS((0,), 0)}, pol, False).empty


# ---- recorder: prometheus, kmf gauges and SLI rows agree ----------------------------------------------------


def test_recorder_views_agree_and_sli_file_roundtrip(tmp_path):
    clock = ManualClock()
    cfg = config.MonitorConfig(bootstrap_servers="h:1", cluster_name="c1", topic="t", consume_latency_sla_ms=100)
    rec = Recorder(cfg, "run", clock)
    rec.set_topology({0: 5, 1: 6})
    rec.set_topology({1: -1})                    # leader lost: the last known leader is kept
    from xmonitor.accounting import Outcome
    for _ in range(10):
        rec.record_produce_attempt(0)
        rec.record_produce_result(0, None, 0.002)
        rec.record_consumed(0, Outcome(Kind.IN_ORDER), 0.005, 200)
        rec.record_produce_attempt(1)
        rec.record_produce_result(1, "_MSG_TIMED_OUT", 3.0)
        clock.advance(100)
    rec.record_consumed(0, Outcome(Kind.DUPLICATE), 0.5, 200)      # late too
    rec.record_lost(0, 2)
    g = rec.kmf_gauges()
    assert g[("produce-service", "produce-availability-avg")] == pytest.approx(0.5)
    assert g[("consume-service", "records-lost-total")] == 2 and g[("consume-service", "records-delayed-total")] == 1
    # each Rate pads its own window (Kafka semantics), so the ratio is close to, not exactly, the count ratio
    assert g[("consume-service", "consume-availability-avg")] == pytest.approx((11 - 1) / (11 + 2), rel=0.01)
    val = rec.registry.get_sample_value
    assert val("xmonitor_produce_errors_total", {"cluster": "c1", "topic": "t", "partition": "1", "leader": "6",
                                                 "error": "_MSG_TIMED_OUT"}) == 10
    assert val("xmonitor_records_consumed_total", {"cluster": "c1", "topic": "t", "partition": "0",
                                                   "leader": "5"}) == 11
    assert kmf_name("single-cluster-monitor", "produce-service", "produce-availability-avg") == \
        "kmf_services_produce_service_single_cluster_monitor_produce_availability_avg"
    rows = rec.roll_interval()
    path = sink.write_rows(tmp_path, rows)
    assert path.parent.name.startswith("date=") and not list(path.parent.glob(".*"))
    t = pq.read_table(path)
    assert t.schema.equals(SLI_SCHEMA)
    r = {row["partition"]: row for row in t.to_pylist()}
    assert (r[0]["produce_successes"], r[0]["records_consumed"], r[0]["records_duplicated"], r[0]["records_late"],
            r[0]["records_lost"], r[0]["leader"]) == (10, 11, 1, 1, 2, 5)
    assert r[1]["produce_errors"] == [("_MSG_TIMED_OUT", 10)] and r[1]["leader"] == 6
    assert decode_hdr(r[0]["e2e_latency_hdr"]).get_total_count() == 11
    assert decode_hdr(r[1]["produce_latency_hdr"]).get_total_count() == 0
    assert rec.roll_interval()[0]["produce_attempts"] == 0         # next interval starts empty


def test_queued_events_keep_the_leader_and_time_of_when_they_happened():
    """Per-record events are folded in at the next read; a leader change in between must not move them."""
    clock = ManualClock()
    rec = Recorder(config.MonitorConfig(bootstrap_servers="x", cluster_name="c1", topic="t"), "run", clock)
    rec.set_topology({0: 5})
    rec.record_produce_result(0, None, 0.002)
    rec.record_consumed(0, Outcome(Kind.IN_ORDER), 0.004, 100)
    rec.set_topology({0: 7})
    clock.advance(120_000)              # the events' 1 s samples are now out of the 60 s window
    rec.record_consumed(0, Outcome(Kind.IN_ORDER), 0.004, 100)
    val = rec.registry.get_sample_value
    labels = {"cluster": "c1", "topic": "t", "partition": "0"}
    assert val("xmonitor_produce_successes_total", {**labels, "leader": "5"}) == 1
    assert val("xmonitor_records_consumed_total", {**labels, "leader": "5"}) == 1
    assert val("xmonitor_records_consumed_total", {**labels, "leader": "7"}) == 1
    assert val("xmonitor_produce_successes_total", {**labels, "leader": "7"}) is None
    # windowed gauges saw each event at its own time: only the last consume is inside the window
    assert rec.kmf_gauges()[("consume-service", "records-consumed-rate")] == pytest.approx(1 / 59)


def test_produce_poll_timeout_never_truncates_a_wait_to_zero():
    from xmonitor.services.produce import _poll_timeout
    assert _poll_timeout(0.0004) == 0.001          # librdkafka would truncate 0.4 ms to 0 and the loop would spin
    assert _poll_timeout(0.0031) == 0.004
    assert _poll_timeout(-1.0) == 0.0 and _poll_timeout(5.0) == 0.1


def test_sli_sink_folds_the_queued_events_between_intervals():
    """No reader for a minute (no scrape, no interval close): the sink still folds the client threads' events in
    small batches, so no later reader folds a long backlog in one go."""
    from kafkascope.local.cluster import wait_for
    from xmonitor.services.sli_sink import SliSinkService

    cfg = config.MonitorConfig(bootstrap_servers="x", topic="t", sli_interval_ms=60_000)
    rec = Recorder(cfg, "run")
    rec.set_topology({0: 1})
    sink_service = SliSinkService(cfg, rec)
    sink_service.start()
    try:
        for i in range(50):
            rec.record_produce_attempt(0)
            rec.record_consumed(0, Outcome(Kind.IN_ORDER), 0.001 * i, 100)
        wait_for(lambda: not rec._attempted and not rec._consumed, 5.0, 0.05, "the queues folded")
        assert rec.registry.get_sample_value("xmonitor_records_consumed_total",
                                             {"cluster": "kafka", "topic": "t", "partition": "0", "leader": "1"}) == 50
    finally:
        sink_service.stop()
        sink_service.join(5)
