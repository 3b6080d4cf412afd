"""The fused path for gauge families (exporter/row_blocks.py, issue 20) writes the page the generic path writes,
row by row, for random registries under Strimzi's, Confluent's and a custom rule file; what a block cannot
express (value-dependent rules, valueFactor, non-numeric or bool values, negative counters, families shared with
other samples) goes through the generic path."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from common.clock import ManualClock
from exporter.collector import PrometheusRegistry, RegistryCollector, families_text, render
from exporter.registry import MetricName, Registry
from exporter.row_blocks import BlockFamily

CUSTOM = r"""lowercaseOutputName: true
rules:
- pattern: 'kafka.cluster<type=Partition, name=UnderReplicated, topic=(.+), partition=(.*)><>Value: (\d+)'
  name: kafka_partition_underreplicated_read
  labels: {topic: "$1", partition: "$2", seen: "$3"}
- pattern: 'kafka.log<type=Log, name=Size, topic=(.+), partition=(.*)><>Value'
  name: kafka_log_size_mb
  valueFactor: 0.000001
  labels: {topic: "$1", partition: "$2"}
- pattern: 'kafka.log<type=Log, name=(LogEndOffset|LogStartOffset), topic=(.+), partition=(.*)><>Value'
  name: kafka_log_offsets
  labels: {topic: "$2"}
- pattern: 'kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=(.+)><>Count'
  name: kafka_log_offsets
  type: COUNTER
  labels: {topic: "$1"}
- pattern: 'kafkascope.test<type=Fam, name=(\w+), topic=(.+), partition=(.*)><>Value'
  name: ks_fam
  type: COUNTER
  labels: {which: "$1", topic: "$2", partition: "$3"}
- pattern: 'kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(.*)><>Value'
  name: kafka_partition_$1
  type: GAUGE
  labels: {topic: "$2", partition: "$3"}
"""

VALUES = (0, 1, 2, 7, -3, 0.0, -0.0, 0.5, 1e7, 123456789, 2**53 + 1, float("nan"), float("inf"), 1.5e-9)


class Rows:
    """A gauge family's rows, changed between scrapes by the test."""

    def __init__(self, rows: list) -> None:
        self.rows = rows

    def __call__(self) -> list:
        return list(self.rows)


def _random_rows(rnd: random.Random, topics: int) -> list:
    return [((("topic", f"topic-{t}"), ("partition", str(p))), rnd.choice(VALUES))
            for t in range(topics) for p in range(rnd.randint(1, 6))]


def random_registry(rnd: random.Random) -> tuple[Registry, dict[str, Rows]]:
    reg = Registry(ManualClock())
    fams: dict[str, Rows] = {}
    for domain, type_, names in (("kafka.log", "Log", ("Size", "LogEndOffset", "LogStartOffset", "NumLogSegments")),
                                 ("kafka.cluster", "Partition", ("UnderReplicated", "InSyncReplicasCount",
                                                                 "LastStableOffsetLag")),
                                 ("kafkascope.test", "Fam", ("A", "B"))):
        for name in names:
            rows = fams[f"{type_}.{name}"] = Rows(_random_rows(rnd, rnd.randint(1, 5)))
            reg.gauge_family(domain, type_, name, rows)
    for t in range(3):
        reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", topic=f"topic-{t}").mark(rnd.randint(0, 9))
    reg.gauge("kafka.server", "ReplicaManager", "PartitionCount", lambda: 12)
    return reg, fams


def _page(c: RegistryCollector) -> str:
    return families_text(c.fast_families())


def _pair(reg: Registry, spec: str) -> tuple[RegistryCollector, RegistryCollector]:
    fast, generic = RegistryCollector(reg, spec), RegistryCollector(reg, spec)
    generic.blocks = False
    return fast, generic


def _spec(naming: str, tmp_path: Path) -> str:
    if naming != "custom":
        return naming
    f = tmp_path / "custom.yml"
    f.write_text(CUSTOM)
    return f"rules:{f}"


@pytest.mark.parametrize("naming", ["strimzi", "confluent", "custom"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_and_generic_paths_write_the_same_page(naming, seed, tmp_path):
    rnd = random.Random(seed)
    reg, fams = random_registry(rnd)
    fast, generic = _pair(reg, _spec(naming, tmp_path))
    for scrape in range(6):
        got, want = _page(fast), _page(generic)
        assert got == want, f"scrape {scrape}"
        assert "# TYPE" in got
        for rows in fams.values():  # new values; now and then new rows, a bool or a non-numeric value
            r = rnd.random()
            if r < 0.2:
                rows.rows = _random_rows(rnd, rnd.randint(1, 5))
            else:
                rows.rows = [(tags, rnd.choice(VALUES)) for tags, _ in rows.rows]
                if r < 0.3:
                    rows.rows[0] = (rows.rows[0][0], rnd.choice((True, False, None, "3")))
    assert not generic._blocks


def test_blocks_are_used_where_they_can_be_and_the_generic_path_elsewhere(tmp_path):
    reg, _ = random_registry(random.Random(1))
    c = RegistryCollector(reg, _spec("custom", tmp_path))
    _page(c)
    blocked = {mn.type + "." + mn.name for mn, m in reg.items() if m in c._blocks}
    # value-dependent rule and valueFactor: generic; the rest of the gauge families: blocks
    assert "Partition.UnderReplicated" not in blocked and "Log.Size" not in blocked
    assert "Log.NumLogSegments" not in blocked  # no rule exports it: nothing to block
    assert {"Log.LogEndOffset", "Log.LogStartOffset", "Partition.InSyncReplicasCount",
            "Fam.A", "Fam.B"} <= blocked
    kinds = {f.name: isinstance(f, BlockFamily) for f in c.fast_families()}
    assert kinds["kafka_partition_insyncreplicascount"]
    assert not kinds["kafka_log_offsets"]  # shared with a meter's samples: expanded, generic
    assert not kinds["kafka_log_size_mb"]


def test_a_family_of_several_blocks_with_repeated_labels_gets_objectname_labels(tmp_path):
    reg = Registry(ManualClock())
    for name in ("A", "B"):
        reg.gauge_family("kafkascope.test", "Fam", name, Rows([((("topic", "t"), ("partition", "0")), 1)]))
    spec = tmp_path / "r.yml"
    spec.write_text("rules:\n- pattern: kafkascope.test<type=Fam, name=(\\w+), topic=(.+), partition=(.*)><>Value\n"
                    "  name: same\n  labels: {topic: \"$2\"}\n")
    fast, generic = _pair(reg, f"rules:{spec}")
    for _ in range(2):
        got = _page(fast)
        assert got == _page(generic)
    assert got.count("_objectname=") == 2
    assert isinstance(fast.fast_families()[0], BlockFamily)


def test_rendered_page_of_a_broker_shaped_registry_is_the_same_on_both_paths():
    from tests.exporter.test_render_golden import broker_shaped_registry

    reg = broker_shaped_registry()
    fast, generic = _pair(reg, "strimzi")
    pages = [render(PrometheusRegistry(c)) for c in (fast, generic, fast, generic)]
    assert pages[0] == pages[1] == pages[2] == pages[3]
    assert any(m in fast._blocks for _, m in reg.items())
    assert reg.get(MetricName("kafka.log", "Log", "Size")) in fast._blocks
