"""benchmarks.scrape_time's step timing: the whole render is every step, the longest step one of them."""

from benchmarks.scrape_time import timed_steps
from common.clock import ManualClock


def test_timed_steps_counts_every_step_and_returns_the_page(monkeypatch):
    clock = ManualClock()
    monkeypatch.setattr("benchmarks.scrape_time.time.perf_counter", clock.monotonic)

    def steps():
        for ms in (2, 7, 1):
            clock.advance(ms)
            yield
        clock.advance(3)
        return b"page"

    whole, longest, n, page = timed_steps(steps())
    assert (round(whole, 6), round(longest, 6), n, page) == (13, 7, 4, b"page")


def test_gc_stats_counts_each_collection_while_installed_and_keeps_the_longest():
    """What scrape_time reports of the collections (broker.metrics.runtime.GcStats, the broker's own)."""
    import gc

    from broker.metrics.runtime import GcStats

    c = GcStats()
    c.install()
    try:
        gc.collect(0)
        gc.collect()
    finally:
        c.uninstall()
    gc.collect()
    counts = [n for n, _ in c.per_generation.values()]
    total = sum(secs for _, secs in c.per_generation.values())
    assert sum(counts) >= 2 and c.per_generation[2][0] >= 1   # another thread may set one off too
    assert 0 <= c.longest_s <= total


def test_in_process_reports_the_collections_and_gives_back_the_freeze_and_thresholds():
    import gc

    from benchmarks.scrape_time import in_process
    from exporter import collector

    before = (collector.FREEZE_AFTER_NAMED, gc.get_threshold())
    out = in_process([100], 1, "strimzi", freeze=False)
    row = out["sizes"][100]
    assert out["freeze"] is False and row["series"] > 100 and isinstance(row["collections"], int)
    assert (collector.FREEZE_AFTER_NAMED, gc.get_threshold()) == before


def test_kept_grows_with_the_partitions():
    """--kept: what two renders leave behind, more with more partitions (each adds ~10 named rows)."""
    import asyncio

    from benchmarks.scrape_time import kept_bytes

    small, big = asyncio.run(kept_bytes(1, "strimzi")), asyncio.run(kept_bytes(200, "strimzi"))
    assert 0 < small < big
