"""benchmarks.vs_apache --interleave, without clusters: every cluster is started once, the warm-up passes come
first, then one pass per implementation per round with the order reversed every round, and each side's medians
are its own passes'."""

import argparse

from benchmarks import vs_apache


class FakeCluster:
    started: list[str] = []

    def __init__(self, data_dir, brokers, impl, **props):
        self.impl = impl
        self.bootstrap = f"{impl}:9092"

    def __enter__(self):
        FakeCluster.started.append(self.impl)
        return self

    def __exit__(self, *exc):
        return None


def test_passes_alternate_and_each_side_keeps_its_own(monkeypatch):
    calls: list[tuple[str, str]] = []

    def measure(bs, prefix, rf, records, seconds, rate, perf_records, e2e_records):
        calls.append((bs.split(":")[0], prefix))
        return {"confluent e2e p50 ms": float(len(calls))}

    FakeCluster.started = []
    monkeypatch.setattr(vs_apache, "Cluster", FakeCluster)
    monkeypatch.setattr(vs_apache, "measure", measure)
    monkeypatch.setattr(vs_apache, "warm_up_offsets_topic", lambda bs: None)
    args = argparse.Namespace(brokers=3, warmup_fraction=1.0, records=10, seconds=1.0, rate=100, perf_records=10,
                              e2e_records=10, repeat=3)
    runs = vs_apache.run_interleaved(["kafkascope", "apache-kafka"], args)
    assert FakeCluster.started == ["kafkascope", "apache-kafka"]
    assert calls == [("kafkascope", "warm-up"), ("apache-kafka", "warm-up"),
                     ("kafkascope", "run0"), ("apache-kafka", "run0"),
                     ("apache-kafka", "run1"), ("kafkascope", "run1"),
                     ("kafkascope", "run2"), ("apache-kafka", "run2")]
    # the call numbers double as the figures: ours were passes 3, 6, 7; Kafka's 4, 5, 8
    assert [p["confluent e2e p50 ms"] for p in runs["kafkascope"]["passes"]] == [3.0, 6.0, 7.0]
    assert runs["kafkascope"]["median"] == {"confluent e2e p50 ms": 6.0}
    assert runs["apache-kafka"]["median"] == {"confluent e2e p50 ms": 5.0}
    assert all(len(r["loadavg_1m_start_end"]) == 2 for r in runs.values())


def test_an_implementation_against_itself_gets_two_clusters(monkeypatch):
    """An A/A run (`--impls apache-kafka,apache-kafka`): two clusters of one implementation, each with its own
    label and passes; before labels the second replaced the first in every dict."""
    calls: list[str] = []

    def measure(bs, prefix, rf, records, seconds, rate, perf_records, e2e_records):
        calls.append(prefix)
        return {"confluent e2e p50 ms": float(len(calls))}

    FakeCluster.started = []
    monkeypatch.setattr(vs_apache, "Cluster", FakeCluster)
    monkeypatch.setattr(vs_apache, "measure", measure)
    monkeypatch.setattr(vs_apache, "warm_up_offsets_topic", lambda bs: None)
    assert vs_apache.labelled(["apache-kafka", "apache-kafka", "kafkascope"]) == {
        "apache-kafka": "apache-kafka", "apache-kafka#2": "apache-kafka", "kafkascope": "kafkascope"}
    args = argparse.Namespace(brokers=3, warmup_fraction=1.0, records=10, seconds=1.0, rate=100, perf_records=10,
                              e2e_records=10, repeat=1)
    runs = vs_apache.run_interleaved(["apache-kafka", "apache-kafka"], args)
    assert FakeCluster.started == ["apache-kafka", "apache-kafka"]
    assert list(runs) == ["apache-kafka", "apache-kafka#2"]
    assert [r["median"]["confluent e2e p50 ms"] for r in runs.values()] == [3.0, 4.0]
