"""The rendered /metrics page of a fixed, broker-shaped registry is byte for byte the page the exporter wrote
before the scrape was made linear (issue 20): same names, labels, values and order.

The golden file was written by the code before that change (``python -m tests.exporter.test_render_golden``
rewrites it; only do that for an intended change of the page)."""

from __future__ import annotations

import gc
import gzip
from pathlib import Path

from prometheus_client.utils import floatToGoString

from common.clock import ManualClock
from exporter.collector import _go_text, build_prometheus_registry, render
from exporter.registry import RawFamily, RawSample, Registry, Tags

GOLDEN = Path(__file__).parent / "data" / "render_golden.prom.gz"
TOPICS, PARTITIONS = 12, 25


def _partition_rows(value_of) -> list[tuple[Tags, float]]:
    return [((("topic", f"topic-{t}"), ("partition", str(p))), value_of(t, p))
            for t in range(TOPICS) for p in range(PARTITIONS)]


def broker_shaped_registry() -> Registry:
    """Per-partition gauge families, per-topic meters, request timers and histograms, common.metrics attributes
    (labels needing escaping and quoting, a repeated label set), Python raw families: every path of render."""
    clock = ManualClock()
    reg = Registry(clock)
    for name in ("Size", "LogEndOffset", "LogStartOffset", "NumLogSegments"):
        reg.gauge_family("kafka.log", "Log", name, lambda n=name: _partition_rows(lambda t, p: len(n) * t + p))
    for name in ("UnderReplicated", "InSyncReplicasCount", "ReplicasCount", "LastStableOffsetLag"):
        reg.gauge_family("kafka.cluster", "Partition", name, lambda n=name: _partition_rows(lambda t, p: (t + p) % 3))
    reg.gauge_family("kafkascope.log", "LogDir", "FreeBytes", lambda: [((("logDir", '/tmp/a "b"\\c'),), 1e12)])
    for t in range(TOPICS):
        for i, name in enumerate(("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec", "TotalFetchRequestsPerSec")):
            reg.meter("kafka.server", "BrokerTopicMetrics", name, topic=f"topic-{t}").mark(t * 10 + i)
    reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec").mark(1234)
    for req in ("Produce", "Fetch", "Metadata"):
        for name in ("TotalTimeMs", "LocalTimeMs", "RequestQueueTimeMs"):
            h = reg.histogram("kafka.network", "RequestMetrics", name, request=req)
            for ms in (0.2, 1.5, 3.0, 7.0, 250.0):
                h.update(ms * (1 + len(req)))
        reg.meter("kafka.network", "RequestMetrics", "RequestsPerSec", request=req, version="9").mark(7)
    t = reg.timer("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")
    for ms in (12.0, 40.0):
        t.update(ms)
    reg.gauge("kafka.server", "ReplicaManager", "UnderReplicatedPartitions", lambda: 3)
    reg.gauge("kafka.server", "KafkaServer", "BrokerState", lambda: 3)
    reg.gauge("kafka.controller", "KafkaController", "ActiveControllerCount", lambda: True)
    for client in (("librdkafka", "2.6.0"), ("apache-kafka-java", "3.9.0"), ("weird", 'v"1\n')):
        reg.kafka_metric("kafka.server", "socket-server-metrics", "connections", lambda: 2,
                         clientSoftwareName=client[0], clientSoftwareVersion=client[1], listener="PLAINTEXT",
                         networkProcessor="0")
    reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-creation-total", lambda: 9, counter=True,
                     listener="PLAINTEXT", networkProcessor="0")
    reg.raw(lambda: [RawFamily("python_gc_pause_seconds", "summary", "gc",
                               [RawSample("_count", {"generation": "0"}, 3),
                                RawSample("_sum", {"generation": "0"}, 0.01)])])
    clock.advance(61_000)
    return reg


def page() -> bytes:
    return render(build_prometheus_registry(broker_shaped_registry(), process=False))


def test_page_is_byte_for_byte_the_golden_page():
    got, want = page(), gzip.decompress(GOLDEN.read_bytes())
    assert got.count(b"\n") > 2_000  # the registry really is broker-shaped
    assert got == want


def test_remembered_value_texts_are_prometheus_clients():
    values = [0.0, -0.0, 1.0, -1.0, 0.1, 3.0, 1e7, 123456789.0, 1.5e-9, float("inf"), float("-inf"), float("nan"),
              2.0**53, 9999999.0]
    for _ in range(2):  # computed, then remembered
        assert [_go_text(v) for v in values] == [floatToGoString(v) for v in values]


def test_second_scrape_is_the_same_page():
    prom = build_prometheus_registry(broker_shaped_registry(), process=False)
    assert render(prom) == render(prom)


def test_no_cyclic_collection_runs_during_a_scrape_and_the_collector_is_back_on_after():
    """Why the scrape was superlinear: full collections of a heap that grows with the partitions ran inside it."""
    prom = build_prometheus_registry(broker_shaped_registry(), process=False)
    collections: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    threshold = gc.get_threshold()
    gc.set_threshold(200, 1, 1)  # without the pause, a page of 2,900 series runs dozens of collections
    render(prom)  # the first scrape keeps what it matched (new long-lived objects)
    gc.callbacks.append(seen)
    try:
        gc.collect()  # start from empty generations, whatever the set-up left
        collections.clear()
        render(prom)
        during = list(collections)
        gc.collect(0)
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
    assert during in ([], [0])  # at most the one young collection when the collector is switched back on
    assert gc.isenabled() and collections


def test_a_scrape_leaves_a_paused_collector_paused():
    gc.disable()
    try:
        render(build_prometheus_registry(broker_shaped_registry(), process=False))
        assert not gc.isenabled()
    finally:
        gc.enable()


if __name__ == "__main__":
    GOLDEN.write_bytes(gzip.compress(page(), mtime=0))
    print(f"wrote {GOLDEN}")
