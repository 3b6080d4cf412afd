"""A render that names many new rows keeps what it made out of the collector's young and middle collections until
the next full one (exporter.collector.freeze_until_full_collection)."""

import gc
import weakref

import pytest

from common.clock import ManualClock
from exporter import collector
from exporter.collector import build_prometheus_registry, freeze_until_full_collection, render
from exporter.registry import Registry


@pytest.fixture(autouse=True)
def _unfrozen():
    """Nothing frozen before or after; no automatic collection in between (a full one, set off by another
    thread's allocations, would unfreeze what a test is looking at). Explicit gc.collect calls still run."""
    gc.unfreeze()
    enabled = gc.isenabled()
    gc.disable()
    yield
    if enabled:
        gc.enable()
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.me = self   # a cycle: only the cyclic collector frees it


def test_a_cycle_frozen_with_the_rows_is_freed_by_the_next_full_collection():
    node = _Node()
    gone = weakref.ref(node)
    freeze_until_full_collection()
    del node
    gc.collect(0)
    gc.collect(1)
    assert gone() is not None and gc.get_freeze_count() > 0   # the young and middle collections leave it alone
    gc.collect(2)
    assert gone() is None and gc.get_freeze_count() == 0      # the full one takes the frozen objects back


def _family_registry(rows: int) -> Registry:
    reg = Registry(ManualClock())
    reg.gauge_family("kafka.log", "Log", "Size", lambda: [((("topic", "t"), ("partition", str(p))), p)
                                                           for p in range(rows)])
    return reg


def test_a_render_naming_many_new_rows_freezes_and_one_naming_none_does_not(monkeypatch):
    monkeypatch.setattr(collector, "FREEZE_AFTER_NAMED", 50)
    prom = build_prometheus_registry(_family_registry(60), process=False)
    render(prom)
    assert prom.ours.named == 60
    assert gc.get_freeze_count() >= 60 * 3   # each row's sample, its labels and its tags at least
    gc.unfreeze()
    render(prom)
    assert prom.ours.named == 0 and gc.get_freeze_count() == 0


def test_a_render_naming_fewer_rows_than_the_threshold_does_not_freeze(monkeypatch):
    monkeypatch.setattr(collector, "FREEZE_AFTER_NAMED", 61)
    prom = build_prometheus_registry(_family_registry(60), process=False)
    render(prom)
    assert prom.ours.named == 60 and gc.get_freeze_count() == 0
