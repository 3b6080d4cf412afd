"""A metric registry with Kafka/Yammer semantics, and no Prometheus in sight.

Metrics are named like Kafka's MBeans: (domain, type, name, tags), e.g.
``MetricName("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", (("topic", "orders"),))``. The tags keep
their insertion order (as ``KafkaMetricsGroup`` does) and empty tag values are dropped.

Kinds:
* :class:`Meter`: cumulative count, mean rate, and Yammer's 1/5/15-minute EWMA rates (5 s tick).
* :class:`Gauge`: a callable read at scrape time; :class:`GaugeFamily` reads many tagged values with one callable
  (per-partition log gauges), so thousands of partitions cost no registration or cleanup.
* :class:`exporter.timer.Timer`: HdrHistogram-backed latencies (see that module).
* :class:`KafkaMetric`: the ``org.apache.kafka.common.metrics`` style (no ``name=`` key; the attribute is the metric,
  e.g. ``socket-server-metrics`` ``connection-count``).

Time comes from an injected clock (anything with ``monotonic() -> seconds``). Meters and timers advance on
:meth:`Registry.tick`, which the owner calls periodically and which every read path calls first: like Yammer 2.2's
tick thread, recording itself never looks at the clock, so the hot path is an integer add.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from common.clock import SYSTEM, Clock

TICK_INTERVAL_S = 5.0
_M1_ALPHA = 1 - math.exp(-TICK_INTERVAL_S / 60.0 / 1)
_M5_ALPHA = 1 - math.exp(-TICK_INTERVAL_S / 60.0 / 5)
_M15_ALPHA = 1 - math.exp(-TICK_INTERVAL_S / 60.0 / 15)

Tags = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class MetricName:
    """An MBean-style name: ``<domain>:type=<type>,name=<name>[,k=v...]``."""

    domain: str
    type: str
    name: str
    tags: Tags = ()

    @staticmethod
    def of(domain: str, type_: str, name: str, **tags: object) -> MetricName:
        return MetricName(domain, type_, name, tuple((k, str(v)) for k, v in tags.items() if v not in (None, "")))

    @property
    def mbean(self) -> str:
        extra = "".join(f",{k}={v}" for k, v in self.tags)
        return f"{self.domain}:type={self.type},name={self.name}{extra}"


class EWMA:
    """Yammer's exponentially weighted moving average, ticked every 5 s (rates in events per second)."""

    __slots__ = ("alpha", "rate", "initialized")

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha
        self.rate = 0.0
        self.initialized = False

    def tick(self, count: int | float, ticks: int = 1) -> None:
        """One tick that saw `count` events, followed by `ticks - 1` empty ticks (closed form)."""
        instant = count / TICK_INTERVAL_S
        if self.initialized:
            self.rate += self.alpha * (instant - self.rate)
        else:
            self.rate = instant
            self.initialized = True
        if ticks > 1:
            self.rate *= (1 - self.alpha) ** (ticks - 1)


class Meter:
    """Yammer Meter: ``Count``, ``MeanRate``, ``OneMinuteRate``, ``FiveMinuteRate``, ``FifteenMinuteRate``.

    `scale` converts marked units into the rate unit: Kafka's RequestHandlerAvgIdlePercent is marked in idle
    nanoseconds with a nanosecond rate unit, i.e. ``scale=1e-9`` makes its rates read as an idle fraction.
    """

    kind = "meter"
    __slots__ = ("count", "_uncounted", "_start", "m1", "m5", "m15", "scale", "_clock")

    def __init__(self, clock: Clock, scale: float = 1.0) -> None:
        self.count = 0
        self._uncounted = 0
        self._clock = clock
        self._start = clock.monotonic()
        self.m1, self.m5, self.m15 = EWMA(_M1_ALPHA), EWMA(_M5_ALPHA), EWMA(_M15_ALPHA)
        self.scale = scale

    def mark(self, n: int = 1) -> None:
        self.count += n
        self._uncounted += n

    def _tick(self, ticks: int) -> None:
        n, self._uncounted = self._uncounted, 0
        self.m1.tick(n, ticks)
        self.m5.tick(n, ticks)
        self.m15.tick(n, ticks)

    @property
    def mean_rate(self) -> float:
        if self.count == 0:
            return 0.0
        elapsed = self._clock.monotonic() - self._start
        return self.count / elapsed * self.scale if elapsed > 0 else 0.0

    @property
    def one_minute_rate(self) -> float:
        return self.m1.rate * self.scale

    @property
    def five_minute_rate(self) -> float:
        return self.m5.rate * self.scale

    @property
    def fifteen_minute_rate(self) -> float:
        return self.m15.rate * self.scale


