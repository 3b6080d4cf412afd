"""The broker's cyclic-collector thresholds (broker/__main__.py, issue 20): objects that live a few hundred ms (a
long-polling fetch's watch entries, one per partition) must not reach the old generation and set off full
collections of a heap that grows with the partitions."""

from __future__ import annotations

import gc

from broker.__main__ import GC_THRESHOLDS, tune_gc


def full_collections(threshold: tuple[int, int, int], rounds: int = 200, batch: int = 7000) -> int:
    """Full collections while a long-lived heap sits still and short-lived entries come and go: each round a
    fetch registers `batch` watch entries that live while the next two rounds run."""
    saved = gc.get_threshold()
    ballast = [{"partition": [i]} for i in range(100_000)]  # metadata, logs: what a broker keeps
    gc.collect()
    gc.set_threshold(*threshold)
    try:
        before = gc.get_stats()[2]["collections"]
        live: list[list[dict]] = []
        for _ in range(rounds):
            live.append([{object(): ["Fetch"]} for _ in range(batch)])
            if len(live) > 2:
                live.pop(0)
        return gc.get_stats()[2]["collections"] - before
    finally:
        gc.set_threshold(*saved)
        del ballast


def test_short_lived_entries_set_off_no_full_collection_with_the_brokers_thresholds():
    assert full_collections((700, 10, 10)) > 0  # CPython's defaults: the old generation fills with them
    assert full_collections(GC_THRESHOLDS) == 0


def test_tune_gc_sets_the_thresholds():
    saved = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.set_threshold(*saved)
