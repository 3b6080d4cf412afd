"""benchmarks/partition_scale.py's pure parts: topic plan, growth/ratio arithmetic, parsing (no broker)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.partition_scale import (
    all_in_isr,
    all_led,
    any_moved,
    children_of,
    figure_rows,
    growth,
    leaders_by_broker,
    metadata_request,
    parse_ppid,
    parse_sizes,
    prometheus_series,
    superlinear,
    topic_plan,
)


def test_topic_plan_spreads_over_topics_of_100_with_a_remainder():
    plan = topic_plan(1050)
    assert len(plan) == 11
    assert sum(n for _, n in plan) == 1050
    assert plan[-1][1] == 50 and all(n == 100 for _, n in plan[:-1])
    assert len({t for t, _ in plan}) == 11
    assert topic_plan(3) == [("scale-0000", 3)]
    with pytest.raises(ValueError):
        topic_plan(0)


def test_growth_linear_superlinear_and_missing():
    g = growth({1000: 2.0, 3000: 6.0, 10000: 80.0})
    assert g[0]["factor"] == 3.0 and g[0]["size_factor"] == 3.0
    assert g[0]["exponent"] == pytest.approx(1.0) and g[0]["superlinear"] is False
    assert g[1]["factor"] == pytest.approx(13.333, abs=1e-3)
    assert g[1]["exponent"] == pytest.approx(2.151, abs=1e-3) and g[1]["superlinear"] is True
    sub = growth({1000: 4.0, 4000: 8.0})[0]           # sqrt: exponent 0.5
    assert sub["exponent"] == pytest.approx(0.5) and sub["superlinear"] is False
    missing = growth({1000: None, 3000: 1.0})[0]
    assert missing["factor"] is None and missing["exponent"] is None and missing["superlinear"] is None
    assert growth({1000: 1.0}) == []


def test_prometheus_series_skips_comments_and_blanks():
    body = b"# HELP a x\n# TYPE a gauge\na 1\n\nb{x=\"1\"} 2\n  # indented comment\n"
    assert prometheus_series(body) == 2


def test_parse_ppid_with_spaces_and_parens_in_the_name():
    assert parse_ppid("1234 (java) S 99 1234 1234 0 -1") == 99
    assert parse_ppid("77 (a) (b c) R 5 77 77") == 5


def test_children_of_walks_the_tree_only():
    pairs = [(10, 1), (11, 10), (12, 11), (20, 1), (13, 10)]
    assert children_of(pairs, 10) == {10, 11, 12, 13}
    assert children_of(pairs, 99) == {99}


def _parts(spec):
    return {("scale-0000", i): v for i, v in enumerate(spec)}


def test_leadership_and_isr_predicates():
    parts = _parts([(0, [0, 1, 2]), (1, [1, 2, 0]), (1, [1, 0])])
    assert leaders_by_broker(parts) == {0: 1, 1: 2}
    assert all_led(parts, 3, dead=2) and not all_led(parts, 3, dead=1)
    assert not all_led(parts, 4, dead=None)                      # a partition missing from Metadata
    assert not all_led(_parts([(-1, [])]), 1, dead=None)
    assert not all_in_isr(parts, 3, 3)                            # one ISR of 2
    assert all_in_isr(parts, 2, 3) is False                       # count differs
    full = _parts([(0, [0, 1, 2]), (1, [1, 2, 0])])
    assert all_in_isr(full, 2, 3, broker=2) and not all_in_isr(_parts([(0, [0, 1, 3])]), 1, 3, broker=2)


def test_figure_rows_ratio_and_growth_columns():
    res = {"kafkascope": {1000: {"x": 1.0}, 3000: {"x": 4.0}},
           "apache-kafka": {1000: {"x": 2.0}, 3000: {"x": 6.0}}}
    rows = figure_rows("x", ["kafkascope", "apache-kafka"], [1000, 3000], res)
    assert rows[0][:4] == ("partitions", "kafkascope", "apache-kafka", "ours/Kafka")
    assert rows[1][3] == "0.500" and rows[1][4] == ""             # no growth at the first size
    assert rows[2][3] == "0.667"
    assert rows[2][4].startswith("x4.000") and rows[2][5].startswith("x3.000 (1.000)")
    assert superlinear(["kafkascope", "apache-kafka"], [1000, 3000],
                       {"kafkascope": {1000: {"create_s": 1.0}, 3000: {"create_s": 4.0}},
                        "apache-kafka": {1000: {"create_s": 2.0}, 3000: {"create_s": 6.0}}}) == [
        "kafkascope create_s 1000->3000 (exponent 1.262)"]


def test_figure_rows_with_a_failed_size():
    res = {"kafkascope": {1000: {"x": 1.0}, 3000: {"error": "TimeoutError"}}}
    rows = figure_rows("x", ["kafkascope"], [1000, 3000], res)
    assert rows[2][1:] == ("n/a", "n/a", "n/a") and rows[1][3] == ""


def test_parse_sizes():
    assert parse_sizes("3000, 1000,1000") == [1000, 3000]
    with pytest.raises(argparse.ArgumentTypeError):
        parse_sizes("0,10")
    with pytest.raises(ValueError):
        parse_sizes("ten")


def test_superlinear_skips_per_unit_figures():
    # a per-replica figure is judged through its total (rss_growth_mb), not as if it were a total itself
    res = {"kafkascope": {1000: {"rss_kib_per_replica": 10.0, "rss_growth_mb": 30.0},
                          3000: {"rss_kib_per_replica": 10.0, "rss_growth_mb": 200.0}}}
    assert superlinear(["kafkascope"], [1000, 3000], res) == ["kafkascope rss_growth_mb 1000->3000 (exponent 1.727)"]


def test_the_scrape_bound_grows_with_the_partitions():
    from benchmarks.partition_scale import scrape_timeout_s

    assert scrape_timeout_s(300) == scrape_timeout_s(1000) == 60.0
    assert scrape_timeout_s(10_000) == 600.0   # Kafka's jmx_exporter took up to 50 s per scrape at 10,000


def test_kafka_heap_opts_reach_the_launcher_through_the_environment(monkeypatch):
    from benchmarks import partition_scale

    monkeypatch.setenv("KAFKA_HEAP_OPTS", "")   # restored (unset) after the test: main() sets it for real
    args = partition_scale.build_parser().parse_args(["--kafka-heap-opts", "-Xmx1G -Xms1G"])
    assert args.kafka_heap_opts == "-Xmx1G -Xms1G"
    monkeypatch.setattr(partition_scale, "ensure_kafka", lambda version: None)
    monkeypatch.setattr(partition_scale, "measure_size", lambda impl, size, a: {"create_s": 1.0})
    partition_scale.main(["--sizes", "1000", "--impls", "apache-kafka", "--kafka-heap-opts", "-Xmx1G -Xms1G"])
    import os
    assert os.environ["KAFKA_HEAP_OPTS"] == "-Xmx1G -Xms1G"


def test_the_wire_metadata_request_is_a_v4_request_for_all_topics():
    from broker.protocol.codec import parse_request

    data = metadata_request(7, b"ps")
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    header, body = parse_request(data[4:])
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (3, 4, 7)
    assert header.client_id == "ps"
    assert body.topics is None and body.allow_auto_topic_creation is False


def test_any_moved_sees_the_dead_brokers_partitions_led_elsewhere():
    before = {("t", 0): (1, [1, 2]), ("t", 1): (2, [2, 1]), ("t", 2): (1, [1, 2])}
    assert not any_moved(before, before, dead=1)
    assert not any_moved(before, {**before, ("t", 0): (-1, [2])}, dead=1)       # leaderless is not moved
    assert not any_moved(before, {**before, ("t", 1): (3, [3])}, dead=1)        # not one the dead broker led
    assert any_moved(before, {**before, ("t", 2): (2, [2])}, dead=1)
    assert not any_moved(before, {("t", 1): (2, [2])}, dead=1)                  # missing from the answer