class Gauge:
    kind = "gauge"
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], float]) -> None:
        self.fn = fn

    @property
    def value(self) -> float:
        return self.fn()


class Columns:
    """A gauge family's rows as two columns, what a family's callable may return instead of ``(tags, value)``
    pairs (it still iterates as those pairs). Why: at 10,000 partitions making and freeing a pair per row was a
    fifth of a scrape; and a producer that hands out the same `tags` tuple while its rows are the same ones
    lets the exporter see that by identity instead of comparing 10,000 tag tuples."""

    __slots__ = ("tags", "values")

    def __init__(self, tags: tuple[Tags, ...], values: Sequence[float]) -> None:
        if len(tags) != len(values):
            raise ValueError(f"{len(tags)} tags for {len(values)} values")
        self.tags = tags
        self.values = values

    def __iter__(self) -> Iterator[tuple[Tags, float]]:
        return zip(self.tags, self.values, strict=True)


class GaugeFamily:
    """Many gauges of one (domain, type, name) read by one callable yielding ``(tags, value)`` (or returning
    :class:`Columns`)."""

    kind = "gauge_family"
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Iterable[tuple[Tags, float]] | Columns]) -> None:
        self.fn = fn


class SampledRate:
    """Kafka's ``Rate`` over a ``SampledStat`` of sums (common.metrics): `samples` windows of `window_s` each, a
    window closed once it is `window_s` old at a record, windows older than all of them reset at a read. The rate
    divides by the elapsed time since the oldest window began, taken as at least `samples` - 1 full windows, as
    Kafka's ``Rate.windowSize`` (client quotas throttle by that same window). Times are the clock's monotonic
    seconds; `record_at` and `measure` take one explicitly (the quota managers' one time per request)."""

    __slots__ = ("_clock", "_window", "_samples", "_starts", "_sums", "_current", "total")

    def __init__(self, clock: Clock, window_s: float = 30.0, samples: int = 2) -> None:
        self._clock = clock
        self._window = window_s
        self._samples = samples
        self._starts: list[float] = []
        self._sums: list[float] = []
        self._current = 0
        self.total = 0.0

    def record(self, n: float = 1.0) -> None:
        self.record_at(n, self._clock.monotonic())

    def record_at(self, n: float, now: float) -> None:
        if not self._starts:
            self._starts.append(now)
            self._sums.append(0.0)
        elif now - self._starts[self._current] >= self._window:   # the current window is complete: advance
            self._current = (self._current + 1) % self._samples
            if self._current >= len(self._starts):
                self._starts.append(now)
                self._sums.append(0.0)
            else:
                self._starts[self._current], self._sums[self._current] = now, 0.0
        self._sums[self._current] += n
        self.total += n

    def _purge(self, now: float) -> None:
        expire = self._samples * self._window
        for i, start in enumerate(self._starts):
            if now - start >= expire:
                self._starts[i], self._sums[i] = now, 0.0

    def window_size(self, now: float) -> float:
        """Rate.windowSize: seconds since the oldest window began, at least `samples` - 1 full windows."""
        self._purge(now)
        elapsed = now - min(self._starts, default=now)
        full = int(elapsed // self._window)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window
        return max(elapsed, 0.001)   # Kafka's floor of 1 ms

    def measure(self, now: float) -> float:
        self._purge(now)
        return sum(self._sums) / self.window_size(now)

    @property
    def rate(self) -> float:
        return self.measure(self._clock.monotonic())


class SimpleRate(SampledRate):
    """Kafka's ``SimpleRate``: the same windows, divided by the time since the oldest window began, taken as at
    least one window (not `samples` - 1). The replication throttles measure their byte rate with it."""

    __slots__ = ()

    def window_size(self, now: float) -> float:
        self._purge(now)
        return max(now - min(self._starts, default=now), self._window)


class SampledMaxAvg:
    """Kafka's ``Max`` and ``Avg`` stats (common.metrics) over the same windows as `SampledRate`: the largest and
    the mean of the values recorded in the last `samples` × `window_s`; both NaN when none was, as Kafka's."""

    __slots__ = ("_clock", "_window", "_samples", "_values")

    def __init__(self, clock: Clock, window_s: float = 30.0, samples: int = 2) -> None:
        self._clock = clock
        self._window = window_s
        self._samples = samples
        self._values: list[tuple[float, float]] = []  # (time recorded, value)

    def record(self, value: float) -> None:
        now = self._clock.monotonic()
        self._values.append((now, value))
        horizon = now - self._samples * self._window
        while self._values and self._values[0][0] < horizon:
            del self._values[0]

    def _recent(self) -> list[float]:
        horizon = self._clock.monotonic() - self._samples * self._window
        return [v for t, v in self._values if t >= horizon]

    @property
    def max(self) -> float:
        return max(self._recent(), default=float("nan"))

    @property
    def avg(self) -> float:
        recent = self._recent()
        return sum(recent) / len(recent) if recent else float("nan")


class KafkaMetric:
    """A ``common.metrics``-style attribute; `read` returns its current value, `counter` marks ``*-total``."""

    kind = "kafka_metric"
    __slots__ = ("read", "counter")

    def __init__(self, read: Callable[[], float], counter: bool = False) -> None:
        self.read = read
        self.counter = counter


@dataclass
class RawSample:
    suffix: str
    labels: dict[str, str]
    value: float


@dataclass
class RawFamily:
    """A series family named outside the MBean scheme (process and Python runtime metrics)."""

    name: str
    type: str  # "gauge" | "counter" | "summary"
    help: str
    samples: list[RawSample]


class Registry:
    """Get-or-create registry. Not thread-safe by design: the broker records and scrapes on its event loop."""

    def __init__(self, clock: Clock | None = None, window_s: float = 60.0, intervals: int = 6) -> None:
        self.clock: Clock = clock or SYSTEM
        self.window_s = window_s
        self.intervals = intervals
        self._metrics: dict[MetricName, object] = {}
        self._meters: list[Meter] = []
        self._timers: list = []
        self._raw: list[Callable[[], Iterable[RawFamily]]] = []
        self._interval_listeners: list[Callable[[float, float], None]] = []
        self._before_read: list[Callable[[], Iterator[None]]] = []
        self._reads = 0                 # reads of every metric in progress (`reading`)
        start = self.clock.monotonic()
        self._last_tick = start
        self._origin = start            # interval i of the timers' windows starts at origin + i * interval
        self._listened = 0              # the interval index the interval listeners were last called at
        self.lock = threading.RLock()  # for scrapes from another thread, if an owner wants that

    # ------------------------------------------------------------ definition

    def _get(self, name: MetricName, factory: Callable[[], object], kind: str) -> object:
        m = self._metrics.get(name)
        if m is None:
            m = factory()
            self._metrics[name] = m
        elif m.kind != kind:  # type: ignore[attr-defined]
            raise ValueError(f"{name.mbean} already registered as a {m.kind}")  # type: ignore[attr-defined]
        return m

    def meter(self, domain: str, type_: str, name: str, scale: float = 1.0, **tags: object) -> Meter:
        def make() -> Meter:
            m = Meter(self.clock, scale)
            self._meters.append(m)
            return m

        return self._get(MetricName.of(domain, type_, name, **tags), make, "meter")  # type: ignore[return-value]

    def gauge(self, domain: str, type_: str, name: str, fn: Callable[[], float], **tags: object) -> Gauge:
        key = MetricName.of(domain, type_, name, **tags)
        g = self._get(key, lambda: Gauge(fn), "gauge")
        g.fn = fn  # type: ignore[attr-defined]  # re-registration replaces the callable
        return g  # type: ignore[return-value]

    def gauge_family(self, domain: str, type_: str, name: str,
                     fn: Callable[[], Iterable[tuple[Tags, float]] | Columns]) -> GaugeFamily:
        key = MetricName(domain, type_, name)
        g = self._get(key, lambda: GaugeFamily(fn), "gauge_family")
        g.fn = fn  # type: ignore[attr-defined]
        return g  # type: ignore[return-value]

    def timer(self, domain: str, type_: str, name: str, **tags: object):
        """A Yammer Timer: the Histogram attributes plus a Meter's (``Count``, ``MeanRate``, ``*MinuteRate``)."""
        return self._timer(domain, type_, name, True, tags)

    def histogram(self, domain: str, type_: str, name: str, **tags: object):
        """A Yammer Histogram (Kafka's ``RequestMetrics`` ``*TimeMs``): ``Count``, ``Min``..``StdDev``, percentiles."""
        return self._timer(domain, type_, name, False, tags)

    def _timer(self, domain: str, type_: str, name: str, rates: bool, tags: dict):
        from exporter.timer import Timer

        def make() -> Timer:
            t = Timer(self.intervals)
            t.interval_index = self._interval_index(self.clock.monotonic())
            if rates:
                meter = t.meter = Meter(self.clock)
                self._meters.append(meter)
            self._timers.append(t)
            return t

        return self._get(MetricName.of(domain, type_, name, **tags), make, "timer")

    def kafka_metric(self, domain: str, type_: str, attribute: str, read: Callable[[], float],
                     counter: bool = False, **tags: object) -> KafkaMetric:
        key = MetricName.of(domain, type_, attribute, **tags)
        m = self._get(key, lambda: KafkaMetric(read, counter), "kafka_metric")
        m.read, m.counter = read, counter  # type: ignore[attr-defined]
        return m  # type: ignore[return-value]

    def raw(self, fn: Callable[[], Iterable[RawFamily]]) -> None:
        self._raw.append(fn)

    def remove(self, name: MetricName) -> None:
        m = self._metrics.pop(name, None)
        if isinstance(m, Meter):
            self._meters.remove(m)
        elif m is not None and getattr(m, "kind", "") == "timer":
            self._timers.remove(m)
            if m.meter is not None:  # type: ignore[attr-defined]
                self._meters.remove(m.meter)  # type: ignore[attr-defined]

    def on_interval(self, fn: Callable[[float, float], None]) -> None:
        """Call `fn(start, end)` (monotonic seconds) after each completed timer interval."""
        self._interval_listeners.append(fn)

    def before_read(self, steps: Callable[[], Iterator[None]]) -> None:
        """`steps()` runs (in steps) before each read of the whole registry (`read_steps`): what a gauge family's
        rows need made first, when making them at once would hold a broker's loop (a per-partition snapshot at
        10,000 partitions takes tens of milliseconds). The family's callable reads what it made."""
        self._before_read.append(steps)

    # ------------------------------------------------------------ time

    def tick(self) -> None:
        """Advance meters (5 s ticks) and timer windows (interval rotation) to the clock's now."""
        for _ in self.tick_steps():
            pass

    def tick_steps(self) -> Iterator[None]:
        """`tick` in steps: it yields after each timer it drained or rotated, so that an event loop can serve between
        them. Whole, a tick at a few thousand requests a second holds the loop for several milliseconds, and several
        times that when an interval leaves the windows. A read's `tick` between two steps finishes the work, and the
        later steps find it done."""
        now = self.clock.monotonic()
        for t in self._timers:
            if t.meter is not None and t.count != t.meter.count:
                t.meter.mark(t.count - t.meter.count)  # a Timer's meter counts its updates (no hot-path cost)
        ticks = int((now - self._last_tick) // TICK_INTERVAL_S)
        if ticks > 0:
            self._last_tick += ticks * TICK_INTERVAL_S
            for m in self._meters:
                m._tick(ticks)
        index = self._interval_index(now)
        for t in list(self._timers):   # a copy: timers may come and go between steps
            if t.rotate_to(index) or t.drain():
                yield
        if index > self._listened:
            interval = self.window_s / self.intervals
            ended = self._origin + (self._listened + 1) * interval
            self._listened = index
            for fn in self._interval_listeners:
                fn(ended - interval, ended)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A read of every metric in progress, from its `read_steps` to its last gauge: what the before-read work
        made is what the gauges read, however long a stepped read takes on a busy loop."""
        self._reads += 1
        try:
            yield
        finally:
            self._reads -= 1

    @property
    def in_read(self) -> bool:
        return self._reads > 0

    def read_steps(self) -> Iterator[None]:
        """What a read of every metric needs first, in steps: the tick's, then the `before_read` work."""
        yield from self.tick_steps()
        for steps in list(self._before_read):
            yield from steps()

    def _interval_index(self, now: float) -> int:
        return int((now - self._origin) // (self.window_s / self.intervals))

    # ------------------------------------------------------------ reading

    def items(self) -> Iterator[tuple[MetricName, object]]:
        return iter(list(self._metrics.items()))

    def raw_families(self) -> Iterator[RawFamily]:
        for fn in self._raw:
            yield from fn()

    def get(self, name: MetricName) -> object | None:
        return self._metrics.get(name)
