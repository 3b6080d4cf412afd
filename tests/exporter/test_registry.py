"""Registry, Meter (Yammer EWMA), gauges, sampled rates: injected clock, no sleeping."""

import math

import pytest

from common.clock import ManualClock
from exporter.registry import EWMA, MetricName, Registry, SampledRate


def test_metric_name_keeps_tag_order_and_drops_empty_values():
    n = MetricName.of("kafka.network", "RequestMetrics", "RequestsPerSec", request="Produce", version=9, x="")
    assert n.tags == (("request", "Produce"), ("version", "9"))
    assert n.mbean == "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9"


def test_get_or_create_and_kind_conflict():
    reg = Registry(ManualClock())
    m = reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", topic="a")
    assert reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", topic="a") is m
    assert reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec") is not m
    with pytest.raises(ValueError):
        reg.timer("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", topic="a")


def test_ewma_matches_yammer_formula():
    alpha = 1 - math.exp(-5 / 60)
    e = EWMA(alpha)
    e.tick(300)  # first tick: the instant rate
    assert e.rate == pytest.approx(60.0)
    e.tick(0)
    assert e.rate == pytest.approx(60.0 * (1 - alpha))
    e.tick(0, ticks=11)  # one empty tick and ten more, closed form
    assert e.rate == pytest.approx(60.0 * (1 - alpha) ** 12)


def test_meter_rates_follow_yammer():
    clock = ManualClock()
    reg = Registry(clock)
    m = reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec")
    assert (m.count, m.mean_rate, m.one_minute_rate) == (0, 0.0, 0.0)
    m.mark(50)
    clock.advance(4900)
    reg.tick()
    assert m.one_minute_rate == 0.0  # no tick yet: Yammer only moves the EWMA every 5 s
    clock.advance(100)
    reg.tick()
    assert m.one_minute_rate == pytest.approx(10.0)
    assert m.five_minute_rate == pytest.approx(10.0)
    assert m.mean_rate == pytest.approx(10.0)
    # Constant 10/s for 10 minutes: every EWMA converges on 10.
    for _ in range(120):
        m.mark(50)
        clock.advance(5000)
        reg.tick()
    assert m.one_minute_rate == pytest.approx(10.0)
    assert m.fifteen_minute_rate == pytest.approx(10.0)
    # Then a minute of silence: the 1-minute rate decays by e^-1, the 15-minute one by e^(-1/15).
    clock.advance(60_000)
    reg.tick()
    assert m.one_minute_rate == pytest.approx(10.0 * math.exp(-1), rel=1e-9)
    assert m.fifteen_minute_rate == pytest.approx(10.0 * math.exp(-1 / 15), rel=1e-9)
    assert m.count == 50 * 121


def test_nanosecond_meter_reads_as_fraction():
    clock = ManualClock()
    reg = Registry(clock)
    idle = reg.meter("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent", scale=1e-9)
    idle.mark(int(3.75e9))  # 3.75 s idle of 5 s
    clock.advance(5000)
    reg.tick()
    assert idle.one_minute_rate == pytest.approx(0.75)
    assert idle.mean_rate == pytest.approx(0.75)


def test_gauge_is_read_at_scrape_time():
    reg = Registry(ManualClock())
    box = [1]
    g = reg.gauge("kafka.server", "ReplicaManager", "PartitionCount", lambda: box[0])
    box[0] = 7
    assert g.value == 7


def test_sampled_rate_is_kafkas_two_window_rate():
    clock = ManualClock()
    r = SampledRate(clock, window_s=30, samples=2)
    for _ in range(30):
        r.record()
        clock.advance(1000)
    assert r.rate == pytest.approx(1.0)
    clock.advance(120_000)
    assert r.rate == 0.0
    assert r.total == 30


def test_tick_steps_yield_per_timer_and_interleave_with_a_read():
    """The broker's tick loop serves requests between timers; a scrape's whole tick between two steps finishes the
    work once: no interval is ended twice and the interval listener is called once."""
    clock = ManualClock()
    reg = Registry(clock, window_s=60, intervals=6)
    timers = [reg.timer("kafka.network", "RequestMetrics", "TotalTimeMs", request=r) for r in ("A", "B", "C")]
    reg.timer("kafka.network", "RequestMetrics", "TotalTimeMs", request="Idle")   # nothing to do: no step
    ended = []
    reg.on_interval(lambda start, end: ended.append((start, end)))
    for t in timers:
        t.update(2.0)
    steps = reg.tick_steps()
    next(steps)
    assert [t.window_count for t in timers] == [1, 0, 0]
    assert sum(1 for _ in steps) == 2
    assert [t.window_count for t in timers] == [1, 1, 1]

    clock.advance(10_000)   # the first interval ends
    for t in timers:
        t.update(3.0)
    steps = reg.tick_steps()
    next(steps)
    reg.tick()   # a scrape
    assert list(steps) == [] and ended == [(0.0, 10.0)]
    clock.advance(59_900)   # interval 0 leaves the window at 70 s, not a step earlier as a second rotation would
    reg.tick()
    assert [t.window_count for t in timers] == [2, 2, 2]   # the values pending at 10 s fell into interval 0
    clock.advance(200)
    reg.tick()
    assert [t.window_count for t in timers] == [0, 0, 0]
    assert len(ended) == 3


def test_read_steps_tick_then_run_the_before_read_work_step_by_step():
    reg = Registry(ManualClock())
    done: list[str] = []

    def work():
        done.append("a")
        yield
        done.append("b")

    reg.before_read(work)
    steps = reg.read_steps()
    next(steps)
    assert done == ["a"]
    assert list(steps) == [] and done == ["a", "b"]
