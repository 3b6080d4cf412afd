"""Gauge families that return :class:`exporter.registry.Columns` (issue 20: the broker's per-partition gauges at
10,000 partitions): the page is the one the same rows written as ``(tags, value)`` pairs give, on the fast and the
generic path, and once named, rows whose tags are the same tuple are not walked pair by pair."""

from __future__ import annotations

import random

import pytest

from common.clock import ManualClock
from exporter.collector import PrometheusRegistry, RegistryCollector, families_text, render
from exporter.registry import Columns, Registry

VALUES = (0, 1, 2, 7, -3, 0.0, -0.0, 0.5, 1e7, 123456789, float("nan"), float("inf"), 1.5e-9)
FAMILIES = (("kafka.log", "Log", "Size"), ("kafka.log", "Log", "LogEndOffset"),
            ("kafka.cluster", "Partition", "UnderReplicated"), ("kafka.cluster", "Partition", "LastStableOffsetLag"))


class Table:
    """One family's rows; as columns, the tags tuple stays the same object until the rows' tags change."""

    def __init__(self, rnd: random.Random, columns: bool) -> None:
        self.rnd = rnd
        self.columns = columns
        self.tags: tuple = ()
        self.values: list = []
        self.reshape()

    def reshape(self) -> None:
        self.tags = tuple((("topic", f"t{t}"), ("partition", str(p)))
                          for t in range(self.rnd.randint(1, 4)) for p in range(self.rnd.randint(1, 5)))
        self.revalue()

    def revalue(self) -> None:
        self.values = [self.rnd.choice(VALUES) for _ in self.tags]

    def __call__(self):
        if self.columns:
            return Columns(self.tags, list(self.values))
        return list(zip(self.tags, self.values, strict=True))


def registry(seed: int, columns: bool) -> tuple[Registry, list[Table]]:
    reg = Registry(ManualClock())
    tables = []
    rnd = random.Random(seed)
    for domain, type_, name in FAMILIES:
        t = Table(rnd, columns)
        reg.gauge_family(domain, type_, name, t)
        tables.append(t)
    reg.gauge("kafka.server", "ReplicaManager", "PartitionCount", lambda: 12)
    return reg, tables


@pytest.mark.parametrize("naming", ["strimzi", "confluent"])
@pytest.mark.parametrize("seed", range(5))
def test_columns_write_the_page_pairs_write_on_both_paths(naming, seed):
    (reg_c, tab_c), (reg_p, tab_p) = registry(seed, True), registry(seed, False)
    fast, generic, pairs = RegistryCollector(reg_c, naming), RegistryCollector(reg_c, naming), \
        RegistryCollector(reg_p, naming)
    generic.blocks = False
    rnd = random.Random(seed)
    for scrape in range(6):
        want = families_text(pairs.fast_families())
        assert families_text(fast.fast_families()) == want, f"scrape {scrape}"
        assert families_text(generic.fast_families()) == want
        for tc, tp in zip(tab_c, tab_p, strict=True):  # the same change on both registries
            if rnd.random() < 0.25:
                tc.reshape()
            else:
                tc.revalue()
            tp.tags, tp.values = tc.tags, tc.values
    assert fast._blocks


def test_named_columns_with_the_same_tags_are_not_walked_pair_by_pair(monkeypatch):
    reg, _ = registry(3, True)
    prom = PrometheusRegistry(RegistryCollector(reg, "strimzi"))
    first = render(prom)  # names the rows (pair by pair) and keeps them as blocks

    def refuse(self):
        raise AssertionError("rows walked pair by pair")

    monkeypatch.setattr(Columns, "__iter__", refuse)
    assert render(prom) == first


def test_columns_of_unequal_lengths_are_refused():
    with pytest.raises(ValueError):
        Columns(((("topic", "t"),),), [1, 2])


def test_a_family_whose_columns_fail_leaves_the_rest_of_the_page():
    reg = Registry(ManualClock())

    def broken():
        raise RuntimeError("gone")

    reg.gauge_family("kafka.log", "Log", "Size", broken)
    reg.gauge("kafka.server", "ReplicaManager", "PartitionCount", lambda: 12)
    page = families_text(RegistryCollector(reg, "strimzi").fast_families())
    assert "kafka_server_replicamanager_partitioncount 12.0" in page and "kafka_log_log_size" not in page
