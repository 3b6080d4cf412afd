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


def test_collection_times_records_each_collection_while_in_use():
    import gc

    from benchmarks.scrape_time import CollectionTimes

    with CollectionTimes() as c:
        gc.collect(0)
        gc.collect()
    gc.collect()
    assert len(c.times) >= 2 and all(t >= 0 for t in c.times)   # another thread may set one off too


def test_in_process_reports_the_collections_and_gives_back_the_freeze_and_thresholds():
    import gc

    from benchmarks.scrape_time import in_process
    from exporter import collector

    before = (collector.FREEZE_AFTER_NAMED, gc.get_threshold())
    out = in_process([100], 1, "strimzi", freeze=False)
    row = out["sizes"][100]
    assert out["freeze"] is False and row["series"] > 100 and isinstance(row["collections"], int)
    assert (collector.FREEZE_AFTER_NAMED, gc.get_threshold()) == before
