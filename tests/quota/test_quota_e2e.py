"""A client quota end to end: set over the wire (AlterClientQuotas) on a broker subprocess, felt by an unmodified
client (librdkafka sees throttle times), exported under Confluent's rule set, and no acknowledged record lost."""

from __future__ import annotations

import json

from confluent_kafka import Consumer, Producer

from kafkascope.local.broker_process import BrokerProcess, free_port
from kafkascope.local.wire import WireClient
from tests.broker.test_metrics_e2e import scrape
from tests.e2e.helpers import create_topic

CLIENT = "quota-e2e"


def test_a_producer_over_its_quota_is_throttled_and_loses_nothing(tmp_path, topic_name):
    mport = free_port()
    with BrokerProcess(tmp_path, **{"prometheus.listener": f"127.0.0.1:{mport}",
                                    "prometheus.naming": "confluent"}) as b:
        create_topic(b.port, topic_name)
        with WireClient(b.port) as w:
            resp = w.call(49, 1, {"validate_only": False, "entries": [
                {"entity": [{"entity_type": "client-id", "entity_name": CLIENT}],
                 "ops": [{"key": "producer_byte_rate", "value": 20_000.0, "remove": False}]}]})
        assert resp.entries[0].error_code == 0
        throttles: list[int] = []

        def on_stats(text: str) -> None:
            throttles.extend(b["throttle"]["cnt"] for b in json.loads(text)["brokers"].values())

        p = Producer({"bootstrap.servers": b.bootstrap, "client.id": CLIENT, "acks": "all", "linger.ms": 0,
                      "batch.size": 16384, "statistics.interval.ms": 100, "stats_cb": on_stats})
        acked = []
        for i in range(300):    # 300 KiB against 20,000 B/s: well over what a 10 s window allows
            p.produce(topic_name, (b"%06d" % i) * 170, on_delivery=lambda e, m: e is None and acked.append(m.offset()))
            p.poll(0)
        assert p.flush(120) == 0
        p.poll(0.5)   # one more statistics callback after the last answer
        assert len(acked) == 300
        assert max(throttles, default=0) > 0      # the client saw throttle_time_ms in its answers
        page = scrape(mport)
        labels = (("client_id", CLIENT), )
        assert page[("kafka_server_produce_throttle_time", labels)] > 0
        assert page[("kafka_server_produce_byte_rate", labels)] > 0
        # RequestMetrics ThrottleTimeMs takes each answer's throttle (most Produce answers here were throttled).
        assert page[("kafka_network_requestmetrics_throttletimems", (("quantile", "0.99"), ("request", "Produce")))] > 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        c.subscribe([topic_name])
        got: list[bytes] = []
        for _ in range(200):    # bounded: each poll waits at most 0.5 s
            got += [m.value() for m in c.consume(500, 0.5) if m.error() is None]
            if len(got) >= 300:
                break
        c.close()
        assert got == [(b"%06d" % i) * 170 for i in range(300)]
