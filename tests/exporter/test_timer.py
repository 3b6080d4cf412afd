"""HDR Timer: cumulative count/sum, sliding window of interval histograms, quantiles exact to HDR precision."""

import random

import pytest

from common.clock import ManualClock
from exporter.registry import Registry
from exporter.timer import QUANTILES, Timer, new_hdr


def _timer():
    clock = ManualClock()
    reg = Registry(clock, window_s=60, intervals=6)
    return clock, reg, reg.timer("kafka.network", "RequestMetrics", "TotalTimeMs", request="Produce")


def test_empty_window_reads_zero_with_count_zero():
    clock, reg, t = _timer()
    assert t.quantiles() == (0.0,) * 6
    assert t.window_count == 0
    t.update(5.0)
    reg.tick()
    assert t.quantiles()[0] == pytest.approx(5.0, rel=1e-3)
    clock.advance(69_900)
    reg.tick()
    assert t.window_count == 1  # its interval [0, 10) is one of the last six completed ones
    clock.advance(200)
    reg.tick()
    assert t.window_count == 0
    assert t.quantiles() == (0.0,) * 6  # never a stale value
    assert (t.count, t.sum_ms) == (1, 5.0)  # cumulative


def test_window_slides_interval_by_interval():
    clock, reg, t = _timer()
    for i in range(6):  # interval i holds 100 values of (i + 1) * 10 ms
        for _ in range(100):
            t.update((i + 1) * 10.0)
        clock.advance(10_000)
        reg.tick()
    assert t.window_count == 600  # at the boundary: exactly the last 60 s
    clock.advance(10_000)
    reg.tick()
    assert t.window_count == 500  # the first interval has expired
    assert t.quantiles((0.0001,))[0] == pytest.approx(20.0, rel=1e-3)
    clock.advance(30_000)
    reg.tick()
    assert t.window_count == 200
    assert t.quantiles((0.5,))[0] == pytest.approx(50.0, rel=1e-3)


def test_quantiles_match_hdrhistogram_exactly():
    _, reg, t = _timer()
    ref = new_hdr()
    rnd = random.Random(7)
    for _ in range(20000):
        ms = rnd.lognormvariate(2.0, 1.2)
        t.update(ms)
        ref.record_value(int(ms * 1000 + 0.5))
    reg.tick()
    expected = tuple(ref.get_value_at_percentile(q * 100) / 1000 for q in QUANTILES)
    assert t.quantiles() == expected


def test_quantile_error_is_within_hdr_precision():
    _, reg, t = _timer()
    values = [i * 0.731 for i in range(1, 10001)]
    for v in values:
        t.update(v)
    reg.tick()
    for q, got in zip(QUANTILES, t.quantiles(), strict=True):
        exact = values[max(int(q * len(values) + 0.5), 1) - 1]
        assert abs(got - exact) / exact <= 1.5e-3


def test_buckets_are_cumulative_and_monotonic():
    t = Timer(buckets_s=(0.001, 0.01, 0.1))
    for ms in (0.5, 1.0, 5.0, 50.0, 5000.0):
        t.update(ms)
    t.drain()
    assert t.buckets() == [(0.001, 2), (0.01, 3), (0.1, 4), (float("inf"), 5)]
    t.rotate(10)  # the window empties, the buckets do not
    assert t.buckets()[-1] == (float("inf"), 5)


def test_out_of_range_values_are_clamped_not_dropped():
    t = Timer()
    t.update(-1.0)
    t.update(10 * 3600 * 1000.0)
    t.drain()
    assert t.window_count == 2


def test_moments_are_yammers_cumulative_min_max_mean_and_sample_deviation():
    import statistics

    t = Timer()
    assert t.moments() == (0.0, 0.0, 0.0, 0.0)
    values = [1.0, 2.0, 3.0, 4.0, 250.5]
    for ms in values:
        t.update(ms)
    t.rotate(10)  # the window empties; Min/Max/Mean/StdDev are since creation, as Yammer's
    lo, hi, mean, sd = t.moments()
    assert (lo, hi, mean) == (1.0, 250.5, statistics.mean(values))
    assert abs(sd - statistics.stdev(values)) < 1e-9


def test_registry_timer_has_rates_and_histogram_has_not():
    from common.clock import ManualClock
    from exporter.registry import Registry

    clock = ManualClock()
    reg = Registry(clock)
    timer = reg.timer("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")
    hist = reg.histogram("kafka.network", "RequestMetrics", "TotalTimeMs", request="Produce")
    for _ in range(10):
        timer.update(1.0)
        hist.update(1.0)
    clock.advance(5000)
    reg.tick()
    assert hist.meter is None
    assert timer.meter.count == 10 and timer.meter.one_minute_rate == 2.0 and timer.meter.mean_rate == 2.0
